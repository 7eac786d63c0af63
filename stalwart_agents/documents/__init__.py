"""Answers from documents: agent.yaml's `documents:` read, checked, bounded and indexed locally.

    documents: [./policies/, ./faq.html]          # files or folders, relative to agent.yaml

    documents:                                     # or, with its settings
      paths: [./policies/, ./faq.html, ./terms.pdf]
      composer: extract                            # extract (no model is called) | model
      index: .stalwart/documents.sqlite3           # where the index is kept (this is the default)
      max_files: 500                               # at most this many files (at most 10000)
      max_file_bytes: 10485760                     # each at most this large (at most 50 MiB)

A folder is read whole, its subfolders too, in name order, leaving out hidden files and folders
(names starting with `.`) and files of other kinds than Markdown, text, HTML and PDF (see
`extract`). A file named directly must be of one of those kinds. Everything is checked when the
agent is built, and every problem is reported at once, each naming the key and its line in
agent.yaml (`AgentFileError`): a path that does not exist or is absolute, more files than
`max_files`, a file over `max_file_bytes` (or all of them over 200 MiB), a file that cannot be
read, an unknown key or composer.

The index is brought up to date (`refresh`) when the agent is built and again when a
conversation starts: only files whose time, size and digest changed are read again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .extract import SUFFIXES, DocumentUnreadable
from .index import DocumentIndex, Refreshed

KEYS = frozenset({"paths", "composer", "index", "max_files", "max_file_bytes"})
COMPOSERS = ("extract", "model")
DEFAULT_INDEX = ".stalwart/documents.sqlite3"
MAX_FILES = 500
MAX_FILES_CEILING = 10_000
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_FILE_BYTES_CEILING = 50 * 1024 * 1024
MAX_TOTAL_BYTES = 200 * 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """`documents:` as read: the paths as written, the composer, the index and the bounds."""

    paths: tuple[str, ...]
    composer: str = "extract"
    index: str = DEFAULT_INDEX
    max_files: int = MAX_FILES
    max_file_bytes: int = MAX_FILE_BYTES
    field: str = "documents"  # where the paths are written: `documents` or `documents.paths`


def _whole(value: Any, ceiling: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= ceiling


def read_settings(raw: Any) -> tuple[Settings | None, list[tuple[str, str]]]:
    """`documents:` into `Settings`, or the problems, each `(field path, message)`."""
    problems: list[tuple[str, str]] = []
    if isinstance(raw, list):
        raw = {"paths": raw}
        prefix = "documents"
    elif isinstance(raw, Mapping):
        prefix = "documents.paths"
    else:
        return None, [("documents", "must be a list of files or folders, or `{paths: [...]}`")]
    for key in sorted(set(raw) - KEYS, key=str):
        problems.append((f"documents.{key}", "is not a key of `documents`"))
    paths = raw.get("paths")
    if not isinstance(paths, list) or not paths:
        problems.append((prefix, "must list at least one file or folder"))
        paths = []
    for position, entry in enumerate(paths):
        if not isinstance(entry, str) or not entry.strip():
            problems.append((f"{prefix}[{position}]", "must be the path of a file or folder"))
        elif Path(entry).is_absolute():
            problems.append(
                (f"{prefix}[{position}]", f"`{entry}` must be relative to agent.yaml's folder")
            )
    composer = raw.get("composer", "extract")
    if composer not in COMPOSERS:
        problems.append(("documents.composer", f"is one of {', '.join(COMPOSERS)}"))
    index = raw.get("index", DEFAULT_INDEX)
    if not isinstance(index, str) or not index.strip():
        problems.append(("documents.index", "must be the path of the index file"))
    max_files = raw.get("max_files", MAX_FILES)
    if not _whole(max_files, MAX_FILES_CEILING):
        problems.append(
            ("documents.max_files", f"must be a whole number, 1 to {MAX_FILES_CEILING}")
        )
    max_bytes = raw.get("max_file_bytes", MAX_FILE_BYTES)
    if not _whole(max_bytes, MAX_FILE_BYTES_CEILING):
        problems.append(
            ("documents.max_file_bytes", f"must be a whole number, 1 to {MAX_FILE_BYTES_CEILING}")
        )
    if problems:
        return None, problems
    return (
        Settings(tuple(paths), str(composer), str(index), int(max_files), int(max_bytes), prefix),
        [],
    )


class Documents:
    """An agent's documents and their index; the router asks it for a composer."""

    def __init__(self, folder: Path, settings: Settings, *, where: Any = None) -> None:
        self.folder = folder.resolve()
        self.settings = settings
        self._where = where or (lambda field: field)
        index = Path(settings.index)
        self.index_path = index if index.is_absolute() else self.folder / index
        self.index = DocumentIndex(self.index_path, root=folder)
        self.last: Refreshed | None = None

    @property
    def composer(self) -> str:
        return self.settings.composer

    def files(self) -> tuple[list[Path], list[str]]:
        """Every document file the paths name, and the problems found (each already placed)."""
        found: list[Path] = []
        problems: list[str] = []
        for position, entry in enumerate(self.settings.paths):
            field = f"{self.settings.field}[{position}]"
            target = (self.folder / entry).resolve()
            if target.is_dir():
                for file in sorted(target.rglob("*")):
                    relative = file.relative_to(target).parts
                    if any(part.startswith(".") for part in relative):
                        continue
                    if file.is_file() and file.suffix.lower() in SUFFIXES:
                        found.append(file)
            elif target.is_file():
                if target.suffix.lower() not in SUFFIXES:
                    kinds = ", ".join(sorted(SUFFIXES))
                    problems.append(f"{self._where(field)}: `{entry}` is not one of {kinds}")
                else:
                    found.append(target)
            else:
                problems.append(f"{self._where(field)}: `{entry}` does not exist")
        unique = list(dict.fromkeys(found))
        limit = self.settings.max_files
        if len(unique) > limit:
            problems.append(
                f"{self._where('documents.max_files')}: the paths hold {len(unique)} files, "
                f"more than {limit}"
            )
        total = 0
        for file in unique:
            size = file.stat().st_size
            total += size
            if size > self.settings.max_file_bytes:
                name = self.index.name_of(file)
                problems.append(
                    f"{self._where('documents.max_file_bytes')}: `{name}` is {size} bytes, "
                    f"more than {self.settings.max_file_bytes}"
                )
        if total > MAX_TOTAL_BYTES:
            problems.append(
                f"{self._where('documents')}: the documents are {total} bytes, more than "
                f"{MAX_TOTAL_BYTES}"
            )
        return unique, problems

    def refresh(self) -> Refreshed:
        """Check the files and bring the index up to date; `DocumentsInvalid` with every problem."""
        files, problems = self.files()
        if problems:
            raise DocumentsInvalid(problems)
        try:
            self.last = self.index.refresh(files)
        except DocumentUnreadable as error:
            raise DocumentsInvalid([f"{self._where('documents')}: {error}"]) from None
        except OSError as error:
            raise DocumentsInvalid(
                [
                    f"{self._where('documents')}: a document cannot be read: {error.strerror or error}"
                ]
            ) from None
        return self.last

    def composer_for(self, lexicon: Any) -> Any:
        """The composer the router answers `on_unread: answer` with, in its language."""
        from router.engine.answer import Retrieved

        return Retrieved(self.index, lexicon, composer=self.settings.composer)


