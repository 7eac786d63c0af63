"""The credential table, without Django: each shape is recognised and redacted exactly (its middle
group only, by `[redacted:<name>]` or a given label), near-misses and prose are left alone, a
`Basic` value is redacted only when it decodes to `user:password`, lone surrogates are read as
`?`, the length and hint pre-checks are exact bounds, and `redact_value` and `secret_name` redact
secret keys and credentials inside structures."""

from __future__ import annotations

import pytest

from firewall.engine.credentials import (
    CREDENTIAL_NAMES,
    RECOGNISERS,
    REDACTED,
    compiled,
    could_hold,
    marker,
    recognise,
    recogniser,
    redact_text,
    redact_value,
    secret_name,
    shortest,
)
from tests.credential_samples import SAMPLES

#: Each sample of tests/credential_samples.py as `redact_text` leaves it.
REDACTED_SAMPLES: dict[str, str] = {
    "private_key": "[redacted:private_key]",
    "url_password": "https://deploy:[redacted:url_password]@git.example.com/repo",
    "url_token": "https://hooks.example.com/in?channel=ops&token=[redacted:url_token]",
    "slack_webhook": "https://hooks.slack.com/services/[redacted:slack_webhook]",
    "jwt": "[redacted:jwt]",
    "anthropic_key": "[redacted:anthropic_key]",
    "openai_key": "[redacted:openai_key]",
    "stalwart_key": "[redacted:stalwart_key]",
    "github_token": "[redacted:github_token]",
    "slack_token": "[redacted:slack_token]",
    "aws_access_key": "[redacted:aws_access_key]",
    "aws_secret_key": "aws_secret_access_key = [redacted:aws_secret_key]",
    "bearer_token": "Authorization: Bearer [redacted:bearer_token]",
    "basic_auth": "Authorization: Basic [redacted:basic_auth]",
}
SHAPES: dict[str, tuple[str, str]] = {
    name: (SAMPLES[name], REDACTED_SAMPLES[name]) for name in REDACTED_SAMPLES
}

NEAR_MISSES = [
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
    "https://deploy@git.example.com/repo and more words",
    "https://hooks.example.com/in?channel=ops&page=9f8e7d6c5b4a3f2e",
    "https://hooks.slack.com/services/short",
    "eyJhbGciOiJIUzI1NiJ9 alone, not a token at all",
    "sk-ant-short and sk-tooshort1234 here",
    "stw_short_key_here",
    "ghp_R2d2C3poBb8Kx9Lm0Nq1Pr4St7Uv5 short",
    "xoxb-12345 is too short",
    "AKIAIOSFODNN7EXAMPL is one short",
    "aws_secret_access_key = tooshort",
    "Authorization: Bearer shorttoken",
    "Basic authentication is a scheme",
]


def test_names_follow_the_table():
    assert CREDENTIAL_NAMES == tuple(item.name for item in RECOGNISERS)
    assert set(CREDENTIAL_NAMES) == set(SHAPES) == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_is_recognised(name):
    also = ["openai_key"] if name == "anthropic_key" else []
    assert recognise(SHAPES[name][0]) == [name, *also]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_is_redacted_in_its_middle_group(name):
    text, redacted = SHAPES[name]
    assert redact_text(text) == (redacted, [name])


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_takes_a_label(name):
    text, redacted = SHAPES[name]
    expected = redacted.replace(f"[redacted:{name}]", "[redacted:secret]")
    assert redact_text(text, label="secret") == (expected, [name])


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_left_alone(text):
    assert recognise(text) == []
    assert redact_text(text) == (text, [])


def test_marker():
    assert marker("jwt") == "[redacted:jwt]"


def test_short_text_is_left_alone():
    assert recognise("?sig") == []
    assert redact_text("?sig") == ("?sig", [])


def test_shortest_credential_is_found():
    assert recognise("?sig=x") == ["url_token"]
    assert redact_text("?sig=x") == ("?sig=[redacted:url_token]", ["url_token"])
    assert redact_text("?sig=") == ("?sig=", [])


def test_several_shapes_are_found_in_table_order():
    text = "token sk-ant-api03-abcdefghijklmnopqrstuvwxyz then Bearer Vq9Lm2Xc8Rt4Zp7Kd3xx"
    assert recognise(text) == ["anthropic_key", "openai_key", "bearer_token"]
    assert redact_text(text) == (
        "token [redacted:anthropic_key] then Bearer [redacted:bearer_token]",
        ["anthropic_key", "bearer_token"],
    )


