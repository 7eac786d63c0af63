"""Rotating an organisation's bundle key: admins only, audited; the new key signs, the old is listed
for its grace period, and every bundle, stamp and grant names the key that signed it."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from console import bundles, services
from console.models import AuditRow, BundleKeyGeneration
from stalwart_agents import bundle

pytestmark = pytest.mark.django_db


@pytest.fixture
def key_for(organisation, actor_for):  # noqa: ANN001, ANN201
    def make(user, role: str = "editor") -> dict:  # noqa: ANN001
        _, key = services.api_key_create(
            actor=actor_for(user, organisation), name=f"runtime-{role}", role=role
        )
        return {"HTTP_AUTHORIZATION": f"Bearer {key}"}

    return make


def test_an_admin_rotates_the_key_and_the_rotation_is_audited(client, organisation, admin, key_for):
    before = client.get("/v1/bundle/key", **key_for(admin)).json()
    assert [(key["status"], key["generation"]) for key in before["keys"]] == [
        ("current", 0),
        ("next", 1),
    ]
    assert before["kid"] == bundle.key_id(before["public_key"])
    announced = before["keys"][1]["public_key"]
    old = bundle.verify_bundle(
        client.get("/v1/bundle", **key_for(admin)).json(), bundle.VerifyKey(before["public_key"])
    )

    rotated = client.post("/v1/bundle/key/rotate", **key_for(admin, "admin"))
    assert rotated.status_code == 200, rotated.content
    after = rotated.json()
    # The key announced as next is the one that signs now.
    assert after["public_key"] == announced != before["public_key"]
    assert [(key["status"], key["generation"]) for key in after["keys"]] == [
        ("current", 1),
        ("next", 2),
        ("previous", 0),
    ]
    assert after["keys"][2]["public_key"] == before["public_key"]
    assert after["keys"][2]["listed_until"] and not after["keys"][0]["listed_until"]
    assert client.get("/v1/bundle/key", **key_for(admin)).json() == after

    row = AuditRow.objects.get(action="bundle_key.rotate")
    assert row.organisation == organisation and row.object_type == "bundle_key"
    assert row.changes["kid"] == [before["kid"], after["kid"]]
    assert row.changes["generation"] == [0, 1]

    # The new key signs every bundle and stamp, and each names it.
    signed = client.get("/v1/bundle", **key_for(admin)).json()
    assert signed["signature"]["kid"] == after["kid"]
    both = bundle.VerifyKey([before["public_key"], after["public_key"]])
    assert bundle.verify_bundle(signed, both).version == old.version
    with pytest.raises(bundle.BundleRefused, match="does not trust"):
        bundle.verify_bundle(signed, bundle.VerifyKey(before["public_key"]))
    stamp = client.get("/v1/bundle", HTTP_IF_NONE_MATCH=f'"{old.version}"', **key_for(admin))
    assert stamp.status_code == 304
    assert stamp["Stalwart-Bundle-Stamp"].split(" ")[2] == after["kid"]
    assert bundle.verify_stamp(stamp["Stalwart-Bundle-Stamp"], both, old)
    with pytest.raises(bundle.BundleRefused):
        bundle.verify_stamp(
            stamp["Stalwart-Bundle-Stamp"], bundle.VerifyKey(before["public_key"]), old
        )


def test_a_second_rotation_drops_the_oldest_key_and_the_grace_period_ends(
    client, organisation, admin, actor_for, key_for, settings
):
    actor = actor_for(admin, organisation)
    first = bundles.bundle_key_rotate(actor=actor)
    second = bundles.bundle_key_rotate(actor=actor)
    keys = client.get("/v1/bundle/key", **key_for(admin)).json()["keys"]
    assert [key["status"] for key in keys] == ["current", "next", "previous"]
    assert keys[0]["kid"] == second.kid and keys[2]["kid"] == first.kid
    assert second.generation == 2 and keys[1]["generation"] == 3
    # Past the grace period the previous key is no longer listed.
    settings.STALWART_BUNDLE_KEY_GRACE = 60
    BundleKeyGeneration.objects.filter(generation=2).update(
        created_at=timezone.now() - dt.timedelta(seconds=61)
    )
    keys = client.get("/v1/bundle/key", **key_for(admin)).json()["keys"]
    assert [key["status"] for key in keys] == ["current", "next"]
    assert keys[0]["kid"] == second.kid


def test_each_generation_is_another_key_and_no_organisation_shares_one(
    organisation, other_organisation, admin, actor_for
):
    ours = [bundles.key_ring(organisation.pk).current.public]
    for _ in range(3):
        ours.append(bundles.bundle_key_rotate(actor=actor_for(admin, organisation)).public)
    theirs = [bundles.key_ring(other_organisation.pk).current.public]
    theirs.append(bundles.key_ring(other_organisation.pk).next.public)
    assert len(set(ours + theirs)) == len(ours) + len(theirs)


@pytest.mark.parametrize("role", ["editor", "approver", "auditor"])
def test_only_an_admin_rotates_by_the_api(client, admin, key_for, role):  # noqa: ANN001
    answer = client.post("/v1/bundle/key/rotate", **key_for(admin, role))
    assert answer.status_code == 403
    assert not BundleKeyGeneration.objects.exists()
    assert not AuditRow.objects.filter(action="bundle_key.rotate").exists()


def test_an_admin_rotates_from_the_settings_page_after_a_confirm(
    client_for, admin, editor, auditor, organisation
):
    page = client_for(admin).get("/settings/").content.decode()
    assert 'id="bundle-key-rotate"' in page and "return confirm(" in page
    assert bundles.public_key(organisation.pk) in page
    for person in (editor, auditor):
        theirs = client_for(person).get("/settings/").content.decode()
        assert bundles.public_key(organisation.pk) in theirs  # public keys: no secret
        assert 'id="bundle-key-rotate"' not in theirs
        assert client_for(person).post("/settings/bundle-key/rotate").status_code == 403
    assert not BundleKeyGeneration.objects.exists()

    before = bundles.public_key(organisation.pk)
    theirs = client_for(admin)
    answer = theirs.post("/settings/bundle-key/rotate")
    assert answer.status_code == 302 and answer["Location"] == "/settings/"
    assert bundles.public_key(organisation.pk) != before
    page = theirs.get("/settings/").content.decode()
    assert "rotated to generation 1" in page
    assert before in page and bundles.public_key(organisation.pk) in page
    assert AuditRow.objects.filter(action="bundle_key.rotate", actor_id=admin.pk).exists()
    assert client_for(admin).get("/settings/bundle-key/rotate").status_code == 405


def test_the_command_rotates_an_organisations_key(organisation):
    before = bundles.public_key(organisation.pk)
    out = io.StringIO()
    call_command("rotate_bundle_key", "--org", organisation.slug, stdout=out)
    after = bundles.public_key(organisation.pk)
    assert after != before and after in out.getvalue() and before in out.getvalue()
    row = AuditRow.objects.get(action="bundle_key.rotate")
    assert row.actor == "manage.py rotate_bundle_key"
    with pytest.raises(CommandError, match="no organisation"):
        call_command("rotate_bundle_key", "--org", "nobody", stdout=io.StringIO())


def test_an_approval_grant_is_signed_with_the_current_key(organisation, admin, actor_for):
    rotated = bundles.bundle_key_rotate(actor=actor_for(admin, organisation))
    token = bundle.sign_grant(bundles.signing_key(organisation.pk), {"approval": "a1"})
    assert bundle.verify_grant(token, bundle.VerifyKey(rotated.public))["kid"] == rotated.kid
    with pytest.raises(bundle.BundleRefused, match="does not trust"):
        bundle.verify_grant(token, bundle.VerifyKey(bundles.public_key(organisation.pk + 1000)))


def test_several_public_keys_are_read_from_a_list_or_commas():
    one, two = (bundle.SigningKey(bytes([n]) * 32) for n in (1, 2))
    for given in ([one.public, two.public], f"{one.public}, {two.public}"):
        keys = bundle.VerifyKey(given)
        assert keys.kids == (one.kid, two.kid)
    for bad in ("", ",", "ed25519:abc", [one.public, 3], ["rsa:xyz"], ",".join([one.public] * 9)):
        with pytest.raises(bundle.BundleRefused, match="bundle key"):
            bundle.VerifyKey(bad)
    # A signature naming no kid (an older console) is tried under each key trusted.
    signed = bundle.sign_bundle(two, organisation="o", agent="", content=_content())
    del signed["signature"]["kid"]
    assert bundle.verify_bundle(signed, bundle.VerifyKey([one.public, two.public]))
    with pytest.raises(bundle.BundleRefused, match="does not verify"):
        bundle.verify_bundle(signed, bundle.VerifyKey(one.public))
    # A kid changed in flight picks another key, under which the signature does not verify.
    signed = bundle.sign_bundle(two, organisation="o", agent="", content=_content())
    signed["signature"]["kid"] = one.kid
    with pytest.raises(bundle.BundleRefused, match="does not verify"):
        bundle.verify_bundle(signed, bundle.VerifyKey([one.public, two.public]))


def _content() -> dict:
    return {
        name: (
            {}
            if name in ("settings", "rulebooks", "writes")
            else None
            if name == "firewall"
            else []
        )
        for name in bundle.CONTENT
    }
