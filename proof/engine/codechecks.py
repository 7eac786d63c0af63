"""Code checks: the tools' own code, read (never run) for network and credential problems.

The proof covers the graph, the catalogue and the rulebook, not the tools' code; these checks read
that code for a handful of problems only, each with a stable id:

    CC001  a secret written into the code: a name or key that says password / secret / token /
           api key / private key bound to a text, or a text shaped like a known credential
           (any shape of the one credential table, `firewall/engine/credentials.py`, that the
           console's redaction and the sanitize presets read too: AWS, GitHub, Slack,
           OpenAI-style and Anthropic keys, JWTs, `Bearer`/`Basic` values, tokens in an
           address's query, a PEM private key)
    CC002  `verify=False` (TLS verification switched off) in a call
    CC003  a plain `http://` address of a host that is not this machine
    CC004  `shell=True` in a call (a shell reads the command)
    CC005  TLS weakened another way: `ssl._create_unverified_context`, `CERT_NONE`,
           `check_hostname = False`
    CC006  a password written into an address (`https://user:pass@host`)

Python files are parsed with `ast`; any other file the agent names (agent.yaml, the rulebook) is
read as text for CC001's credential shapes and CC006 only. The rule set has a digest -- the first
12 hex digits of the SHA-256 of its canonical description -- printed with the report, so a
report says which checks it ran.
"""

from __future__ import annotations

import ast
import hashlib
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from firewall.engine.credentials import recognise, secret_name

from .errors import SourceUnreadable
from .pysource import parse_module

RULES: tuple[tuple[str, str], ...] = (
    ("CC001", "a secret written into the code"),
    ("CC002", "TLS verification switched off (`verify=False`)"),
    ("CC003", "a plain http address of a host that is not this machine"),
    ("CC004", "a command read by a shell (`shell=True`)"),
    ("CC005", "TLS weakened (an unverified context, `CERT_NONE`, `check_hostname = False`)"),
    ("CC006", "a password written into an address"),
)
#: The address recogniser is CC006's; every other shape of the credential table is CC001's.
ADDRESS_PASSWORD = "url_password"
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
#: Values that are obviously not secrets (placeholders, environment lookups spelled as text).
PLACEHOLDERS = frozenset({"", "changeme", "xxx", "***", "<secret>", "none", "null"})


def rules_digest() -> str:
    """The 12-hex-digit digest of the rule set, as the report prints it."""
    text = json.dumps([list(rule) for rule in RULES], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True, order=True)
class CodeFinding:
    file: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.rule} {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "rule": self.rule, "message": self.message}


@dataclass(frozen=True)
class CodeReport:
    files: int
    digest: str
    findings: tuple[CodeFinding, ...]
    unreadable: tuple[str, ...] = ()


def _local(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in LOCAL_NAMES or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _text_findings(path: str, text: str, line: int) -> list[CodeFinding]:
    out = []
    shapes = recognise(text)
    if any(shape != ADDRESS_PASSWORD for shape in shapes):
        out.append(CodeFinding(path, line, "CC001", "a text shaped like a credential"))
    if ADDRESS_PASSWORD in shapes:
        out.append(CodeFinding(path, line, "CC006", "an address with a password in it"))
    return out


def _string_findings(path: str, value: str, line: int) -> list[CodeFinding]:
    out = _text_findings(path, value, line)
    if value.lower().startswith("http://"):
        host = urlsplit(value).hostname or ""
        if host and not _local(host):
            out.append(CodeFinding(path, line, "CC003", f"a plain http address of `{host}`"))
    return out


def _name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _secret_value(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.strip().lower() not in PLACEHOLDERS
    )


def check_python(path: str, text: str) -> list[CodeFinding]:
    """The findings of one Python file (raises `SourceUnreadable` when it does not parse)."""
    tree = parse_module(text, path=path)
    out: list[CodeFinding] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 1)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.extend(_string_findings(path, node.value, line))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                name = _name_of(target)
                if name and secret_name(name) and value is not None and _secret_value(value):
                    out.append(CodeFinding(path, line, "CC001", f"`{name}` is written in the code"))
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == "check_hostname"
                    and isinstance(value, ast.Constant)
                    and value.value is False
                ):
                    out.append(CodeFinding(path, line, "CC005", "`check_hostname = False`"))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                name = _name_of(key) if key is not None else None
                if name and secret_name(name) and _secret_value(value):
                    out.append(
                        CodeFinding(path, line, "CC001", f"the key `{name}` holds a written secret")
                    )
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                constant = keyword.value
                if not isinstance(constant, ast.Constant):
                    continue
                if keyword.arg == "verify" and constant.value is False:
                    out.append(CodeFinding(path, line, "CC002", "`verify=False` in a call"))
                if keyword.arg == "shell" and constant.value is True:
                    out.append(CodeFinding(path, line, "CC004", "`shell=True` in a call"))
                if keyword.arg and secret_name(keyword.arg) and _secret_value(constant):
                    out.append(
                        CodeFinding(
                            path, line, "CC001", f"`{keyword.arg}=` is given a written secret"
                        )
                    )
            name = _name_of(node.func)
            if name == "_create_unverified_context":
                out.append(CodeFinding(path, line, "CC005", "an unverified TLS context"))
        elif isinstance(node, ast.Attribute) and node.attr == "CERT_NONE":
            out.append(CodeFinding(path, line, "CC005", "`CERT_NONE`"))
    return sorted(set(out))


def check_text(path: str, text: str) -> list[CodeFinding]:
    """The findings of a file read as text (credential shapes and passwords in addresses)."""
    out: list[CodeFinding] = []
    for number, line in enumerate(text.splitlines(), start=1):
        out.extend(_text_findings(path, line, number))
    return sorted(set(out))


def check_files(files: Mapping[str, str | bytes]) -> CodeReport:
    """Run the code checks over every file (Python by its `.py` name, the rest as text)."""
    findings: list[CodeFinding] = []
    unreadable: list[str] = []
    for path in sorted(files):
        content = files[path]
        if isinstance(content, bytes):
            try:
                content = content.decode("utf-8")
            except UnicodeDecodeError:
                continue
        if not isinstance(content, str):
            continue
        if path.endswith(".py"):
            try:
                findings.extend(check_python(path, content))
            except SourceUnreadable:
                unreadable.append(path)
        else:
            findings.extend(check_text(path, content))
    return CodeReport(
        files=len(files),
        digest=rules_digest(),
        findings=tuple(sorted(set(findings))),
        unreadable=tuple(unreadable),
    )
