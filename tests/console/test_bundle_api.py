"""`GET /v1/bundle`: the organisation's signed bundle of what decides, conditional and long-polled."""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path

import pytest

from console import bundles, services
from console.models import OrganisationSettings, SessionHold, ToolSwitch
from stalwart_agents import bundle

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "policy.co"


@pytest.fixture
def key_for(organisation, actor_for):  # noqa: ANN001, ANN201
    def make(user, role: str = "editor", org=None) -> dict:  # noqa: ANN001
        _, key = services.api_key_create(
            actor=actor_for(user, org or organisation), name=f"runtime-{role}", role=role
        )
        return {"HTTP_AUTHORIZATION": f"Bearer {key}"}

    return make


def verified(answer, organisation) -> bundle.Bundle:  # noqa: ANN001
    assert answer.status_code == 200, answer.content
    return bundle.verify_bundle(
        answer.json(), bundle.VerifyKey(bundles.public_key(organisation.pk))
    )


@pytest.mark.django_db
def test_the_bundle_holds_what_decides_and_verifies_under_the_organisations_public_key(
    client, organisation, admin, key_for, actor_for
):
    from firewall import services as firewall_services
    from guard.executor import write_switch_set
    from rulebooks.services import rulebook_upload

    actor = actor_for(admin, organisation)
    OrganisationSettings.objects.update_or_create(
        organisation=organisation, defaults={"taint_policy": "refuse", "s1_veto": "refuse"}
    )
    policy = firewall_services.policy_create(actor=actor, name="main", default_verdict="allow")
    firewall_services.rule_create(
        actor=actor,
        policy=policy,
        data={"name": "no shell", "tool_name_glob": "shell.*", "verdict": "deny"},
    )
    firewall_services.policy_publish(actor=actor, policy=policy)
    rulebook_upload(actor=actor, name="shop", data=SHOP.read_bytes(), filename="policy.co")
    write_switch_set(actor=actor, tool="refund_card", enabled=False)
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s1", reason="x")
    ToolSwitch.objects.create(organisation=organisation, agent="desk", tool="pay", reason="x")
    headers = key_for(admin)

    key = client.get("/v1/bundle/key", **headers).json()
    assert key["public_key"] == bundles.public_key(organisation.pk)
    answer = client.get("/v1/bundle", **headers)
    found = verified(answer, organisation)
    assert answer["ETag"] == f'"{found.version}"'
    assert found.settings["taint_policy"] == "refuse"
    assert found.settings["said"]["s1_veto"] == "refuse"
    assert found.settings["on_unread"] == "refuse"
    assert found.firewall["policy"] == "main" and found.firewall["version"] == 1
    assert [rule["name"] for rule in found.firewall["rules"]] == ["no shell"]
    assert found.rulebooks["shop"]["version"] == 1
    assert found.rulebooks["shop"]["record"]["flows"]
    assert not found.writes_enabled("refund_card") and found.writes_enabled("get_order")
    assert found.held("Desk", "s1") and not found.held("desk", "s2")
    assert found.tool_switched("desk", "PAY") and not found.tool_switched("billing", "pay")


@pytest.mark.django_db
def test_the_same_version_is_a_304_with_a_stamp_signed_anew(client, organisation, admin, key_for):
    headers = key_for(admin)
    found = verified(client.get("/v1/bundle", **headers), organisation)
    again = client.get("/v1/bundle", HTTP_IF_NONE_MATCH=f'"{found.version}"', **headers)
    assert again.status_code == 304 and again.content == b""
    key = bundle.VerifyKey(bundles.public_key(organisation.pk))
    stamped_at = bundle.verify_stamp(again["Stalwart-Bundle-Stamp"], key, found)
    assert stamped_at >= found.issued_at
    # A stamp does not vouch for another version.
    other = bundle.Bundle(found.organisation, found.agent, "sha256:" + "0" * 64, 0.0, {})
    with pytest.raises(bundle.BundleRefused):
        bundle.verify_stamp(again["Stalwart-Bundle-Stamp"], key, other)
    # A change is a new version, answered in full.
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s1", reason="x")
    changed = client.get("/v1/bundle", HTTP_IF_NONE_MATCH=f'"{found.version}"', **headers)
    assert verified(changed, organisation).version != found.version


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_answers_as_soon_as_a_hold_is_raised(client, organisation, admin, key_for):
    headers = key_for(admin)
    found = verified(client.get("/v1/bundle", **headers), organisation)
    started = time.monotonic()
    quiet = client.get("/v1/bundle?wait=0.5", HTTP_IF_NONE_MATCH=f'"{found.version}"', **headers)
    assert quiet.status_code == 304 and time.monotonic() - started >= 0.5

    def raise_hold() -> None:  # what a sequence alert writes, from another connection
        from django.db import connections

        try:
            SessionHold.objects.create(
                organisation=organisation, agent="desk", session="s9", reason="alert"
            )
        finally:
            connections.close_all()

    threading.Timer(0.5, raise_hold).start()
    started = time.monotonic()
    answer = client.get("/v1/bundle?wait=20", HTTP_IF_NONE_MATCH=f'"{found.version}"', **headers)
    took = time.monotonic() - started
    assert verified(answer, organisation).held("desk", "s9")
    assert took < 2.0, took


