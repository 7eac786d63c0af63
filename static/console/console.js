// The console's few behaviours that need a script: the small-screen menu, and focus on the first
// error of a refused form (after a full page load and after htmx swaps one in).
(function () {
  function focusFirstError(root) {
    var invalid = root.querySelector('[aria-invalid="true"]');
    if (invalid) { invalid.focus(); return; }
    var alert = root.querySelector('form .error[role="alert"], #rule-errors, #import-errors');
    if (alert) { alert.setAttribute("tabindex", "-1"); alert.focus(); }
  }
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
  document.addEventListener("htmx:afterSwap", function (event) {
    var status = event.detail.xhr && event.detail.xhr.status;
    if (status >= 400 && status < 500) { focusFirstError(event.detail.target || document); }
  });
})();