def test_later_shapes_found_after_an_earlier_one_is_redacted():
    text = "https://deploy:hunter2pass@git.example.com/repo?token=9f8e7d6c5b4a3f2e"
    assert recognise(text) == ["url_password", "url_token"]
    assert redact_text(text) == (
        "https://deploy:[redacted:url_password]@git.example.com/repo?token=[redacted:url_token]",
        ["url_password", "url_token"],
    )


def test_shapes_after_a_skipped_one_are_recognised():
    text = "AKIAIOSFODNN7EXAMPLE xoxb-123456789012-Qw3rTy8UiOp2"
    assert recognise(text) == ["slack_token", "aws_access_key"]
    assert redact_text(text) == (
        "[redacted:aws_access_key] [redacted:slack_token]",
        ["slack_token", "aws_access_key"],
    )


def test_names_limit_the_table():
    text = "sk-proj-Zyxwvutsrqponmlkjihgfedcba and Bearer Vq9Lm2Xc8Rt4Zp7Kd3xx"
    assert redact_text(text, names=("bearer_token",)) == (
        "sk-proj-Zyxwvutsrqponmlkjihgfedcba and Bearer [redacted:bearer_token]",
        ["bearer_token"],
    )
    assert redact_text(text, names=("jwt",)) == (text, [])


def test_basic_prose_beside_credentials_is_kept():
    text = "use Basic authentication, or Basic ZGVwbG95Omh1bnRlcjJwYXNz"
    assert recognise(text) == ["basic_auth"]
    assert redact_text(text) == (
        "use Basic authentication, or Basic [redacted:basic_auth]",
        ["basic_auth"],
    )
    assert redact_text(text, label="x") == (
        "use Basic authentication, or Basic [redacted:x]",
        ["basic_auth"],
    )


@pytest.mark.parametrize(
    "secret",
    ["dXNlcjpw", "dXNlcjo", "dXNlcjo=", "YTpi", "YTo6"],
)
def test_basic_credentials_are_redacted(secret):
    assert recognise(f"Basic {secret}") == ["basic_auth"]
    assert redact_text(f"Basic {secret}") == ("Basic [redacted:basic_auth]", ["basic_auth"])


@pytest.mark.parametrize(
    "secret",
    ["dXNlcg", "dXNlcg==", "abcde", "dXNlcjo==", "authentication", "abcdefghijk"],
)
def test_basic_values_that_are_not_credentials_are_kept(secret):
    assert recognise(f"Basic {secret}") == []
    assert redact_text(f"Basic {secret}") == (f"Basic {secret}", [])


def test_hint_must_be_present_in_the_lowered_text():
    text = "ba\u017fic dXNlcjpwYXNz"
    assert recognise(text) == []
    assert redact_text(text) == (text, [])


def test_lone_surrogates_read_as_question_marks():
    text = "x \ud800 Bearer abcdefghijklmnopqrstu"
    assert recognise(text) == ["bearer_token"]
    assert redact_text(text) == ("x ? Bearer [redacted:bearer_token]", ["bearer_token"])
    assert redact_text("caf\u00e9 \ud800 plain words") == ("caf\u00e9 ? plain words", [])


def test_non_ascii_text_is_redacted():
    text = "cl\u00e9 \u2014 Bearer Vq9Lm2Xc8Rt4Zp7Kd3 \u00fc"
    assert recognise(text) == ["bearer_token"]
    assert redact_text(text) == (
        "cl\u00e9 \u2014 Bearer [redacted:bearer_token] \u00fc",
        ["bearer_token"],
    )


def test_text_without_any_credential_is_returned_as_is():
    text = "nothing secret here, just plain words"
    assert recognise(text) == []
    assert redact_text(text) == (text, [])


def test_recogniser_by_name():
    item = recogniser("jwt")
    assert item.name == "jwt"
    assert item.min_length == 18
    assert item.hints == ("eyj",)
    with pytest.raises(KeyError):
        recogniser("nope")


def test_compiled_patterns():
    assert compiled("jwt").pattern == recogniser("jwt").pattern
    assert compiled().pattern == "|".join(f"(?:{item.pattern})" for item in RECOGNISERS)
    assert compiled(None) is compiled()