@pytest.mark.django_db
def test_an_agents_bundle_keeps_only_that_agents_controls(client, organisation, admin, key_for):
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s1", reason="x")
    SessionHold.objects.create(organisation=organisation, agent="billing", session="s2", reason="x")
    found = verified(client.get("/v1/bundle?agent=Desk", **key_for(admin)), organisation)
    assert found.agent == "desk"
    assert found.held("desk", "s1") and not found.held("billing", "s2")
    with pytest.raises(bundle.BundleRefused, match="agent"):
        bundle.verify_bundle(
            client.get("/v1/bundle?agent=desk", **key_for(admin)).json(),
            bundle.VerifyKey(bundles.public_key(organisation.pk)),
            agent="billing",
        )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [("wait=31", "wait"), ("wait=-1", "wait"), ("wait=soon", "wait"), ("agent=a%20b", "agent")],
)
def test_a_bad_query_is_a_400_naming_its_field(client, admin, key_for, query, field):  # noqa: ANN001
    answer = client.get(f"/v1/bundle?{query}", **key_for(admin))
    assert answer.status_code == 400 and field in answer.json(), answer.content


@pytest.mark.django_db
def test_the_bundle_needs_a_key_that_checks_calls(client, admin, key_for):
    assert client.get("/v1/bundle").status_code in (401, 403)
    assert client.get("/v1/bundle", **key_for(admin, "auditor")).status_code == 403
    assert client.get("/v1/bundle/key", **key_for(admin, "auditor")).status_code == 403


@pytest.mark.django_db
def test_another_organisations_bundle_does_not_verify_under_this_ones_key(
    client, organisation, other_organisation, outsider, admin, key_for
):
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s1", reason="x")
    theirs = client.get("/v1/bundle", **key_for(outsider, org=other_organisation)).json()
    assert theirs["content"]["holds"] == []
    with pytest.raises(bundle.BundleRefused, match="signature"):
        bundle.verify_bundle(theirs, bundle.VerifyKey(bundles.public_key(organisation.pk)))


@pytest.mark.django_db
def test_a_tampered_bundle_is_refused_whatever_was_changed(client, organisation, admin, key_for):
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s1", reason="x")
    signed = client.get("/v1/bundle", **key_for(admin)).json()
    key = bundle.VerifyKey(bundles.public_key(organisation.pk))
    assert bundle.verify_bundle(signed, key).held("desk", "s1")

    def changed(edit):  # noqa: ANN001, ANN202
        copied = copy.deepcopy(signed)
        edit(copied)
        return copied

    def drop_hold_and_fix_version(b: dict) -> None:
        b["content"]["holds"] = []
        b["version"] = bundle.version_of(b["content"])

    tampered = [
        changed(lambda b: b["content"].update(holds=[])),
        changed(drop_hold_and_fix_version),
        changed(lambda b: b.update(issued_at=b["issued_at"] + 3600)),
        changed(lambda b: b["signature"].update(value="A" * 88)),
        changed(lambda b: b.pop("signature")),
        changed(lambda b: b.update(extra=1)),
        changed(lambda b: b["content"].pop("writes")),
        "not a bundle",
    ]
    for item in tampered:
        with pytest.raises(bundle.BundleRefused):
            bundle.verify_bundle(item, key)


@pytest.mark.django_db
def test_a_runtimes_approval_request_is_checked_field_by_field(client, admin, key_for):
    answer = client.post(
        "/v1/approvals",
        {"agent": "a b", "session": "", "call": {"tool": 3}, "history_at": -1, "more": 1},
        content_type="application/json",
        **key_for(admin),
    )
    assert answer.status_code == 400
    assert set(answer.json()) >= {"agent", "session", "call.tool", "history_at", "more"}


