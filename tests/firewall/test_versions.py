"""Policies as versions: an edit is the draft's, a publish makes the numbered, immutable version
that decides, every decision names its version, any two versions diff rule by rule, a rollback
publishes a copy (history is never rewritten), export and import are versions too."""

from __future__ import annotations

import json
import re

import pytest

from console.models import AuditRow, Event
from firewall import runtime, services
from firewall.models import Policy, PolicyVersion, Rule, RuleMatchCount

pytestmark = pytest.mark.django_db

NO_RM = {
    "priority": 10,
    "name": "no rm -rf",
    "tool_name_glob": "shell.*",
    "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
    "verdict": "deny",
    "notes": "a secret-ish note",
}
NO_CURL = {"priority": 20, "name": "no curl", "tool_name_glob": "curl.*", "verdict": "deny"}
RM_CALL = {"tool": "shell.exec", "arguments": {"command": "rm -rf /"}, "agent": "ops"}
CURL_CALL = {"tool": "curl.get", "arguments": {}, "agent": "ops"}
FORM_CONTROLS = re.compile(rb"<(form|input|select|textarea|button)\b")


def _post(client, url, body=None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


@pytest.fixture
def editor_actor(editor, organisation, actor_for):
    return actor_for(editor, organisation)


@pytest.fixture
def policy(editor_actor):
    policy = services.policy_create(actor=editor_actor, name="production")
    services.rule_create(actor=editor_actor, policy=policy, data=NO_RM)
    services.policy_publish(actor=editor_actor, policy=policy, note="first")
    return policy


def _evaluate(actor, call):
    return services.firewall_evaluate(actor=actor, call=call)


def test_an_edit_is_the_drafts_and_the_published_version_decides_until_the_next_publish(
    policy, editor_actor
):
    services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
    before = _evaluate(editor_actor, CURL_CALL)
    assert (before["verdict"], before["policy_version"]) == ("allow", 1)
    version = services.policy_publish(actor=editor_actor, policy=policy)
    assert version.number == 2
    after = _evaluate(editor_actor, CURL_CALL)
    assert (after["verdict"], after["rule"], after["policy_version"]) == ("deny", "no curl", 2)


def test_every_decision_event_names_the_version_that_decided_it(policy, editor_actor):
    _evaluate(editor_actor, RM_CALL)
    services.rule_update(
        actor=editor_actor,
        rule=policy.rules.get(),
        data={**NO_RM, "verdict": "require_approval"},
    )
    services.policy_publish(actor=editor_actor, policy=policy)
    _evaluate(editor_actor, RM_CALL)
    events = Event.objects.filter(source="firewall").order_by("id")
    assert [(e.verdict, e.detail["policy_version"]) for e in events] == [
        ("deny", 1),
        ("require_approval", 2),
    ]


def test_a_new_policy_decides_nothing_until_it_is_published(editor_actor):
    services.policy_import(
        actor=editor_actor,
        data={"name": "fresh", "default_verdict": "allow", "rules": [NO_RM]},
    )
    answer = _evaluate(editor_actor, {"tool": "ls"})
    assert (answer["decision"], answer["reasons"], answer["policy_version"]) == (
        "refuse",
        ["policy_not_published"],
        None,
    )


def test_versions_are_numbered_and_never_change(policy, editor_actor):
    services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
    services.policy_publish(actor=editor_actor, policy=policy)
    first, second = PolicyVersion.objects.filter(policy=policy).order_by("number")
    assert (first.number, second.number) == (1, 2)
    assert [r["name"] for r in first.rules] == ["no rm -rf"]
    assert (first.published_by, first.note) == ("user:eve-editor", "first")
    first.note = "rewritten"
    with pytest.raises(ValueError, match="never changed"):
        first.save()
    assert PolicyVersion.objects.get(pk=first.pk).note == "first"


def test_publishing_a_draft_that_decides_as_the_published_version_is_refused(policy, editor_actor):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        services.policy_publish(actor=editor_actor, policy=policy)
    assert "nothing to publish" in str(refused.value.message_dict["draft"])
    assert policy.versions.count() == 1


def test_a_publish_is_audited_by_rule_name_never_by_rule_blob(policy, editor_actor):
    services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
    services.policy_publish(actor=editor_actor, policy=policy)
    row = AuditRow.objects.filter(action="firewall.policy.publish").latest("seq")
    assert row.changes["version"] == {"old": 1, "new": 2}
    assert row.changes["added"] == {"old": None, "new": ["no curl"]}
    text = json.dumps([r.changes for r in AuditRow.objects.all()])
    assert "rm\\\\s+-rf" not in text and "secret-ish" not in text


class TestRoles:
    def test_only_an_admin_or_an_editor_publishes_or_rolls_back(self, policy, people, client_for):
        Rule.objects.filter(policy=policy).update(spec={**NO_RM, "verdict": "audit"})
        for role in ("auditor", "approver"):
            client = client_for(people[role])
            assert _post(client, f"/v1/firewall/policies/{policy.pk}/publish").status_code == 403
            rollback = _post(client, f"/v1/firewall/policies/{policy.pk}/rollback", {"version": 1})
            assert rollback.status_code == 403
            assert client.post(f"/firewall/{policy.pk}/publish").status_code == 403
            assert client.post(f"/firewall/{policy.pk}/rollback", {"version": 1}).status_code == 403
        assert policy.versions.count() == 1
        for role in ("editor", "admin"):
            response = _post(client_for(people[role]), f"/v1/firewall/policies/{policy.pk}/publish")
            assert response.status_code in (201, 400), response.content
        assert policy.versions.count() == 2

    def test_every_reader_sees_the_versions_and_the_diff(self, policy, people, client_for):
        for role in ("auditor", "approver", "editor", "admin"):
            client = client_for(people[role])
            assert client.get(f"/v1/firewall/policies/{policy.pk}/versions").status_code == 200
            assert client.get(f"/v1/firewall/policies/{policy.pk}/versions/1").status_code == 200
            assert client.get(f"/v1/firewall/policies/{policy.pk}/diff").status_code == 200
            assert client.get(f"/firewall/{policy.pk}/diff").status_code == 200
            assert client.get(f"/firewall/{policy.pk}/versions/1/").status_code == 200

    def test_another_organisations_versions_answer_404(self, policy, outsider, client_for):
        client = client_for(outsider)
        base = f"/v1/firewall/policies/{policy.pk}"
        for url in (f"{base}/versions", f"{base}/versions/1", f"{base}/diff", f"{base}/draft"):
            assert client.get(url).status_code == 404, url
        assert _post(client, f"{base}/publish").status_code == 404
        assert _post(client, f"{base}/rollback", {"version": 1}).status_code == 404
        assert client.put(f"{base}/draft", "{}", content_type="application/json").status_code == 404
        assert client.get(f"/firewall/{policy.pk}/diff").status_code == 404
        assert client.get(f"/firewall/{policy.pk}/versions/1/").status_code == 404
        assert client.post(f"/firewall/{policy.pk}/publish").status_code == 404
        assert policy.versions.count() == 1

    def test_an_auditors_version_and_diff_pages_have_no_form_controls(
        self, policy, editor_actor, auditor, client_for
    ):
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        services.policy_publish(actor=editor_actor, policy=policy)
        client = client_for(auditor)
        version = client.get(f"/firewall/{policy.pk}/versions/1/").content
        assert not FORM_CONTROLS.search(version.split(b"<main>", 1)[1])
        diff = client.get(f"/firewall/{policy.pk}/diff?old=1&new=2").content
        main = diff.split(b"<main>", 1)[1]
        # the page's one form chooses what to compare; nothing on it writes
        assert b'method="post"' not in main and b"Roll back" not in main
        assert b"+ no curl" in main
        page = client.get(f"/firewall/{policy.pk}/").content.split(b"<main>", 1)[1]
        assert b'id="publish"' not in page and b"rollback-form" not in page
        assert b'id="version-state"' in page and b"version 2" in page


class TestDiff:
    def test_the_diff_names_rules_added_removed_and_changed_in_one_line(
        self, policy, editor_actor, editor, client_for
    ):
        rule = policy.rules.get()
        services.rule_update(
            actor=editor_actor, rule=rule, data={**NO_RM, "name": "no rm", "mode": "shadow"}
        )
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        services.policy_publish(actor=editor_actor, policy=policy)
        services.rule_delete(actor=editor_actor, rule=policy.rules.get(name="no curl"))
        services.policy_update(actor=editor_actor, policy=policy, data={"default_verdict": "audit"})
        services.policy_publish(actor=editor_actor, policy=policy)
        body = client_for(editor).get(f"/v1/firewall/policies/{policy.pk}/diff?old=1&new=2").json()
        assert [r["text"] for r in body["added"]] == ["curl.* → deny"]
        assert body["removed"] == []
        (changed,) = body["changed"]
        assert (changed["old_name"], changed["name"], changed["fields"]) == (
            "no rm -rf",
            "no rm",
            ["mode", "name"],
        )
        assert changed["new_text"] == "shell.* where $.command ~ rm\\s+-rf → deny"
        later = client_for(editor).get(f"/v1/firewall/policies/{policy.pk}/diff?old=2&new=3")
        assert [r["name"] for r in later.json()["removed"]] == ["no curl"]
        assert later.json()["default_verdict"] == {"old": "allow", "new": "audit"}
        page = client_for(editor).get(f"/firewall/{policy.pk}/diff?old=1&new=3").content.decode()
        assert "~ no rm" in page and "(was no rm -rf)" in page and "Default verdict" in page

    def test_by_default_the_diff_is_from_the_published_version_to_the_draft(
        self, policy, editor_actor, editor, client_for
    ):
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        body = client_for(editor).get(f"/v1/firewall/policies/{policy.pk}/diff").json()
        assert (body["old"], body["new"]) == (1, "draft")
        assert [r["name"] for r in body["added"]] == ["no curl"]

    def test_a_version_that_does_not_exist_or_a_bad_ref_is_refused(
        self, policy, editor, client_for
    ):
        client = client_for(editor)
        missing = client.get(f"/v1/firewall/policies/{policy.pk}/diff?old=9&new=draft")
        assert missing.status_code == 400 and "version 9" in json.dumps(missing.json())
        bad = client.get(f"/v1/firewall/policies/{policy.pk}/diff?old=latest")
        assert bad.status_code == 400 and "old" in bad.json()
        assert client.get(f"/firewall/{policy.pk}/diff?old=9").status_code == 404
        assert client.get(f"/firewall/{policy.pk}/diff?new=-1").status_code == 400


class TestRollback:
    def test_a_rollback_publishes_a_copy_and_rewrites_no_history(
        self, policy, editor_actor, editor, client_for
    ):
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        services.policy_publish(actor=editor_actor, policy=policy)
        assert _evaluate(editor_actor, CURL_CALL)["verdict"] == "deny"
        response = _post(
            client_for(editor),
            f"/v1/firewall/policies/{policy.pk}/rollback",
            {"version": 1, "note": "curl is fine"},
        )
        assert response.status_code == 201, response.content
        assert (response.json()["number"], response.json()["copied_from"]) == (3, 1)
        after = _evaluate(editor_actor, CURL_CALL)
        assert (after["verdict"], after["policy_version"]) == ("allow", 3)
        first, second, third = PolicyVersion.objects.filter(policy=policy).order_by("number")
        assert [r["name"] for r in second.rules] == ["no rm -rf", "no curl"]
        assert third.digest == first.digest and third.key != first.key
        # the draft is the copy too: the rule kept its row (and so its counts)
        assert [r.name for r in policy.rules.all()] == ["no rm -rf"]
        assert policy.rules.get().pk == first.rules[0]["id"]
        assert not services.draft_changed(policy=Policy.objects.get(pk=policy.pk))
        row = AuditRow.objects.filter(action="firewall.policy.rollback").get()
        assert row.changes["copied_from"] == {"old": None, "new": 1}
        assert row.changes["removed"] == {"old": None, "new": ["no curl"]}

    def test_a_rollback_keeps_an_unpublished_draft_unless_told_to_discard_it(
        self, policy, editor_actor, editor, client_for
    ):
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        services.policy_publish(actor=editor_actor, policy=policy)
        services.rule_create(
            actor=editor_actor, policy=policy, data={**NO_CURL, "name": "wip", "priority": 30}
        )
        url = f"/v1/firewall/policies/{policy.pk}/rollback"
        kept = _post(client_for(editor), url, {"version": 1})
        assert kept.status_code == 400 and "draft" in kept.json()
        assert policy.rules.filter(name="wip").exists() and policy.versions.count() == 2
        done = _post(client_for(editor), url, {"version": 1, "discard_draft": True})
        assert done.status_code == 201
        assert not policy.rules.filter(name="wip").exists()

    def test_a_rollback_body_is_validated(self, policy, editor, client_for):
        url = f"/v1/firewall/policies/{policy.pk}/rollback"
        client = client_for(editor)
        assert "version" in _post(client, url, {"version": "one"}).json()
        assert "colour" in _post(client, url, {"version": 1, "colour": 1}).json()
        assert "version" in _post(client, url, {"version": 7}).json()
        same = _post(client, url, {"version": 1})
        assert same.status_code == 400 and "nothing to roll back" in json.dumps(same.json())

    def test_a_rule_renamed_back_and_forth_rolls_back_without_a_name_clash(
        self, policy, editor_actor
    ):
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        services.policy_publish(actor=editor_actor, policy=policy)
        rm, curl = policy.rules.get(name="no rm -rf"), policy.rules.get(name="no curl")
        services.rule_update(actor=editor_actor, rule=rm, data={**NO_RM, "name": "tmp"})
        services.rule_update(actor=editor_actor, rule=curl, data={**NO_CURL, "name": "no rm -rf"})
        services.rule_update(actor=editor_actor, rule=rm, data={**NO_RM, "name": "no curl"})
        services.policy_publish(actor=editor_actor, policy=policy)
        services.policy_rollback(actor=editor_actor, policy=policy, number=2)
        names = dict(policy.rules.values_list("pk", "name"))
        assert names == {rm.pk: "no rm -rf", curl.pk: "no curl"}


class TestExportImport:
    def test_export_is_the_published_version_and_its_import_as_the_draft_changes_nothing(
        self, policy, editor_actor, editor, client_for
    ):
        client = client_for(editor)
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)  # draft only
        exported = client.get(f"/v1/firewall/policies/{policy.pk}/export")
        assert exported["X-Policy-Version"] == "1"
        data = exported.json()
        assert [r["name"] for r in data["rules"]] == ["no rm -rf"]
        put = client.put(
            f"/v1/firewall/policies/{policy.pk}/draft",
            json.dumps(data),
            content_type="application/json",
        )
        assert put.status_code == 200, put.content
        assert put.json()["published_version"] == 1
        assert not services.draft_changed(policy=Policy.objects.get(pk=policy.pk))
        assert client.get(f"/v1/firewall/policies/{policy.pk}/diff").json()["same"] is True

    def test_an_older_version_exports_by_number_and_a_missing_one_is_refused(
        self, policy, editor_actor, auditor, client_for
    ):
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        services.policy_publish(actor=editor_actor, policy=policy)
        client = client_for(auditor)
        old = client.get(f"/v1/firewall/policies/{policy.pk}/export?version=1")
        assert old["Content-Disposition"] == 'attachment; filename="production-v1.json"'
        assert len(old.json()["rules"]) == 1
        page = client.get(f"/firewall/{policy.pk}/export.json?version=1")
        assert json.loads(page.content) == old.json()
        assert client.get(f"/v1/firewall/policies/{policy.pk}/export?version=5").status_code == 400
        assert client.get(f"/firewall/{policy.pk}/export.json?version=x").status_code == 400

    def test_an_invalid_draft_import_changes_nothing_and_names_every_path(
        self, policy, editor, client_for
    ):
        bad = {"name": "x", "default_verdict": "allow", "rules": [{**NO_RM, "verdict": "maybe"}]}
        response = client_for(editor).put(
            f"/v1/firewall/policies/{policy.pk}/draft",
            json.dumps(bad),
            content_type="application/json",
        )
        assert response.status_code == 400 and "rules[0].verdict" in response.json()
        assert policy.rules.get().spec["verdict"] == "deny"

    def test_an_import_of_a_new_policy_is_a_draft(self, editor, client_for):
        created = _post(
            client_for(editor),
            "/v1/firewall/policies",
            {"name": "p", "default_verdict": "allow", "rules": [NO_RM]},
        ).json()
        assert created["published_version"] is None
        export = client_for(editor).get(f"/v1/firewall/policies/{created['id']}/export")
        assert export.status_code == 400 and "publish" in json.dumps(export.json())


