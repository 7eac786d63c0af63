"""Reading a turn: everyday words, a typo that its place settles, and a verb with its particle."""

from __future__ import annotations

from .conftest import router_for


def test_a_greeting_before_the_request_is_nothing_but_the_same_word_later_is_not_read():
    router = router_for("shop", "en")
    assert router.read("morning! show order 4411").unknown == []
    assert router.read("show the orders from this morning").unknown == ["morning"]


def test_everyday_words_around_a_request_are_nothing_in_both_languages():
    en = router_for("shop", "en")
    pt = router_for("shop", "pt-BR")
    assert en.read("good afternoon, hope you're doing well. show order 4411, cheers").unknown == []
    assert pt.read("boa tarde, com licença, mostra o pedido 4411, abraço").unknown == []
    assert en.read("nice order 4411").unknown == ["nice"]  # a word alone keeps no meaning


def test_a_typo_after_a_little_word_and_before_a_number_is_the_one_noun_it_can_be():
    router = router_for("shop", "pt-BR")
    reading = router.read("mostra o status do pedio 4411")
    assert reading.typos == [("pedio", "pedido")]
    assert reading.nouns[-1].concept == "order"


def test_a_typo_whose_place_does_not_settle_it_stays_unknown():
    router = router_for("shop", "pt-BR")
    assert router.read("pedio 4411").unknown == ["pedio"]  # at the head: a verb could stand there
    assert router.read("o pedio").unknown == ["pedio"]  # no number after it


def test_a_light_verb_with_its_particle_is_the_action():
    en = router_for("shop", "en")
    pt = router_for("shop", "pt-BR")
    assert [w.concept for w in en.read("give the customer $20 back on order 4411").verbs] == [
        "refund"
    ]
    assert [w.concept for w in pt.read("passa R$ 35 no cartão do pedido 3390").verbs] == ["charge"]
    # Without the particle, "me passa" and "give" still show.
    assert pt.read("me passa o pedido 3390").verbs == []
    assert en.read("charge back order 4411").unknown == ["back"]


def test_only_the_whole_of_an_amount_is_marked_as_asked_for():
    router = router_for("shop", "en")
    assert router.read("refund the full amount of order 4411").whole
    assert not router.read("refund order 4411").whole
