"""An API key's name: printable and at most 100 characters, on the page and in the service."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from console import services
from console.models import ApiKey

UNPRINTABLE = ["pager\nadmin", "pager\radmin", "tab\there", "nul\x00", "bell\x07", "line\u2028sep"]


@pytest.mark.parametrize("name", UNPRINTABLE)
def test_a_key_name_with_a_control_character_is_refused_naming_the_field(
    name, admin, organisation, actor_for
):
    with pytest.raises(ValidationError) as refused:
        services.api_key_create(actor=actor_for(admin, organisation), name=name, role="editor")
    assert refused.value.message_dict == {
        "name": ["a key's name must not contain control characters"]
    }
    assert not ApiKey.objects.exists()


def test_a_key_name_longer_than_the_column_is_refused(admin, organisation, actor_for):
    actor = actor_for(admin, organisation)
    with pytest.raises(ValidationError) as refused:
        services.api_key_create(actor=actor, name="k" * 101, role="editor")
    assert refused.value.message_dict == {"name": ["a key's name must be at most 100 characters"]}
    key, _ = services.api_key_create(actor=actor, name="k" * 100, role="editor")
    assert key.name == "k" * 100


def test_a_key_name_that_is_not_text_is_refused(admin, organisation, actor_for):
    with pytest.raises(ValidationError) as refused:
        services.api_key_create(actor=actor_for(admin, organisation), name=None, role="editor")
    assert refused.value.message_dict == {"name": ["a key needs a name"]}


def test_a_printable_key_name_is_kept_as_given_without_its_outer_spaces(
    admin, organisation, actor_for
):
    key, _ = services.api_key_create(
        actor=actor_for(admin, organisation), name="  ops pager — São Paulo ", role="editor"
    )
    assert key.name == "ops pager — São Paulo"


@pytest.mark.parametrize("name", UNPRINTABLE)
def test_the_api_keys_page_refuses_a_key_name_with_a_control_character(name, admin, client_for):
    answer = client_for(admin).post("/api-keys/create", {"name": name, "role": "editor"})
    assert answer.status_code == 400
    page = answer.content.decode()
    assert "must not contain control characters" in page or "Null characters" in page
    assert not ApiKey.objects.exists()


def test_the_api_keys_page_refuses_a_key_name_over_100_characters(admin, client_for):
    answer = client_for(admin).post("/api-keys/create", {"name": "k" * 101, "role": "editor"})
    assert answer.status_code == 400
    assert not ApiKey.objects.exists()
