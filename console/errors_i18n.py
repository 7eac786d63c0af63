"""Inline form errors in the organisation's language: our own messages, said again in pt-BR.

Django's own form messages ("Ensure this value is greater than or equal to 1.") come translated
from Django's catalogue once the organisation's language is active (`console.middleware.
OrganisationLanguageMiddleware`); the messages the console, its services and the engines write
are English and are said again here, phrase by phrase, longest first, so a message built from
parts ("must be between -2147483648 and 2147483647") is translated around its values. A phrase
the table does not hold stays as written (a value in backticks never changes).
"""

from __future__ import annotations

import re

from django.utils import translation

#: English phrase -> pt-BR, for the messages the console's forms show.
PT_BR: dict[str, str] = {
    # the firewall's validator (the rule editor, import, Try a call)
    "is required (it may be an empty list)": "é obrigatório (pode ser uma lista vazia)",
    "is required for the `sanitize` verdict": "é obrigatório com o veredito `sanitize`",
    "is required for the `cap_cost` verdict": "é obrigatório com o veredito `cap_cost`",
    "is used only with the `sanitize` verdict": "só se usa com o veredito `sanitize`",
    "is used only with the `cap_cost` verdict": "só se usa com o veredito `cap_cost`",
    "is required": "é obrigatório",
    # a refusal for want of a role (console.views.permission_denied)
    "the admin role cannot do": "o papel admin não pode fazer",
    "the editor role cannot do": "o papel editor não pode fazer",
    "the approver role cannot do": "o papel approver não pode fazer",
    "the auditor role cannot do": "o papel auditor não pode fazer",
    "your role cannot do this": "o seu papel não pode fazer isto",
    "unknown field": "campo desconhecido",
    "not a field of a call": "não é um campo de uma chamada",
    "must not be negative": "não pode ser negativo",
    "the name must not be blank": "o nome não pode ficar em branco",
    "must not be blank": "não pode ficar em branco",
    "must not contain control characters": "não pode conter caracteres de controle",
    "must be an integer or a string": "precisa ser um inteiro ou um texto",
    "must be an integer": "precisa ser um número inteiro",
    "must be a positive integer": "precisa ser um inteiro positivo",
    "must be a string": "precisa ser um texto",
    "must be a list of rules": "precisa ser uma lista de regras",
    "must be a list of clauses": "precisa ser uma lista de cláusulas",
    "must be `true` or `false`": "precisa ser `true` ou `false`",
    "must be one of": "precisa ser um de",
    "or empty for every stage": "ou vazio para todos os estágios",
    "must be at most": "precisa ser no máximo",
    "characters": "caracteres",
    "unknown verdict": "veredito desconhecido",
    "known:": "conhecidos:",
    "is not a glob": "não é um glob",
    "is not a valid CIDR": "não é um CIDR válido",
    "is not a valid IP address": "não é um endereço IP válido",
    "is not a valid regular expression": "não é uma expressão regular válida",
    "is not a valid JSONPath": "não é um JSONPath válido",
    "egress lists apply only to rules on the `egress` stage": "listas de saída valem só para regras "
    "do estágio `egress`",
    "a sequence rule has no argument clauses": "uma regra de sequência não tem cláusulas de "
    "argumentos",
    "a sequence rule has no stage: its steps say which calls count": "uma regra de sequência não "
    "tem estágio: seus passos dizem quais chamadas contam",
    "a sequence rule matches tools through its steps' globs": "uma regra de sequência casa "
    "ferramentas pelos globs de seus passos",
    "a rule must be a JSON object": "uma regra precisa ser um objeto JSON",
    "a policy must be a JSON object": "uma política precisa ser um objeto JSON",
    "a call is a JSON object": "uma chamada é um objeto JSON",
    "is taken": "já está em uso",
    "a rule of this policy is already named": "uma regra desta política já se chama",
    "a place in the order: a whole number": "um lugar na ordem: um número inteiro",
    # the catalogue (Try a turn)
    "names a tool the catalogue does not have:": "nomeia uma ferramenta que o catálogo não tem:",
    "must be a tool name, not": "precisa ser um nome de ferramenta, não",
    "must be a mapping": "precisa ser um mapeamento",
    "must be a list of tools": "precisa ser uma lista de ferramentas",
    "must be a list of tool names": "precisa ser uma lista de nomes de ferramentas",
    "must be a JSON Schema": "precisa ser um JSON Schema",
    "is not a valid JSON Schema": "não é um JSON Schema válido",
    "must be text": "precisa ser texto",
    "must be true or false, not": "precisa ser true ou false, não",
    "is not a field of a tool": "não é um campo de uma ferramenta",
    "is not a section of a catalogue": "não é uma seção de um catálogo",
    "is not an argument of the tool:": "não é um argumento da ferramenta:",
    "names an argument the tool does not declare:": "nomeia um argumento que a ferramenta não "
    "declara:",
    "the person's turn, as text": "o turno da pessoa, como texto",
    # Settings
    "the webhook must use https:// (plain http is accepted only for a loopback address)": "o "
    "webhook precisa usar https:// (http simples só é aceito para um endereço de loopback)",
    "only an admin can change the licence and the alert webhook": "só um admin pode mudar a "
    "licença e o webhook de alertas",
    "not a setting": "não é uma configuração",
    # Proofs and rulebooks (uploads)
    "choose the agents' graph: a qls-graph/1 JSON file (`agent.export()`)": "escolha o grafo dos "
    "agentes: um arquivo JSON qls-graph/1 (`agent.export()`)",
    "is not UTF-8 text": "não é texto UTF-8",
    "is not valid JSON": "não é JSON válido",
    "at line": "na linha",
    "column": "coluna",
    "is not usable JSON: it nests too deeply": "não é JSON utilizável: aninha fundo demais",
    "is not a whole number": "não é um número inteiro",
    "the file is larger than": "o arquivo é maior que",
    "bytes": "bytes",
    "choose a file": "escolha um arquivo",
    "choose a .co file, a rule sheet or a record": "escolha um arquivo .co, uma planilha de "
    "regras ou um registro",
    # People, invitations, API keys, the write switches
    "a person needs a user name": "uma pessoa precisa de um nome de usuário",
    "is already a member": "já é membro",
    "has an open invitation already": "já tem um convite aberto",
    "is not a role": "não é um papel",
    "choose a role": "escolha um papel",
    "the organisation's last admin cannot be demoted": "o último admin da organização não pode "
    "perder o papel",
    "the organisation's last admin cannot be removed": "o último admin da organização não pode "
    "ser removido",
    "no such person": "pessoa não encontrada",
    "must be on or off": "precisa ser on ou off",
    "is not a tool's name (a letter or `_`, then letters, digits, `_ . -`), or empty for every "
    "tool": "não é o nome de uma ferramenta (uma letra ou `_`, depois letras, dígitos, `_ . -`), "
    "ou vazio para todas",
    "at most": "no máximo",
    "Nothing was submitted: 1 field to fix.": "Nada foi enviado: 1 campo a corrigir.",
    "Nothing was submitted": "Nada foi enviado",
    "The rule was not saved:": "A regra não foi salva:",
    "Nothing was imported:": "Nada foi importado:",
    "fields to fix": "campos a corrigir",
}

