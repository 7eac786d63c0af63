"""Agent and tool names in one normal form, shared by the firewall and the tool check.

A name is compared as it is *meant*, not as it is spelled: every entry that takes a name (the
firewall's evaluate, the tool check, the CLI, the holds and switches a sequence alert sets) reads
it through `normal_name`, so a rule, a hold or a switch set for one spelling holds for every other.

Refused as malformed, with a reason naming the character:

- a control character (`\\n`, `\\x00`, ...), a format character (zero-width `U+200B`, `U+200D`,
  `U+FEFF`; the bidirectional overrides and isolates `U+202A`..`U+202E`, `U+2066`..`U+2069`), a
  line or paragraph separator, a surrogate, and the other default-ignorable characters (variation
  selectors, the combining grapheme joiner, Hangul fillers), any of which makes two names that look
  alike differ, or one name look like another (`shell\\u200b.exec`, `\\u202eshell.exec`);
- a name that is not in NFKC form (full-width `ｓｈｅｌｌ.exec`, ligatures, compatibility digits): it
  would be a second spelling of an NFKC name.

A name that passes is folded for comparison with `str.casefold` (`Desk` and `desk` are one agent).
The function is pure and keeps no state; the firewall's rule globs keep the specification's
case-sensitive grammar, and a tool check compares names with the catalogue's as they are.
"""

from __future__ import annotations

import unicodedata

#: Longest name taken: names are identifiers, not prose (the firewall's globs have the same bound).
MAX_NAME_LENGTH = 256

# Default-ignorable code points outside the format category (Unicode's
# Default_Ignorable_Code_Point, less what `Cf` already covers).
_IGNORABLE = frozenset(
    {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0}
    | set(range(0x180B, 0x1810))
    | set(range(0xFE00, 0xFE10))
    | set(range(0xE0100, 0xE01F0))
)
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class MalformedName(ValueError):
    """A name with characters that would let one spelling pass for another."""


def name_problem(name: object) -> str | None:
    """What makes `name` malformed (one lowercase sentence), or None for a well-formed name."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty name"
    if len(name) > MAX_NAME_LENGTH:
        return f"is longer than {MAX_NAME_LENGTH} characters"
    if name.isascii() and name.isprintable() and " " not in name:
        # the common case, on every decision: printable ASCII holds no control character,
        # and its only space is U+0020; ASCII text is its own NFKC form
        return None
    for char in name:
        point = ord(char)
        if unicodedata.category(char) in _REFUSED_CATEGORIES or point in _IGNORABLE:
            return f"holds the invisible or control character U+{point:04X}"
        if char.isspace():
            return f"holds the space character U+{point:04X}"
    if not unicodedata.is_normalized("NFKC", name):
        return "is not in NFKC form (a full-width or compatibility spelling of another name)"
    return None


def normal_name(name: object, field: str = "name") -> str:
    """The name as it is compared (case-folded), or `MalformedName` naming `field` and why."""
    problem = name_problem(name)
    if problem is not None:
        raise MalformedName(f"`{field}` {problem}")
    return name.casefold()  # type: ignore[union-attr]


def same_name(first: object, second: object) -> bool:
    """Whether two well-formed names are one name; a malformed name is no name at all."""
    if name_problem(first) is not None or name_problem(second) is not None:
        return False
    return first.casefold() == second.casefold()  # type: ignore[union-attr]


def name_key(name: object) -> str:
    """The key a hold or a switch is stored and looked up under: the normal form of the name.

    A malformed name (which every entry has refused already) keeps its own text, so it never
    shares a key with a well-formed one.
    """
    if name_problem(name) is None:
        return name.casefold()  # type: ignore[union-attr]
    return "" if name is None else str(name)
