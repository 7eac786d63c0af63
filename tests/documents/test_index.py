"""The documents' index: kept up to date file by file, and only for the files that changed."""

from __future__ import annotations

import os

from stalwart_agents import Agent


def ask(agent: Agent, question: str, user: str):
    agent.chat(question, user=user)
    return agent.chat(question, user=user)


def test_the_first_build_reads_every_file_and_the_second_reads_none(shop):
    first = Agent.from_file(shop, verify=False).extras.documents
    assert sorted(first.last.read) == [
        "policies/returns.md",
        "policies/shipping.html",
        "policies/warranty.pdf",
    ]
    again = Agent.from_file(shop, verify=False).extras.documents
    assert again.last.read == [] and len(again.last.unchanged) == 3
    assert (shop.parent / ".stalwart" / "documents.sqlite3").is_file()


def test_a_changed_file_is_read_again_and_its_new_text_answers(shop):
    agent = Agent.from_file(shop, verify=False)
    question = "how many days do I have to return an item?"
    assert "30 days" in ask(agent, question, "before").text
    returns = shop.parent / "policies" / "returns.md"
    text = returns.read_text(encoding="utf-8").replace("within 30 days", "within 60 days")
    returns.write_text(text, encoding="utf-8")
    stamp = returns.stat()
    os.utime(returns, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    reply = ask(agent, question, "after")  # a new conversation brings the index up to date
    assert "60 days" in reply.text and "policies/returns.md:7" in reply.text
    assert agent.extras.documents.last.read == ["policies/returns.md"]
    assert sorted(agent.extras.documents.last.unchanged) == [
        "policies/shipping.html",
        "policies/warranty.pdf",
    ]


def test_a_file_touched_but_not_changed_is_not_read_again(shop):
    agent = Agent.from_file(shop, verify=False)
    shipping = shop.parent / "policies" / "shipping.html"
    stamp = shipping.stat()
    os.utime(shipping, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    done = agent.extras.documents.refresh()
    assert done.touched == ["policies/shipping.html"] and done.read == []
    assert agent.extras.documents.refresh().unchanged  # its new time is held now


def test_a_removed_file_leaves_the_index_and_answers_no_more(shop):
    agent = Agent.from_file(shop, verify=False)
    question = "when does express delivery arrive?"
    assert "next business day" in ask(agent, question, "before").text
    (shop.parent / "policies" / "shipping.html").unlink()
    reply = ask(agent, question, "after")
    assert agent.extras.documents.last.removed == ["policies/shipping.html"]
    assert reply.text == "Sorry, I found nothing in our documents that answers that."
    assert "policies/shipping.html" not in agent.extras.documents.index.files()


def test_a_new_file_in_a_folder_is_read_and_hidden_files_are_not(shop):
    policies = shop.parent / "policies"
    (policies / "gifts.txt").write_text(
        "Gift cards\nA gift card never expires and can be spent online.\n", encoding="utf-8"
    )
    (policies / ".draft.md").write_text("Gift cards expire after a week.\n", encoding="utf-8")
    (policies / "notes.docx").write_bytes(b"not a kind read here")
    agent = Agent.from_file(shop, verify=False)
    assert "policies/gifts.txt" in agent.extras.documents.last.read
    assert set(agent.extras.documents.index.files()) == {
        "policies/gifts.txt",
        "policies/returns.md",
        "policies/shipping.html",
        "policies/warranty.pdf",
    }
    reply = ask(agent, "does a gift card expire?", "gifts")
    assert reply.text == (
        "A gift card never expires and can be spent online. (from policies/gifts.txt:2)"
    )


def test_a_brazilian_question_is_answered_from_a_brazilian_passage(tmp_path):
    from router.engine.answer import Retrieved
    from router.engine.grammars import base_lexicon
    from stalwart_agents.documents.index import DocumentIndex

    (tmp_path / "trocas.md").write_text(
        "# Trocas\n\nVocê pode trocar um produto em até 30 dias após a entrega.\n\n"
        "O estorno leva até cinco dias úteis para aparecer na fatura do cartão.\n",
        encoding="utf-8",
    )
    index = DocumentIndex(":memory:", root=tmp_path)
    index.refresh([tmp_path / "trocas.md"])
    composer = Retrieved(index, base_lexicon("pt-BR"))
    answer = composer.answer("quanto tempo o estorno leva pra aparecer na fatura?")
    assert answer.source == "trocas.md:5" and "cinco dias úteis" in answer.text
    assert composer.answer("qual é o sentido da vida?") is None
