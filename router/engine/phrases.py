"""The router's fixed phrasings, in English and pt-BR: questions, refusals and template replies.

Every sentence the router or the runner says without a model comes from here (a conversation may
override any of them by key, `replies={"done": "..."}`), so what a person reads is known in advance
and reviewable. Placeholders are `str.format` fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

#: How much of a tool's description a question quotes, and of one value it shows.
QUESTION_WHAT_CHARS = 200
QUESTION_VALUE_CHARS = 120


def visible(text: str) -> str:
    """`text` with every character that is not printable (a line break, a tab, a control or
    direction mark) written as its escape, so a value can never start a line of its own in a
    question or turn what follows it around."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "say_again": "Sorry, I could not read that. Could you say it again in other words?",
        "hint_unknown": "I do not know the words: {words}.",
        "hint_pt_pt": "I read Brazilian Portuguese, not European Portuguese.",
        "hint_value": "I could not read {values}: {how}.",
        "hint_several": "One request at a time, please.",
        "hint_negated": "Tell me what to do rather than what not to do.",
        "hint_question": "I can run the tools I have; I cannot answer how-to questions.",
        "hint_refers": "Please say the whole request: I do not carry one over from another turn.",
        "hint_no_tool": "None of my tools does that.",
        "hint_empty": "There was nothing I could act on.",
        "hint_too_long": "Please keep a request short.",
        "ask_missing": "To {action}, I need {labels}.",
        "ask_options": "Which one: {options}?",
        "ask_tool": "Which of these did you mean: {options}?",
        "ask_invalid": "{values} does not fit {labels}.",
        "ask_model": "I cannot handle that myself. May I pass your message to the assistant's "
        "model?",
        "confirm": "Shall I {action} with {arguments}?",
        "confirm_question": "{what} ({arguments}). Shall I go ahead?",
        "confirm_question_bare": "{what}. Shall I go ahead?",
        "run_tool": "Run {tool}",
        "yes": "yes",
        "no": "no",
        "declined": "I can't do that: {reason}.",
        "declined_rule": "I can't do that: {reason} (rule {rule}).",
        "unread_refused": "Sorry, I can't help with that.",
        "no_answer": "Sorry, I found nothing in our documents that answers that.",
        "answer": "{text} (from {source})",
        "done": "Done: {action} ({result}).",
        "already_done": "Already done: {action} had run with the same request ({result}).",
        "result": "{action}: {result}.",
        "refused": "That was not done: {reasons}.",
        "cancelled": "OK, I did not {action}.",
        "held_on_console": "This conversation is held by the security team: before I {action}, "
        "their approvers must say yes on the console (request {request}). Say yes again once "
        "they have.",
        "model_refused": "OK, I will not pass it on.",
        "model_unavailable": "Sorry, I can't help with that: the model could not answer "
        "({reason}). Nothing was run.",
        "computed": "The answer is {result}.",
        "failed": "{action} failed: {error}.",
        "undone": "What this request had done was undone, last first: {steps}.",
        "and": "and",
        "none": "nothing",
        "run": "run {tool}",
    },
    "pt-BR": {
        "say_again": "Desculpe, não consegui entender. Pode dizer de outro jeito?",
        "hint_unknown": "Não conheço as palavras: {words}.",
        "hint_pt_pt": "Leio português do Brasil, não português europeu.",
        "hint_value": "Não consegui ler {values}: {how}.",
        "hint_several": "Um pedido de cada vez, por favor.",
        "hint_negated": "Diga o que fazer, em vez do que não fazer.",
        "hint_question": "Consigo executar as ferramentas que tenho; não respondo perguntas de "
        "como fazer.",
        "hint_no_tool": "Nenhuma das minhas ferramentas faz isso.",
        "hint_refers": "Diga a solicitação inteira, por favor: não trago uma de outro turno.",
        "hint_empty": "Não havia nada que eu pudesse fazer.",
        "hint_too_long": "Por favor, faça um pedido curto.",
        "ask_missing": "Para {action}, preciso de {labels}.",
        "ask_options": "Qual deles: {options}?",
        "ask_tool": "Qual destas você quis dizer: {options}?",
        "ask_invalid": "{values} não serve como {labels}.",
        "ask_model": "Não consigo tratar isso sozinho. Posso passar sua mensagem ao modelo do "
        "assistente?",
        "confirm": "Posso {action} com {arguments}?",
        "confirm_question": "{what} ({arguments}). Posso seguir?",
        "confirm_question_bare": "{what}. Posso seguir?",
        "run_tool": "Executar {tool}",
        "yes": "sim",
        "no": "não",
        "declined": "Não posso fazer isso: {reason}.",
        "declined_rule": "Não posso fazer isso: {reason} (regra {rule}).",
        "unread_refused": "Desculpe, não posso ajudar com isso.",
        "no_answer": "Desculpe, não encontrei nada nos nossos documentos que responda isso.",
        "answer": "{text} (de {source})",
        "done": "Feito: {action} ({result}).",
        "already_done": "Já feito: {action} já tinha rodado com o mesmo pedido ({result}).",
        "result": "{action}: {result}.",
        "refused": "Isso não foi feito: {reasons}.",
        "cancelled": "Certo, não vou {action}.",
        "held_on_console": "Esta conversa está retida pela equipe de segurança: antes de "
        "{action}, os aprovadores precisam dizer sim no console (pedido {request}). Diga sim de "
        "novo quando tiverem respondido.",
        "model_refused": "Certo, não vou repassar.",
        "model_unavailable": "Desculpe, não posso ajudar com isso: o modelo não respondeu "
        "({reason}). Nada foi executado.",
        "computed": "O resultado é {result}.",
        "failed": "{action} falhou: {error}.",
        "undone": "O que este pedido já tinha feito foi desfeito, do último ao primeiro: {steps}.",
        "and": "e",
        "none": "nada",
        "run": "executar {tool}",
    },
}