class TestCache:
    def test_a_version_is_compiled_once_and_a_publish_is_a_new_compile(
        self, policy, editor_actor, monkeypatch
    ):
        compiled = []
        real = runtime.engine.compile_policy
        monkeypatch.setattr(
            runtime.engine, "compile_policy", lambda data: compiled.append(data) or real(data)
        )
        for _ in range(3):
            _evaluate(editor_actor, RM_CALL)
        services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
        for _ in range(2):
            assert _evaluate(editor_actor, CURL_CALL)["verdict"] == "allow"
        services.policy_publish(actor=editor_actor, policy=policy)
        for _ in range(2):
            assert _evaluate(editor_actor, CURL_CALL)["verdict"] == "deny"
        services.policy_rollback(actor=editor_actor, policy=policy, number=1)
        assert _evaluate(editor_actor, CURL_CALL)["verdict"] == "allow"
        # version 1, the draft (in shadow) once, version 2, version 3
        assert [len(c["rules"]) for c in compiled] == [1, 2, 2, 1]


def test_a_live_rule_the_draft_deleted_is_still_counted_without_a_dangling_row(
    policy, editor_actor
):
    rule_id = policy.rules.get().pk
    services.rule_delete(actor=editor_actor, rule=policy.rules.get())
    answer = _evaluate(editor_actor, RM_CALL)
    assert (answer["verdict"], answer["rule_id"]) == ("deny", rule_id)
    assert not RuleMatchCount.objects.exists()


