"""`documents:` in agent.yaml: checked and bounded, each problem naming its key and its line."""

from __future__ import annotations

import pytest

from stalwart_agents import Agent
from stalwart_agents.agent import AgentFileError
from stalwart_agents.cli_verify import schema_problems

HEAD = """agents:
  desk:
    tools: [get_order]
    on_unread: answer
tools:
  - python: docshop_tools
"""


def refused(shop, documents: str) -> str:
    shop.write_text(HEAD + documents, encoding="utf-8")
    with pytest.raises(AgentFileError) as caught:
        Agent.from_file(shop, verify=False)
    return str(caught.value)


def test_the_short_form_lists_files_and_folders(shop):
    shop.write_text(HEAD + "documents: [./policies/returns.md, policies]\n", encoding="utf-8")
    agent = Agent.from_file(shop, verify=False)
    assert len(agent.extras.documents.index.files()) == 3
    assert agent.extras.documents.composer == "extract"


def test_a_path_that_does_not_exist_is_named_with_its_line(shop):
    message = refused(shop, "documents:\n  paths:\n    - ./policies\n    - ./faq.html\n")
    assert message == "agent.yaml:10: documents.paths[1]: `./faq.html` does not exist"


def test_an_absolute_path_is_refused(shop):
    message = refused(shop, "documents: [/etc]\n")
    assert message == "agent.yaml:7: documents[0]: `/etc` must be relative to agent.yaml's folder"


def test_every_problem_is_reported_at_once(shop):
    message = refused(shop, "documents:\n  paths: [policies]\n  composer: poet\n  pages: 3\n")
    assert "agent.yaml:9: documents.composer: is one of extract, model" in message
    assert "agent.yaml:10: documents.pages: is not a key of `documents`" in message


def test_more_files_than_max_files_are_refused(shop):
    message = refused(shop, "documents:\n  paths: [policies]\n  max_files: 2\n")
    assert message == "agent.yaml:9: documents.max_files: the paths hold 3 files, more than 2"


def test_a_file_larger_than_max_file_bytes_is_refused(shop):
    message = refused(shop, "documents:\n  paths: [policies]\n  max_file_bytes: 500\n")
    assert "agent.yaml:9: documents.max_file_bytes: `policies/" in message
    assert "more than 500" in message


def test_a_file_of_another_kind_named_directly_is_refused(shop):
    (shop.parent / "notes.docx").write_bytes(b"PK")
    message = refused(shop, "documents: [notes.docx]\n")
    assert message.startswith("agent.yaml:7: documents[0]: `notes.docx` is not one of")


def test_a_pdf_that_cannot_be_read_is_refused_naming_it(shop):
    (shop.parent / "policies" / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf")
    message = refused(shop, "documents: [policies]\n")
    assert message.startswith("agent.yaml:7: documents: `policies/broken.pdf`")


def test_text_that_is_not_utf8_is_refused_naming_it(shop):
    (shop.parent / "policies" / "latin.txt").write_bytes("caf\xe9 ferm\xe9".encode("latin-1"))
    message = refused(shop, "documents: [policies]\n")
    assert message == "agent.yaml:7: documents: `policies/latin.txt` is not UTF-8 text"


def test_the_published_schema_takes_documents_and_names_a_bad_one_with_its_line():
    good = HEAD + "documents:\n  paths: [policies]\n  composer: model\n"
    assert schema_problems(good, "agent.yaml") == []
    assert schema_problems(HEAD + "documents: [policies]\n", "agent.yaml") == []
    bad = schema_problems(
        HEAD + "documents:\n  paths: [policies]\n  composer: poet\n", "agent.yaml"
    )
    assert len(bad) == 1 and bad[0].startswith("agent.yaml:9: documents.composer:")


def test_an_index_that_cannot_be_kept_is_refused_naming_it(shop):
    (shop.parent / "blocked").write_text("a file, not a folder", encoding="utf-8")
    message = refused(shop, "documents:\n  paths: [policies]\n  index: blocked/index.sqlite3\n")
    assert message.startswith(
        "agent.yaml:9: documents.index: the index cannot be kept at `blocked/index.sqlite3`:"
    )


def test_documents_that_are_neither_a_list_nor_a_mapping_are_refused(shop):
    message = refused(shop, "documents: 5\n")
    assert message == (
        "agent.yaml:7: documents: must be a list of files or folders, or `{paths: [...]}`"
    )
    assert refused(shop, "documents: []\n") == (
        "agent.yaml:7: documents: must list at least one file or folder"
    )
