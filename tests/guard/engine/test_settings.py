"""Settings of the tool check, loaded strictly."""

from __future__ import annotations

import datetime as dt

import pytest

from guard.engine import SettingsInvalid, load_settings
from guard.engine.checks import NAMES


def test_defaults_confirm_tainted_writes_and_hold_no_licence():
    settings = load_settings(None, known_checks=NAMES)
    assert (
        settings.taint_policy == "confirm" and settings.licence is None and settings.checks is None
    )


def test_the_licence_may_be_given_flat_as_the_console_stores_it():
    settings = load_settings(
        {"licence_valid_until": "2026-12-31", "licence_on_lapse": "refuse_all"}, known_checks=NAMES
    )
    assert settings.licence.valid_until == dt.date(2026, 12, 31)
    assert settings.licence.on_lapse == "refuse_all"
    assert not settings.licence.lapsed(dt.date(2026, 12, 31))
    assert settings.licence.lapsed(dt.date(2027, 1, 1))


def test_every_bad_setting_is_reported_with_its_name():
    with pytest.raises(SettingsInvalid) as caught:
        load_settings(
            {
                "taint_policy": "maybe",
                "licence": {"valid_until": "soon"},
                "label_trust": {"web": "high"},
                "token_ttl": 0,
                "checks": ["adress"],
                "colour": "red",
            },
            known_checks=NAMES,
        )
    found = [str(issue) for issue in caught.value.issues]
    assert found == [
        "colour: is not a setting of the tool check",
        "taint_policy: must be confirm or refuse, not `maybe`",
        "label_trust: must map labels to one of outside, internal, trusted",
        "token_ttl: must be a whole number of seconds, more than 0",
        "checks: names a check the tool check does not have: `adress`",
        "licence.valid_until: must be a date (YYYY-MM-DD), not `soon`",
    ]