def test_the_draft_replayed_on_the_last_days_calls_says_what_would_change(
    policy, editor_actor, editor, client_for
):
    _evaluate(editor_actor, RM_CALL)
    _evaluate(editor_actor, {**RM_CALL, "arguments": {"command": "rm -rf /tmp"}})
    services.rule_update(
        actor=editor_actor, rule=policy.rules.get(), data={**NO_RM, "verdict": "audit"}
    )
    replay = client_for(editor).get(f"/v1/firewall/policies/{policy.pk}/replay").json()
    assert (replay["read"], replay["changed"], replay["version"]) == (2, 2, 1)
    assert replay["changes"][0]["published"]["verdict"] == "deny"
    assert replay["changes"][0]["draft"]["verdict"] == "audit"
    page = client_for(editor).get(f"/firewall/{policy.pk}/diff").content.decode()
    assert 'id="replay-summary"' in page and "<strong>2</strong>" in page
    assert Event.objects.count() == 2  # a replay writes nothing


def test_try_a_call_decides_with_the_draft_or_the_published_version(
    policy, editor_actor, editor, client_for
):
    services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
    client = client_for(editor)
    call = json.dumps({"tool": "curl.get"})
    draft = client.post(f"/firewall/{policy.pk}/try", {"call": call, "with": "draft"})
    assert b'id="try-verdict">deny' in draft.content and b"the draft" in draft.content
    live = client.post(f"/firewall/{policy.pk}/try", {"call": call, "with": "published"})
    assert b'id="try-verdict">allow' in live.content and b"version 1</dd>" in live.content


