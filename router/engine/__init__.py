"""The router engine: pure Python, no Django, no I/O, no model.

`Router(catalogue, ...).plan(turn, ...)` reads a turn, in English or pt-BR, into a `Plan`;
`said_checks(...)` are the checks of what was said (S1, S2, the confirmation reading, the origin of
values) as post-checks of the guard's `ToolCheck`; `Conversation` runs turns end to end through the
tool check with an injected executor, composing template replies, and calls a model only where the
settings send a turn to one.
"""

from __future__ import annotations

from .answer import Answer, Composer
from .conversation import Conversation, Reply, model_free
from .errors import (
    Issue,
    LanguageNotRead,
    ModelNameInvalid,
    ModelUnavailable,
    RouterError,
    SelectorUnavailableError,
    SettingInvalid,
    VocabularyInvalid,
)
from .models import ModelReply, ModelRequest, Models, ScriptedModel, parse_model_name
from .plan import (
    ASK,
    CALCULATION,
    CHAIN,
    CONFIRM,
    DECLINED,
    KINDS,
    TOOL,
    UNREAD,
    Plan,
)
from .router import Router, read_results
from .said import said_checks
from .vocabulary import Vocabulary, load_vocabulary

__all__ = [
    "ASK",
    "Answer",
    "Composer",
    "Conversation",
    "ModelReply",
    "ModelRequest",
    "Models",
    "Reply",
    "ScriptedModel",
    "model_free",
    "parse_model_name",
    "said_checks",
    "CALCULATION",
    "CHAIN",
    "CONFIRM",
    "DECLINED",
    "KINDS",
    "TOOL",
    "UNREAD",
    "Issue",
    "LanguageNotRead",
    "ModelNameInvalid",
    "ModelUnavailable",
    "Plan",
    "Router",
    "RouterError",
    "SelectorUnavailableError",
    "SettingInvalid",
    "Vocabulary",
    "VocabularyInvalid",
    "load_vocabulary",
    "read_results",
]
