// The console's few behaviours that need a script: the small-screen menu, focus on the first
// error of a refused form (after a full page load and after htmx swaps one in), a press on Save
// that a field's live check must not move away, and reordering the rules table by drag or by
// keyboard.
(function () {
  // A refused form names its fields in `data-invalid` (a JSON list of names or error paths:
  // `name`, `clause-0-value`, `catalogue.tools[0].name`): each control found is marked
  // aria-invalid, an exact name first, else the path's first part.
  function markInvalid(root) {
    root.querySelectorAll("form[data-invalid]").forEach(function (form) {
      var names = [];
      try { names = JSON.parse(form.dataset.invalid) || []; } catch (e) { names = []; }
      names.forEach(function (name) {
        var head = String(name).split(/[.\[]/)[0];
        var found = null;
        [name, head].some(function (n) {
          found = form.querySelector('[name="' + String(n).replace(/"/g, "") + '"]');
          return found;
        });
        if (found) {
          found.setAttribute("aria-invalid", "true");
          var folded = found.closest("details");
          if (folded) { folded.open = true; }  // a field folded away is shown to be fixed
        }
      });
    });
  }
  function focusFirstError(root) {
    markInvalid(document);
    var invalid = root.querySelector('[aria-invalid="true"]');
    if (invalid) { invalid.focus(); return; }
    var alert = root.querySelector('form .error[role="alert"], #rule-errors, #import-errors');
    if (alert) { alert.setAttribute("tabindex", "-1"); alert.focus(); }
  }
  // The rules table: a rule dragged by its handle, or moved with the arrow keys on the handle,
  // is posted as its new place (`to`); the server answers the table again, saying what changed.
  var dragged = null;
  function place(row, to) {
    if (!row || !window.htmx || to < 0) { return; }
    window.htmx.ajax("POST", row.dataset.moveUrl, {
      source: row, target: "#rule-table", swap: "outerHTML", values: {to: String(to)}
    });
  }
  function rowOf(node) { return node && node.closest ? node.closest("#rules-sortable tr.rule-row") : null; }
  document.addEventListener("dragstart", function (event) {
    var row = rowOf(event.target);
    if (!row || !event.target.classList.contains("drag-handle")) { return; }
    dragged = row;
    row.classList.add("dragging");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", row.dataset.ruleId);
  });
  document.addEventListener("dragover", function (event) {
    if (dragged && rowOf(event.target)) { event.preventDefault(); }
  });
  document.addEventListener("drop", function (event) {
    var target = rowOf(event.target);
    if (!dragged || !target) { return; }
    event.preventDefault();
    var from = Number(dragged.dataset.index), to = Number(target.dataset.index);
    if (from !== to) { place(dragged, to); }
  });
  document.addEventListener("dragend", function () {
    if (dragged) { dragged.classList.remove("dragging"); }
    dragged = null;
  });
  document.addEventListener("keydown", function (event) {
    var handle = event.target;
    if (!handle.classList || !handle.classList.contains("drag-handle")) { return; }
    if (event.key !== "ArrowUp" && event.key !== "ArrowDown") { return; }
    event.preventDefault();
    var row = rowOf(handle);
    var to = Number(row.dataset.index) + (event.key === "ArrowUp" ? -1 : 1);
    var count = document.querySelectorAll("#rules-sortable tr.rule-row").length;
    if (to >= 0 && to < count) { place(row, to); }
  });
  document.addEventListener("htmx:afterSettle", function () {
    var moved = document.querySelector('#rule-table .drag-handle[data-moved="true"]');
    if (moved) { moved.focus(); }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.getElementById("menu-toggle");
    if (toggle) {
      toggle.addEventListener("click", function () {
        var open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        document.body.classList.toggle("menu-open", open);
      });
    }
    focusFirstError(document);
  });
  // A press on a form's submit button blurs the field being edited, whose `change` starts the
  // form's live check (`data-live-check`). Its answer, an error shown or cleared above the
  // button, can move the button before the press ends, and then the click, and the submit, are
  // lost. From the press until the form is submitted (or for 2 s), the live check is not sent:
  // the submit checks every field anyway.
  document.addEventListener("pointerdown", function (event) {
    var button = event.target.closest && event.target.closest('button, input[type="submit"]');
    if (button && button.form && button.type === "submit") {
      button.form.dataset.submitting = String(Date.now());
    }
  }, true);
  document.addEventListener("submit", function (event) {
    if (event.target.dataset) { delete event.target.dataset.submitting; }
  }, true);
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-live-check")) { return; }
    var form = elt.closest("form");
    var since = Number((form && form.dataset.submitting) || 0);
    if (since && Date.now() - since < 2000) { event.preventDefault(); }
  });
  // After a refused submit only (not a field's live check, which would pull focus from the field
  // being typed in). The form is swapped whole (outerHTML), so the old target is gone from the
  // page: look in the document, where the new form now is.
  document.addEventListener("htmx:afterSettle", function (event) {
    var status = event.detail.xhr && event.detail.xhr.status;
    var config = event.detail.requestConfig || {};
    var trigger = config.triggeringEvent;
    var submitted = (trigger && trigger.type === "submit") || (config.elt && config.elt.tagName === "FORM");
    if (status >= 400 && status < 500 && submitted) { focusFirstError(document.querySelector("main") || document); }
  });
})();