def test_the_page_publishes_and_rolls_back_for_an_editor(policy, editor_actor, editor, client_for):
    client = client_for(editor)
    services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
    page = client.get(f"/firewall/{policy.pk}/").content.decode()
    assert 'id="publish"' in page and "version 2" in page
    assert client.post(f"/firewall/{policy.pk}/publish", {"note": "curl"}).status_code == 302
    assert Policy.objects.get(pk=policy.pk).published.number == 2
    assert client.post(f"/firewall/{policy.pk}/rollback", {"version": "1"}).status_code == 302
    assert Policy.objects.get(pk=policy.pk).published.copied_from == 1
    refused = client.post(f"/firewall/{policy.pk}/rollback", {"version": "nine"})
    assert refused.status_code == 400 and b"version" in refused.content


def test_an_events_page_names_the_version_that_decided(policy, editor_actor, editor, client_for):
    _evaluate(editor_actor, RM_CALL)
    event = Event.objects.get()
    page = client_for(editor).get(f"/events/{event.pk}/").content.decode()
    assert 'id="policy-version">production version 1</dd>' in page


def test_the_policies_page_says_which_version_decides(policy, auditor, client_for):
    page = client_for(auditor).get("/firewall/").content.decode()
    assert f'href="/firewall/{policy.pk}/versions/1/">version 1</a>' in page