class DocumentsInvalid(Exception):
    """`documents:` names files that are missing, too many, too large or unreadable."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def open_documents(path: Path, raw: Any, text: str | None) -> Documents:
    """The documents agent.yaml (at `path`, whose `text` is given) names, checked and indexed;
    `DocumentsInvalid` with every problem, each `agent.yaml:<line>: <key>: ...`."""
    from proof.engine.locations import yaml_lines

    lines = yaml_lines(text) if text else {}

    def where(field: str) -> str:
        line = lines.get(field) or lines.get(field.rsplit("[", 1)[0]) or lines.get("documents")
        return f"{path.name}:{line}: {field}" if line else f"{path.name}: {field}"

    settings, problems = read_settings(raw)
    if settings is None:
        raise DocumentsInvalid([f"{where(field)}: {message}" for field, message in problems])
    try:
        documents = Documents(path.parent, settings, where=where)
    except (OSError, sqlite3.Error) as error:
        why = getattr(error, "strerror", None) or str(error)
        raise DocumentsInvalid(
            [f"{where('documents.index')}: the index cannot be kept at `{settings.index}`: {why}"]
        ) from None
    documents.refresh()
    return documents


__all__ = ["Documents", "DocumentsInvalid", "Settings", "open_documents", "read_settings"]