def test_shortest():
    assert shortest() == 5
    assert shortest(None) == 5
    assert shortest("jwt") == 18
    assert shortest("aws_secret_key") == 40


def test_could_hold_one_recogniser_at_its_bound():
    assert could_hold("jwt", "eyJ" + "a" * 15) is True
    assert could_hold("jwt", "eyJ" + "a" * 14) is False
    assert could_hold("jwt", "x" * 100) is False
    assert could_hold("jwt", "EYJ" + "a" * 15) is True


def test_could_hold_the_table():
    assert could_hold(None, "?key=") is True
    assert could_hold(None, "?key") is False
    assert could_hold(None, "x" * 100) is False
    assert could_hold(None, "BEARER " + "a" * 16) is True
    assert could_hold(None, "bearer") is False


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("password", True),
        ("api_key", True),
        ("Authorization", True),
        ("clientSecret", True),
        ("csrftoken", True),
        ("db-pass", True),
        ("\ud800password", True),
        ("passenger", False),
        ("tool", False),
        ("", False),
        ("x" * 201, False),
        ("password" + "x" * 193, False),
    ],
)
def test_secret_name(name, expected):
    assert secret_name(name) is expected


def test_secret_name_of_a_non_string():
    assert secret_name(123) is False
    assert secret_name(None) is False


def test_redact_value_redacts_secret_keys_and_credentials():
    value = {
        "password": "hunter2",
        "note": "Bearer Vq9Lm2Xc8Rt4Zp7Kd3",
        "items": ["AKIAIOSFODNN7EXAMPLE", 3, ("plain", {"token": "x"})],
        "custom": "visible",
        "keep": "kept",
        7: None,
    }
    assert redact_value(value, secret_keys=frozenset({"custom"})) == {
        "password": REDACTED,
        "note": "Bearer [redacted:bearer_token]",
        "items": ["[redacted:aws_access_key]", 3, ["plain", {"token": REDACTED}]],
        "custom": REDACTED,
        "keep": "kept",
        "7": None,
    }


def test_redact_value_passes_secret_keys_down():
    value = {"outer": {"custom": "a"}, "list": [{"custom": "b"}]}
    assert redact_value(value, secret_keys=frozenset({"custom"})) == {
        "outer": {"custom": REDACTED},
        "list": [{"custom": REDACTED}],
    }


def test_redact_value_without_secrets():
    assert redact_value({"name": "ok", "n": 1}) == {"name": "ok", "n": 1}
    assert redact_value("ghp_R2d2C3poBb8Kx9Lm0Nq1Pr4St7Uv5Wy6Za3Yb") == "[redacted:github_token]"
    assert redact_value(4.5) == 4.5
    assert REDACTED == "[redacted]"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_redact_value_redacts_every_shape_again_and_never_remembers_it(name):
    # Short strings found clean are remembered (a record's `typed`, `turn 0`, tool names repeat):
    # a secret must be redacted the second time too, and never be held by that cache.
    from firewall.engine import credentials

    sample = SAMPLES[name]
    for _ in range(2):
        assert redact_value({"v": [sample]}) == {"v": [REDACTED_SAMPLES[name]]}
    assert sample not in credentials._CLEAN


def test_redact_value_remembers_short_clean_strings_within_a_bound(monkeypatch):
    from firewall.engine import credentials

    monkeypatch.setattr(credentials, "_CLEAN_MAX", 3)
    credentials._short_redacted.cache_clear()
    for text in ("typed", "turn 0", "refunds"):
        assert redact_value(text) == text
    assert credentials._CLEAN == {"typed", "turn 0", "refunds"}
    assert credentials._short_redacted.cache_info() == 3
    assert redact_value("lookup_7") == "lookup_7"
    assert credentials._CLEAN == {"lookup_7"}  # full: started again
    long = "x" * (credentials._SHORT + 1)
    assert redact_value(long) == long
    assert long not in credentials._CLEAN
    at_bound = "y" * credentials._SHORT
    assert redact_value(at_bound) == at_bound
    assert at_bound in credentials._CLEAN
    credentials._short_redacted.cache_clear()
    assert credentials._CLEAN == set()


class _Text(str):
    pass


def test_redact_value_redacts_a_str_subclass():
    assert redact_value([_Text("Bearer Vq9Lm2Xc8Rt4Zp7Kd3")]) == ["Bearer [redacted:bearer_token]"]
    assert redact_value(_Text("plain")) == "plain"