def _long_poll_later(client, headers, version, wait, answers, **given):  # noqa: ANN001, ANN202
    """Start a long-poll in another thread; its answer and the monotonic time it came, in `answers`."""
    from django.db import connections

    def poll() -> None:
        try:
            answer = client.get(
                f"/v1/bundle?wait={wait}", HTTP_IF_NONE_MATCH=f'"{version}"', **headers, **given
            )
            answers.append((answer, time.monotonic()))
        finally:
            connections.close_all()

    thread = threading.Thread(target=poll)
    thread.start()
    return thread


def _a_long_poll_waiting(client, organisation, headers, wait: float = 20):  # noqa: ANN001, ANN202
    """The bundle now, and a long-poll for its next version waiting in another thread."""
    found = verified(client.get("/v1/bundle", **headers), organisation)
    answers: list = []
    thread = _long_poll_later(client, headers, found.version, wait, answers)
    _waiting(1)
    time.sleep(0.2)  # past its first read of the rows: asleep until woken or re-checking
    return found, thread, answers


def _answered(thread, answers, organisation, session: str, *, since: float) -> float:  # noqa: ANN001
    """Seconds from `since` until the waiting long-poll answered with the session held."""
    thread.join(5)
    answer, at = answers[0]
    assert verified(answer, organisation).held("desk", session)
    return at - since


def _waiting(count: int) -> None:
    from console import bundle_changes

    deadline = time.monotonic() + 5
    while bundle_changes._active < count:
        assert time.monotonic() < deadline, "the long-poll never started waiting"
        time.sleep(0.01)


@pytest.mark.django_db(transaction=True)
def test_a_change_wakes_a_waiting_long_poll_at_once_not_at_its_next_look(
    client, organisation, admin, key_for, settings
):
    # The re-check is made too slow to be what answers: only the change's announcement can.
    settings.STALWART_BUNDLE_RECHECK = 10.0
    headers = key_for(admin)
    found, thread, answers = _a_long_poll_waiting(client, organisation, headers)
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s9", reason="x")
    took = _answered(thread, answers, organisation, "s9", since=time.monotonic())
    print(f"woken {1000 * took:.1f} ms after the commit")
    assert took < 0.1, took


@pytest.mark.django_db(transaction=True)
def test_a_change_announced_by_another_console_process_wakes_the_long_poll_through_redis(
    client, organisation, admin, key_for, settings
):
    import redis

    from console import bundle_changes

    settings.STALWART_BUNDLE_RECHECK = 10.0
    bundle_changes.seen(organisation.pk)  # the listener subscribes
    deadline = time.monotonic() + 5
    while not bundle_changes.listening():
        assert time.monotonic() < deadline, "the listener never subscribed"
        time.sleep(0.01)
    found, thread, answers = _a_long_poll_waiting(client, organisation, key_for(admin))
    # Another process writes the hold (here: without this process's signals) and announces it,
    # as `bundle_changed` does there, on the channel of this Redis database.
    SessionHold.objects.bulk_create(
        [SessionHold(organisation=organisation, agent="desk", session="s7", reason="x")]
    )
    other = redis.Redis.from_url(settings.REDIS_URL)
    other.publish(bundle_changes.channel(other), str(organisation.pk))
    took = _answered(thread, answers, organisation, "s7", since=time.monotonic())
    print(f"woken {1000 * took:.1f} ms after the publish")
    assert took < 0.1, took


@pytest.mark.django_db(transaction=True)
def test_with_redis_down_a_long_poll_falls_back_to_its_recheck(
    client, organisation, admin, key_for, settings
):
    from console import bundle_changes

    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    settings.STALWART_BUNDLE_RECHECK = 0.3
    headers = key_for(admin)
    found, thread, answers = _a_long_poll_waiting(client, organisation, headers)
    # A change nobody announces (the publish cannot reach Redis): the next re-check sees it.
    SessionHold.objects.bulk_create(
        [SessionHold(organisation=organisation, agent="desk", session="s5", reason="x")]
    )
    written = time.monotonic()
    thread.join(5)
    answer, at = answers[0]
    assert verified(answer, organisation).held("desk", "s5")
    assert at - written < 1.0, at - written
    # A change announced while Redis is down: the publish fails quietly, the answer still comes.
    again = verified(answer, organisation)
    answers.clear()
    settings.STALWART_BUNDLE_RECHECK = 10.0
    thread = _long_poll_later(client, headers, again.version, 20, answers)
    _waiting(1)
    started = time.monotonic()
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s6", reason="x")
    assert time.monotonic() - started < 1.5  # the failed publish did not hold the commit long
    thread.join(5)
    assert verified(answers[0][0], organisation).held("desk", "s6")
    bundle_changes._quiet_until = 0.0  # Redis is back for the tests after this one