# How a concept is named in a question, where the argument's own name is not plain enough.
LABELS: dict[str, dict[str, str]] = {
    "en": {},
    "pt-BR": {
        "order": "o pedido",
        "amount": "o valor",
        "email": "o e-mail",
        "note": "a nota",
        "site": "o site",
        "status": "a situação",
        "card": "o cartão",
        "customer": "o cliente",
        "reason": "o motivo",
        "text": "o texto",
        "limit": "o limite",
        "since": "a data",
        "date": "a data",
        "channel": "o canal",
        "message": "a mensagem",
    },
}


class Phrases:
    """The phrasings of one language, with a conversation's own overrides."""

    def __init__(self, language: str, overrides: Mapping[str, str] | None = None) -> None:
        self.language = language
        self._table = {**PHRASES[language], **dict(overrides or {})}

    def __call__(self, key: str, **fields: Any) -> str:
        return self._table[key].format(**fields)

    def join(self, parts: Sequence[str]) -> str:
        parts = [p for p in parts if p]
        if not parts:
            return self("none")
        if len(parts) == 1:
            return parts[0]
        return ", ".join(parts[:-1]) + f" {self('and')} " + parts[-1]

    def label(self, name: str, words: Sequence[str]) -> str:
        """How an argument is named in a question: "the order (order_id)", "o valor (amount)"."""
        table = LABELS[self.language]
        for word in words:
            if word in table:
                return f"{table[word]} ({name})"
        if self.language == "en":
            plain = " ".join(w for w in words if w != "id") or name
            return f"the {plain} ({name})" if plain != name else f"the {name}"
        return f"`{name}`"

    def number(self, value: Any) -> str:
        """A number as the language writes it (`40,00` in pt-BR)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return str(value)
        if isinstance(value, int):
            text = f"{value:,}"
        else:
            text = f"{value:,.2f}" if value == round(value, 2) else f"{value:,}"
        if self.language == "pt-BR":
            text = text.replace(",", "\0").replace(".", ",").replace("\0", ".")
        return text

    def value(self, value: Any) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self.number(value)
        return str(value)

    def arguments(self, arguments: Mapping[str, Any], said: Mapping[str, str] | None = None) -> str:
        said = said or {}
        parts = [f"{name} {said.get(name) or self.value(v)}" for name, v in arguments.items()]
        return self.join(parts)

    # -- the question a person is asked before a write runs ------------------------------------

    def title(self, name: str, schema: Any = None) -> str:
        """What an argument is called in a question: its JSON Schema `title`, else a word of the
        language's table ("valor"), else its name in words ("order id"); never the identifier."""
        if isinstance(schema, Mapping):
            title = schema.get("title")
            if isinstance(title, str) and title.strip():
                return _lower_first(title.strip())
        words = [w for w in name.replace("-", "_").replace(".", "_").split("_") if w]
        for word in words:
            found = LABELS[self.language].get(word.lower())
            if found:
                return found.split(" ", 1)[-1]  # "o valor" -> "valor"
        return " ".join(words) or name

    def shown(self, value: Any) -> str:
        """A value as a person reads it: numbers in the language's way, yes/no, compact JSON."""
        if isinstance(value, bool):
            text = self("yes") if value else self("no")
        elif isinstance(value, (int, float)):
            text = self.number(value)
        elif isinstance(value, str):
            text = visible(value)
        else:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if len(text) > QUESTION_VALUE_CHARS:
            text = text[: QUESTION_VALUE_CHARS - 1] + "…"
        return text

    def question(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        description: str = "",
        parameters: Any = None,
        said: Mapping[str, str] | None = None,
    ) -> str:
        """The confirm question, made from the tool's description and its parameters' titles:
        "Refunds the card on file for an order (order 4411 and amount 40.00). Shall I go ahead?"

        A value the person said is shown as they said it (`said`); without a description the tool's
        name is said in words.
        """
        what = " ".join(str(description or "").split())
        what = what.rstrip(" .;:")
        if len(what) > QUESTION_WHAT_CHARS:
            what = what[: QUESTION_WHAT_CHARS - 1].rstrip() + "…"
        if not what:
            spoken = " ".join(w for w in tool.replace(".", "_").split("_") if w) or tool
            what = self("run_tool", tool=spoken)
        properties: Mapping[str, Any] = {}
        required: list[str] = []
        if isinstance(parameters, Mapping):
            if isinstance(parameters.get("properties"), Mapping):
                properties = parameters["properties"]
            if isinstance(parameters.get("required"), list):
                required = [str(n) for n in parameters["required"]]
        # The schema's order (its `required` list, then its properties), not the arguments': a
        # stored call's keys come back in the database's order (PostgreSQL's jsonb sorts them).
        known = [*required, *(n for n in properties if n not in required)]
        names = sorted(
            arguments, key=lambda n: (known.index(n) if n in known else len(known), str(n))
        )
        said = said or {}
        parts = [
            f"{self.title(name, properties.get(name))} {said.get(name) or self.shown(arguments[name])}"
            for name in names
        ]
        if not parts:
            return self("confirm_question_bare", what=what)
        return self("confirm_question", what=what, arguments=self.join(parts))


def _lower_first(text: str) -> str:
    """A title inside a sentence: "Amount" -> "amount", but "ID" or "URL" stays as written."""
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].lower() + text[1:]


def confirm_question(
    language: str,
    tool: str,
    arguments: Mapping[str, Any],
    *,
    entry: Any = None,
    said: Mapping[str, str] | None = None,
) -> str:
    """The confirm question of a call in `language`, from its catalogue entry (a loaded tool or
    its JSON: `description` and `parameters`); see `Phrases.question`."""
    if isinstance(entry, Mapping):
        description, parameters = entry.get("description") or "", entry.get("parameters")
    else:
        description = getattr(entry, "description", "") or ""
        parameters = getattr(entry, "parameters", None)
    phrases = Phrases(language if language in PHRASES else "en")
    return phrases.question(
        tool, arguments, description=str(description), parameters=parameters, said=said
    )