#: Messages with values inside them, said again around their values (before the phrases).
PT_BR_SHAPES: tuple[tuple[str, str], ...] = (
    (r"must be between (\S+) and (\S+)", r"precisa estar entre \1 e \2"),
    (r"a place from (\S+) to (\S+)", r"um lugar de \1 a \2"),
    (r"holds (\d+) clauses, more than (\d+)", r"tem \1 cláusulas, mais que \2"),
    (r"holds (\d+) entries, more than (\d+)", r"tem \1 entradas, mais que \2"),
)

_TABLES = {"pt-br": PT_BR}
_QUOTED = {"pt-br": sorted((p for p in PT_BR if "`" in p), key=len, reverse=True)}
_SHAPES = {"pt-br": tuple((re.compile(p), r) for p, r in PT_BR_SHAPES)}
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(language: str) -> re.Pattern[str] | None:
    table = _TABLES.get(language)
    if table is None:
        return None
    if language not in _PATTERNS:
        phrases = sorted((p for p in table if "`" not in p), key=len, reverse=True)
        _PATTERNS[language] = re.compile("|".join(re.escape(p) for p in phrases))
    return _PATTERNS[language]


def say(message: object, language: str | None = None) -> str:
    """`message` in `language` (default: the active one), leaving what is in backticks alone."""
    text = str(message)
    language = (language or translation.get_language() or "en").lower()
    pattern = _pattern(language)
    if pattern is None:
        return text
    table = _TABLES[language]

    def said(part: str) -> str:
        for shape, replacement in _SHAPES[language]:
            part = shape.sub(replacement, part)
        return pattern.sub(lambda m: table[m.group(0)], part)

    # Phrases that hold backticks of their own (`sanitize`) first, over the whole message; then
    # every other phrase outside the backticks, so a value in backticks is never translated.
    for phrase in _QUOTED[language]:
        text = text.replace(phrase, table[phrase])
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") else said(part) for part in parts)