@pytest.mark.django_db(transaction=True)
def test_beyond_the_bound_a_long_poll_is_answered_at_once_with_retry_after(
    client, organisation, admin, key_for, settings
):
    from console import bundle_changes

    settings.STALWART_BUNDLE_MAX_POLLS = 1
    headers = key_for(admin)
    found, first, answers = _a_long_poll_waiting(client, organisation, headers, wait=1.5)
    started = time.monotonic()
    busy = client.get("/v1/bundle?wait=20", HTTP_IF_NONE_MATCH=f'"{found.version}"', **headers)
    assert time.monotonic() - started < 0.5
    assert busy.status_code == 304 and int(busy["Retry-After"]) >= 1
    key = bundle.VerifyKey(bundles.public_key(organisation.pk))
    assert bundle.verify_stamp(busy["Stalwart-Bundle-Stamp"], key, found)
    # Changed meanwhile: the bound answers at once with the new bundle.
    SessionHold.objects.bulk_create(
        [SessionHold(organisation=organisation, agent="desk", session="s4", reason="x")]
    )
    changed = client.get("/v1/bundle?wait=20", HTTP_IF_NONE_MATCH=f'"{found.version}"', **headers)
    assert verified(changed, organisation).held("desk", "s4") and changed["Retry-After"]
    first.join(5)
    assert answers[0][0].status_code == 200 and "Retry-After" not in answers[0][0]
    assert bundle_changes._active == 0  # every slot given back
    # With the slot free, a long-poll waits again.
    newer = verified(changed, organisation)
    started = time.monotonic()
    quiet = client.get("/v1/bundle?wait=0.5", HTTP_IF_NONE_MATCH=f'"{newer.version}"', **headers)
    assert quiet.status_code == 304 and time.monotonic() - started >= 0.5
    assert "Retry-After" not in quiet


@pytest.mark.django_db
def test_each_answer_signs_back_the_nonce_of_its_request(client, organisation, admin, key_for):
    """`Stalwart-Bundle-Fresh` binds an answer (200 or 304) to the request's nonce: an answer
    replayed to another request, or naming another version, does not verify."""
    headers = key_for(admin)
    key = bundle.VerifyKey(bundles.public_key(organisation.pk))
    nonce = bundle.new_nonce()
    answer = client.get("/v1/bundle", HTTP_STALWART_BUNDLE_NONCE=nonce, **headers)
    found = verified(answer, organisation)
    bundle.verify_fresh(answer["Stalwart-Bundle-Fresh"], key, found, nonce)
    with pytest.raises(bundle.BundleRefused, match="does not verify"):
        bundle.verify_fresh(answer["Stalwart-Bundle-Fresh"], key, found, bundle.new_nonce())
    other = bundle.Bundle(found.organisation, found.agent, "sha256:" + "0" * 64, 0.0, {})
    with pytest.raises(bundle.BundleRefused, match="does not verify"):
        bundle.verify_fresh(answer["Stalwart-Bundle-Fresh"], key, other, nonce)
    with pytest.raises(bundle.BundleRefused, match="not bound to this request"):
        bundle.verify_fresh(None, key, found, nonce)
    again_nonce = bundle.new_nonce()
    again = client.get(
        "/v1/bundle",
        HTTP_IF_NONE_MATCH=f'"{found.version}"',
        HTTP_STALWART_BUNDLE_NONCE=again_nonce,
        **headers,
    )
    assert again.status_code == 304
    bundle.verify_fresh(again["Stalwart-Bundle-Fresh"], key, found, again_nonce)
    # Without a nonce there is nothing to bind; one that is not a nonce is refused.
    assert "Stalwart-Bundle-Fresh" not in client.get("/v1/bundle", **headers)
    bad = client.get("/v1/bundle", HTTP_STALWART_BUNDLE_NONCE="x y", **headers)
    assert bad.status_code == 400 and "Stalwart-Bundle-Nonce" in bad.json()