def test_a_live_sequence_rule_the_draft_deleted_still_raises_its_alert_naming_its_version(
    editor_actor,
):
    from firewall.models import SequenceAlert
    from tests.firewall.test_sequences import EXFIL, _chain, drain_all

    policy = services.policy_create(actor=editor_actor, name="production")
    rule = services.rule_create(actor=editor_actor, policy=policy, data=EXFIL)
    services.policy_publish(actor=editor_actor, policy=policy)
    rule_id = rule.pk
    services.rule_delete(actor=editor_actor, rule=rule)
    _chain(editor_actor)
    drain_all()
    alert = SequenceAlert.objects.get()
    assert (alert.rule_id, alert.rule_ref, alert.rule_name) == (None, rule_id, "exfil chain")
    assert alert.event.detail["policy_version"] == 1


def test_the_demo_seeds_a_published_policy():
    from django.core.management import call_command

    call_command("seed_demo")
    policy = Policy.objects.get()
    assert policy.published.number == 1 and not services.draft_changed(policy=policy)


def test_the_draft_runs_in_shadow_beside_live_decisions_recorded_never_enforced(
    policy, editor_actor, editor, client_for
):
    _evaluate(editor_actor, CURL_CALL)
    assert not Event.objects.exists()  # no draft: a plain allow is not recorded
    services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
    answer = _evaluate(editor_actor, CURL_CALL)
    assert (answer["verdict"], answer["policy_version"]) == ("allow", 1)  # never enforced
    event = Event.objects.get()
    assert (event.verdict, event.detail["draft"]["verdict"]) == ("allow", "deny")
    assert event.detail["draft"]["rule"] == "no curl"
    _evaluate(editor_actor, {"tool": "ls"})  # the draft agrees: nothing recorded
    assert Event.objects.count() == 1
    body = client_for(editor).get(f"/v1/firewall/policies/{policy.pk}/replay").json()
    assert body["in_shadow"]["count"] == 1
    page = client_for(editor).get(f"/firewall/{policy.pk}/diff").content.decode()
    assert 'id="in-shadow-summary"' in page
    services.policy_publish(actor=editor_actor, policy=policy)
    assert Policy.objects.get(pk=policy.pk).draft_key is None
    _evaluate(editor_actor, {**CURL_CALL, "tool": "curl.post"})
    assert "draft" not in Event.objects.latest("id").detail


def test_a_change_of_a_policys_settings_never_undoes_a_publish(policy, editor_actor):
    stale = Policy.objects.get(pk=policy.pk)  # read before the publish
    services.rule_create(actor=editor_actor, policy=policy, data=NO_CURL)
    services.policy_publish(actor=editor_actor, policy=policy)
    services.policy_update(actor=editor_actor, policy=stale, data={"name": "prod"})
    fresh = Policy.objects.get(pk=policy.pk)
    assert (fresh.name, fresh.published.number, fresh.draft_key) == ("prod", 2, None)
