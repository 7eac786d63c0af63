"""The Rulebooks pages and API: compile keeping nothing, upload versions, errors in the source."""

from __future__ import annotations

import base64
import io
import json

import pytest

from console.models import AuditRow, OrganisationSettings
from rulebooks.models import Rulebook, RulebookVersion

pytestmark = pytest.mark.django_db

SHOP = """define user ask refund
  "estorne o pedido 4411"
  "devolva o dinheiro do cliente"

define flow refunds
  user ask refund
  if $order_paid
    execute refund_card
  else
    bot refuse
"""
BROKEN = SHOP.replace("  if $order_paid", "  goto somewhere\n  if $order_paid")
SHEET = (
    "tool,condition,decision,reason,at_most,per\n"
    "refund_card,amount > 100,confirm,refunds above 100 need a manager,,\n"
    "refund_card,,,,3,day\n"
)


def _json(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def test_compile_returns_the_record_and_keeps_nothing(editor, client_for):
    response = _json(
        client_for(editor), "/v1/rulebooks/compile", {"source": SHOP, "filename": "policy.co"}
    )
    assert response.status_code == 200, response.content
    record = response.json()
    assert record["format"] == "colang-1.0"
    assert list(record["tools"]) == ["refund_card"]
    assert not Rulebook.objects.exists() and not AuditRow.objects.exists()


def test_compile_refuses_with_the_line_and_the_construct(editor, client_for):
    response = _json(
        client_for(editor), "/v1/rulebooks/compile", {"source": BROKEN, "filename": "policy.co"}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "rulebook_unsupported"
    assert body["errors"][0]["line"] == 7
    assert "goto" in body["errors"][0]["message"] + str(body["errors"][0]["construct"])
    assert "goto somewhere" in body["rendered"][0]


def test_rule_sheets_compile_from_csv_and_xlsx(editor, client_for):
    import openpyxl

    client = client_for(editor)
    csv_body = _json(
        client, "/v1/rule-sheets/compile", {"filename": "rules.csv", "source": SHEET}
    ).json()
    rows = csv_body["tools"]["refund_card"]["rules"]
    assert [r["decision"] for r in rows] == ["confirm", "refuse"]
    book = openpyxl.Workbook()
    for row in [line.split(",") for line in SHEET.strip().splitlines()]:
        book.active.append([int(c) if c.isdigit() else (c or None) for c in row])
    buffer = io.BytesIO()
    book.save(buffer)
    xlsx = client.post("/v1/rule-sheets/compile", {"file": _named(buffer.getvalue(), "rules.xlsx")})
    assert xlsx.status_code == 200, xlsx.content
    assert xlsx.json()["tools"]["refund_card"]["rules"][0]["reason"] == (
        "refunds above 100 need a manager"
    )
    not_a_sheet = _json(
        client, "/v1/rule-sheets/compile", {"filename": "policy.co", "source": SHOP}
    )
    assert not_a_sheet.status_code == 400


def _named(data: bytes, name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)


def test_a_records_only_organisation_refuses_sources_and_takes_records(
    editor, organisation, client_for
):
    client = client_for(editor)
    record = _json(client, "/v1/rulebooks/compile", {"source": SHOP}).json()
    OrganisationSettings.objects.filter(organisation=organisation).update(
        compiled_records_only=True
    )
    refused = _json(client, "/v1/rulebooks/compile", {"source": SHOP})
    assert refused.status_code == 400
    assert refused.json()["code"] == "policy_input_refused"
    taken = client.post(
        "/v1/rulebooks",
        {"name": "shop", "file": _named(json.dumps(record).encode(), "record.json")},
    )
    assert taken.status_code == 201, taken.content
    assert RulebookVersion.objects.get().source == b""


def test_an_edited_record_is_refused(editor, client_for):
    client = client_for(editor)
    record = _json(client, "/v1/rulebooks/compile", {"source": SHOP}).json()
    record["tools"] = "everything"
    response = _json(
        client, "/v1/rulebooks/compile", {"filename": "record.json", "source": json.dumps(record)}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "rulebook_record_invalid"


def test_uploads_become_versions_with_an_audit_row_that_never_copies_the_source(
    editor, organisation, client_for
):
    client = client_for(editor)
    for text in (SHOP, SHOP.replace("4411", "4412")):
        response = client.post(
            "/v1/rulebooks", {"name": "shop", "file": _named(text.encode(), "policy.co")}
        )
        assert response.status_code == 201, response.content
    versions = list(RulebookVersion.objects.order_by("number"))
    assert [v.number for v in versions] == [1, 2]
    assert versions[0].sha256 != versions[1].sha256
    rows = AuditRow.objects.filter(action="rulebook.upload").order_by("seq")
    assert [r.changes["version"]["new"] for r in rows] == [1, 2]
    assert all(r.changes["source"] == {"redacted": True} for r in rows)
    assert "estorne" not in json.dumps([r.changes for r in rows])
    assert rows[0].changes["sha256"]["new"] == versions[0].sha256


def test_a_refused_upload_stores_nothing(editor, client_for):
    response = client_for(editor).post(
        "/v1/rulebooks", {"name": "shop", "file": _named(BROKEN.encode(), "policy.co")}
    )
    assert response.status_code == 400
    assert not Rulebook.objects.exists() and not AuditRow.objects.exists()


def test_the_page_highlights_the_lines_in_error(editor, client_for):
    response = client_for(editor).post(
        "/rulebooks/", {"name": "shop", "file": _named(BROKEN.encode(), "policy.co")}
    )
    assert response.status_code == 400
    content = response.content.decode()
    assert 'class="src-line src-error" id="L7"' in content
    assert 'class="src-line" id="L6"' in content
    assert not Rulebook.objects.exists()


def test_the_version_page_shows_the_governed_tools_and_compare(editor, client_for):
    client = client_for(editor)
    client.post("/rulebooks/", {"name": "shop", "file": _named(SHOP.encode(), "policy.co")})
    second = client.post(
        "/rulebooks/",
        {
            "name": "shop",
            "file": _named(
                SHOP.replace(
                    "execute refund_card", "execute refund_card\n    execute send_receipt"
                ).encode(),
                "policy.co",
            ),
        },
    )
    assert second.status_code == 302
    page = client.get(second["Location"])
    assert b'data-tool="refund_card"' in page.content
    assert b'data-tool="send_receipt"' in page.content
    assert b"$order_paid" in page.content
    rulebook = Rulebook.objects.get()
    diff = client.get(f"/rulebooks/{rulebook.pk}/compare", {"a": 1, "b": 2})
    assert b"+tool send_receipt" in diff.content
    assert b"+    execute send_receipt" in diff.content
    assert client.get(f"/rulebooks/{rulebook.pk}/compare", {"a": "x"}).status_code == 400


def test_roles_and_tenancy(editor, auditor, outsider, client_for):
    client = client_for(editor)
    client.post("/v1/rulebooks", {"name": "shop", "file": _named(SHOP.encode(), "policy.co")})
    rulebook = Rulebook.objects.get()
    audit = client_for(auditor)
    assert audit.get(f"/rulebooks/{rulebook.pk}/v/1/").status_code == 200
    assert (
        audit.post(
            "/v1/rulebooks", {"name": "x", "file": _named(SHOP.encode(), "a.co")}
        ).status_code
        == 403
    )
    other = client_for(outsider)
    assert other.get(f"/rulebooks/{rulebook.pk}/v/1/").status_code == 404
    assert other.get(f"/v1/rulebooks/{rulebook.pk}/versions/1").status_code == 404


def test_a_bad_upload_request_names_its_field(editor, client_for):
    client = client_for(editor)
    assert "source" in _json(client, "/v1/rulebooks/compile", {"filename": "a.co"}).json()
    bad = _json(client, "/v1/rule-sheets/compile", {"filename": "r.xlsx", "content_base64": "%%"})
    assert "content_base64" in bad.json()
    odd = _json(client, "/v1/rulebooks/compile", {"filename": "a.txt", "source": "x"})
    assert odd.status_code == 400 and "not a rulebook file" in odd.json()["errors"][0]["message"]
    ok = _json(
        client,
        "/v1/rule-sheets/compile",
        {"filename": "r.csv", "content_base64": base64.b64encode(SHEET.encode()).decode()},
    )
    assert ok.status_code == 200


@pytest.mark.parametrize("name", ["shop\x00", 'shop"\r\nX-Evil: 1', "sh\nop"])
def test_a_rulebook_name_with_a_control_character_is_refused_by_name(name, editor, client_for):
    client = client_for(editor)
    page = client.post("/rulebooks/", {"name": name, "file": _named(SHOP.encode(), "policy.co")})
    assert page.status_code == 400
    assert b"must not contain control characters" in page.content
    api = client.post("/v1/rulebooks", {"name": name, "file": _named(SHOP.encode(), "policy.co")})
    assert api.status_code == 400
    assert "name" in api.json()
    assert not Rulebook.objects.exists()


def test_the_record_download_names_its_file_with_characters_safe_in_a_header(editor, client_for):
    client = client_for(editor)
    client.post("/rulebooks/", {"name": 'shop "a/b" ç', "file": _named(SHOP.encode(), "a.co")})
    rulebook = Rulebook.objects.get()
    response = client.get(f"/rulebooks/{rulebook.pk}/v/1/record.json")
    assert response["Content-Disposition"] == 'attachment; filename="shop--a-b-v1.record.json"'
    # a name kept before control characters were refused
    Rulebook.objects.filter(pk=rulebook.pk).update(name="sh\r\nop")
    response = client.get(f"/rulebooks/{rulebook.pk}/v/1/record.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="sh--op-v1.record.json"'


def _many_flows(step: int, flows: int = 1800) -> bytes:
    """A Colang file of about 20,000 lines drawn from 150 distinct ones: each too rare for
    difflib to set aside as junk, which makes comparing two of them quadratic."""
    lines, k = ["define user ask refund", '  "refund my order"', ""], 0
    for flow in range(flows):
        lines += [f"define flow f{flow}", "  user ask refund"]
        for _ in range(8):
            lines.append(f"  execute tool_{(k * step) % 150}")
            k += 1
        lines.append("")
    return ("\n".join(lines) + "\n").encode()


def test_comparing_two_very_long_versions_is_bounded_and_says_so(editor, auditor, client_for):
    import time

    client = client_for(editor)
    for step in (1, 7):
        answer = client.post(
            "/rulebooks/", {"name": "big", "file": _named(_many_flows(step), "b.co")}
        )
        assert answer.status_code == 302, answer.content[:300]
    rulebook = Rulebook.objects.get()
    started = time.monotonic()
    page = client_for(auditor).get(f"/rulebooks/{rulebook.pk}/compare", {"a": 1, "b": 2})
    took = time.monotonic() - started
    assert page.status_code == 200
    assert b'id="source-too-long"' in page.content
    assert took < 10, took  # difflib took 36 s here (a gunicorn worker is killed at 60)
