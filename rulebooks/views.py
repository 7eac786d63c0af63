"""The Rulebooks pages: upload and compile, errors shown in the source, versions and comparison."""

from __future__ import annotations

import difflib
import json

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from console.access import actor_for_request, get_object_for_actor, require
from rulebooks import services
from rulebooks.models import Rulebook, RulebookVersion


def source_lines(text: str, errors: list[dict]) -> list[dict]:
    """The source, line by line, each with the errors located on it."""
    by_line: dict[int, list[dict]] = {}
    for error in errors:
        if error.get("line") and not error.get("field"):
            caret = " " * (error["column"] - 1) + "^ " if error.get("column") else ""
            by_line.setdefault(error["line"], []).append({**error, "caret": caret})
    return [
        {"number": n, "text": line, "errors": by_line.get(n, [])}
        for n, line in enumerate(text.splitlines(), start=1)
    ]


def _list_context(actor, **extra) -> dict:  # noqa: ANN001
    rulebooks = Rulebook.objects.filter(organisation=actor.organisation).order_by("name")
    return {
        "rulebooks": rulebooks,
        "records_only": services.records_only(actor.organisation),
        **extra,
    }


@require_http_methods(["GET", "POST"])
def rulebooks_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "rulebooks.read")
    if request.method == "GET":
        return render(request, "rulebooks/list.html", _list_context(actor))
    require(actor, "rulebooks.write")
    upload = request.FILES.get("file")
    name = request.POST.get("name", "").strip()
    if upload is None:
        return render(
            request,
            "rulebooks/list.html",
            _list_context(
                actor,
                form_errors={"file": ["choose a .co file, a rule sheet or a record"]},
                posted=request.POST,
            ),
            status=400,
        )
    data = upload.read(services.MAX_UPLOAD_BYTES + 1)
    try:
        version = services.rulebook_upload(
            actor=actor,
            name=name or upload.name.rsplit(".", 1)[0],
            data=data,
            filename=upload.name,
            colang_version=request.POST.get("colang_version") or None,
        )
    except services.Rejected as exc:
        text = (
            data.decode("utf-8", errors="replace")
            if upload.name.lower().endswith((".co", ".csv"))
            else ""
        )
        return render(
            request,
            "rulebooks/list.html",
            _list_context(
                actor,
                rejected=exc,
                filename=upload.name,
                posted=request.POST,
                lines=source_lines(text, exc.errors),
            ),
            status=400,
        )
    except ValidationError as exc:
        return render(
            request,
            "rulebooks/list.html",
            _list_context(actor, form_errors=exc.message_dict, posted=request.POST),
            status=400,
        )
    return redirect("rulebook-version", rulebook_id=version.rulebook_id, number=version.number)


def _version(actor, rulebook_id: int, number: int) -> RulebookVersion:  # noqa: ANN001
    rulebook = get_object_for_actor(Rulebook, actor, pk=rulebook_id)
    version = rulebook.versions.filter(number=number).first()
    if version is None:
        raise Http404("no such version")
    return version


@require_GET
def rulebook_page(request: HttpRequest, rulebook_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "rulebooks.read")
    rulebook = get_object_for_actor(Rulebook, actor, pk=rulebook_id)
    latest = rulebook.latest
    if latest is None:
        raise Http404("no version")
    return redirect("rulebook-version", rulebook_id=rulebook.pk, number=latest.number)


@require_GET
def version_page(request: HttpRequest, rulebook_id: int, number: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "rulebooks.read")
    version = _version(actor, rulebook_id, number)
    text = (
        bytes(version.source).decode("utf-8", errors="replace")
        if version.filename.lower().endswith((".co", ".csv"))
        else ""
    )
    return render(
        request,
        "rulebooks/version.html",
        {
            "version": version,
            "rulebook": version.rulebook,
            "versions": version.rulebook.versions.order_by("-number"),
            "summary": services.record_summary(version.record),
            "lines": source_lines(text, []),
            "record_json": json.dumps(version.record, indent=2, sort_keys=True),
        },
    )


@require_GET
def record_download(request: HttpRequest, rulebook_id: int, number: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "rulebooks.read")
    version = _version(actor, rulebook_id, number)
    response = HttpResponse(
        json.dumps(version.record, indent=2, sort_keys=True), content_type="application/json"
    )
    # The name reduced to characters safe in a header, as a firewall policy's export is named.
    stem = "".join(
        c if c.isascii() and (c.isalnum() or c in "-_.") else "-" for c in version.rulebook.name
    ).strip("-.")
    stem = stem or f"rulebook-{version.rulebook_id}"
    response["Content-Disposition"] = f'attachment; filename="{stem}-v{version.number}.record.json"'
    return response


def _summary_lines(summary: dict) -> list[str]:
    lines = []
    for tool in summary["tools"]:
        lines.append(
            f"tool {tool['tool']}: flows {', '.join(tool['flows']) or '-'}; "
            f"facts {', '.join(tool['facts']) or '-'}"
        )
        lines += [f"  if {c['condition']} (line {c['line']})" for c in tool["conditions"]]
        for row in tool["rows"]:
            limit = f" (at most {row['at_most']} per {row['per']})" if row["at_most"] else ""
            when = row["condition"] or "always"
            lines.append(f"  row {row['row']}: {row['decision']} when {when}{limit}")
    return lines


#: Longest side compared line by line. difflib's matcher is quadratic when the lines repeat often
#: but not often enough to be set aside (150 lines each 130 times in 20,000: 36 s of CPU, where a
#: gunicorn worker is killed at 60); at 5,000 lines the worst measured was under 3 s.
MAX_COMPARE_LINES = 5_000


def _diff(old: list[str], new: list[str], old_name: str, new_name: str) -> list[str] | None:
    """The unified diff of two texts' lines, or None when one is too long to compare here."""
    if max(len(old), len(new)) > MAX_COMPARE_LINES:
        return None
    return list(difflib.unified_diff(old, new, old_name, new_name, lineterm=""))


@require_GET
def compare_page(request: HttpRequest, rulebook_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "rulebooks.read")
    try:
        a, b = int(request.GET.get("a", "")), int(request.GET.get("b", ""))
    except ValueError:
        rulebook = get_object_for_actor(Rulebook, actor, pk=rulebook_id)
        return render(
            request,
            "rulebooks/compare.html",
            {
                "rulebook": rulebook,
                "error": "choose two versions to compare",
                "versions": rulebook.versions.all(),
            },
            status=400,
        )
    old, new = _version(actor, rulebook_id, a), _version(actor, rulebook_id, b)

    def text(v: RulebookVersion) -> list[str]:
        raw = bytes(v.source)
        return (
            raw.decode("utf-8", errors="replace")
            if raw
            else json.dumps(v.record, indent=2, sort_keys=True)
        ).splitlines()

    source_diff = _diff(text(old), text(new), f"v{a} {old.filename}", f"v{b} {new.filename}")
    summary_diff = _diff(
        _summary_lines(services.record_summary(old.record)),
        _summary_lines(services.record_summary(new.record)),
        f"v{a}",
        f"v{b}",
    )
    return render(
        request,
        "rulebooks/compare.html",
        {
            "rulebook": old.rulebook,
            "old": old,
            "new": new,
            "versions": old.rulebook.versions.all(),
            "source_diff": source_diff,
            "summary_diff": summary_diff,
            "max_lines": MAX_COMPARE_LINES,
        },
    )
