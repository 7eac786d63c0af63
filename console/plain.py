"""Decisions in plain language, beside their codes, in the organisation's language (en, pt-BR).

A reason is a code, sometimes with what it is about (`argument_origin: amount`); each known code has
a sentence in each language, with `{about}` standing for that part. A code without a sentence is
shown as it is: a person always sees the code, and the sentence only ever explains it.
"""

from __future__ import annotations

from typing import Any

#: code -> (English, pt-BR); `{about}` is what follows the code's colon.
REASONS: dict[str, tuple[str, str]] = {
    "unknown_tool": ("the tool is not in the catalogue", "a ferramenta não está no catálogo"),
    "agent_required": ("the call must name its agent", "a chamada precisa nomear o seu agente"),
    "licence_lapsed": ("the licence has lapsed", "a licença venceu"),
    "history_invalid": (
        "the session's record of calls was altered",
        "o registro de chamadas da sessão foi alterado",
    ),
    "argument_schema": (
        "an argument does not fit the tool's description ({about})",
        "um argumento não cabe na descrição da ferramenta ({about})",
    ),
    "undeclared_destination": (
        "an address was given to a tool that does not send anything out",
        "um endereço foi dado a uma ferramenta que não envia nada para fora",
    ),
    "order_rule": (
        "the tool may not run at this point ({about})",
        "a ferramenta não pode rodar neste ponto ({about})",
    ),
    "compensation_spent": ("that step was already undone", "esse passo já foi desfeito"),
    "compensation_mismatch": (
        "the undo does not match the step it undoes",
        "o desfazer não corresponde ao passo que desfaz",
    ),
    "condition_failed": (
        "a condition of the tool did not hold",
        "uma condição da ferramenta não valeu",
    ),
    "condition_unknown": (
        "a condition of the tool could not be read",
        "uma condição da ferramenta não pôde ser lida",
    ),
    "usage_unknown": ("the tool's usage was not reported", "o uso da ferramenta não foi informado"),
    "limit_reached": (
        "the tool's limit for the period is reached",
        "o limite da ferramenta no período foi atingido",
    ),
    "spend_unknown": ("what was spent was not reported", "o gasto não foi informado"),
    "spend_exceeded": (
        "the call would spend more than allowed",
        "a chamada gastaria mais que o permitido",
    ),
    "cost_unknown": (
        "what the call costs could not be known",
        "o custo da chamada não pôde ser conhecido",
    ),
    "cost_exceeded": (
        "the call would take the run's cost past its cap",
        "a chamada levaria o custo da execução além do limite",
    ),
    "tainted_call": (
        "it was proposed after reading outside content",
        "foi proposta depois de ler conteúdo de fora",
    ),
    "confirmed": (
        "a person approved exactly this call",
        "uma pessoa aprovou exatamente esta chamada",
    ),
    "gate_clarify": ("the rulebook asks a person", "o rulebook pergunta a uma pessoa"),
    "argument_origin": (
        "the {about} came from the model, not from you",
        "o valor de {about} veio do modelo, não de você",
    ),
    "irreversible_pivot": ("the write cannot be undone", "a escrita não pode ser desfeita"),
    "schema_partial": (
        "the tool's description is incomplete",
        "a descrição da ferramenta está incompleta",
    ),
    "write": ("every write waits for a person's yes", "toda escrita espera o sim de uma pessoa"),
    "compensation": ("it undoes an earlier step", "desfaz um passo anterior"),
    "s1_veto": (
        "you asked to send something out and no tool sends",
        "você pediu para enviar algo e nenhuma ferramenta envia",
    ),
    "s2_veto": (
        "you named a destination the call does not reach",
        "você nomeou um destino que a chamada não alcança",
    ),
    "confirm_read": (
        "a value differs from what you said ({about})",
        "um valor difere do que você disse ({about})",
    ),
    "session_held": (
        "the session is on hold after an alert",
        "a sessão está retida depois de um alerta",
    ),
    "tool_disabled": (
        "the tool was switched off after an alert",
        "a ferramenta foi desligada depois de um alerta",
    ),
    "no_active_policy": ("no firewall policy is active", "nenhuma política de firewall está ativa"),
    "policy_invalid": (
        "the firewall policy no longer compiles",
        "a política de firewall não compila mais",
    ),
    "confirmation_denied": ("a person said no", "uma pessoa disse não"),
    "withdrawn": ("the tool was withdrawn", "a ferramenta foi retirada"),
}

VERDICTS = {
    "en": {"allow": "allowed", "confirm": "asked", "refuse": "refused"},
    "pt-BR": {"allow": "permitida", "confirm": "perguntada", "refuse": "recusada"},
}

RULE = {"en": "the rule {rule} decided", "pt-BR": "a regra {rule} decidiu"}


def reason_text(reason: str, language: str = "en") -> str | None:
    """The sentence of one reason, or None when the code has none."""
    code, _, about = reason.partition(":")
    sentences = REASONS.get(code.strip())
    if sentences is None:
        return None
    sentence = sentences[1 if language == "pt-BR" else 0]
    return sentence.format(about=about.strip() or code.strip())


def plain_decision(event: Any, language: str | None = None) -> str:
    """`refused: the amount came from the model, not from you` for an event, in its language."""
    if language is None:
        settings = getattr(getattr(event, "organisation", None), "settings", None)
        language = getattr(settings, "language", "en") or "en"
    language = "pt-BR" if language == "pt-BR" else "en"
    decision = getattr(event, "decision", "") or ""
    head = VERDICTS[language].get(decision, decision)
    sentences = [s for s in (reason_text(r, language) for r in event.reasons or []) if s]
    if not sentences and getattr(event, "rule", ""):
        sentences = [RULE[language].format(rule=event.rule)]
    return f"{head}: {'; '.join(sentences)}" if sentences else head
