"""The local index of an agent's documents: passages in SQLite FTS5, kept up to date file by file.

One SQLite file holds two tables: `files` (each document's path, modification time, size and
SHA-256, as last indexed) and `passages`, an FTS5 table whose one indexed column holds each
passage's words as stems (`router.engine.answer.index_stems`, so the index and the question are
stemmed alike), with the passage's text, file, line and page kept beside it, unindexed.

`refresh(files)` brings the index up to date: a file whose time and size are the ones indexed is
not read; one whose bytes still hash the same only has its time and size updated; any other is
read again and its passages replaced; a file no longer listed loses its passages. It says what it
did (`Refreshed`). `search(stems, limit)` ranks passages by BM25 (FTS5's `bm25()`), and
`frequencies(stems)` says how many passages hold each stem: what `router.engine.answer.Retrieved`
grounds an answer with.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from router.engine.answer import Passage, index_stems

from .extract import read_document

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    sha256 TEXT NOT NULL, passages INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    stems, text UNINDEXED, path UNINDEXED, line UNINDEXED, page UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_terms USING fts5vocab(passages, 'row');
"""
VERSION = 1


@dataclass
class Refreshed:
    """What one `refresh` did, by file (paths as the index names them)."""

    read: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


class DocumentIndex:
    """The index in one SQLite file (`path`, or `:memory:`); names files relative to `root`."""

    def __init__(self, path: str | Path, *, root: Path) -> None:
        self.root = root
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # One connection, shared by the agent's conversations: a lock keeps its use one at a time.
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.RLock()
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, VERSION):
            self._db.executescript("DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS passages;")
        self._db.executescript(SCHEMA)
        self._db.execute(f"PRAGMA user_version = {VERSION}")
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def name_of(self, file: Path) -> str:
        """How the index names a file: relative to its root where it is inside it."""
        try:
            return file.relative_to(self.root).as_posix()
        except ValueError:
            return file.as_posix()

    def refresh(self, files: Sequence[Path]) -> Refreshed:
        """Bring the index up to date with `files` (see the module docstring)."""
        with self._lock:
            return self._refresh(files)

    def _refresh(self, files: Sequence[Path]) -> Refreshed:
        done = Refreshed()
        db = self._db
        known = {
            row[0]: (row[1], row[2], row[3])
            for row in db.execute("SELECT path, mtime_ns, size, sha256 FROM files")
        }
        listed = set()
        with db:
            for file in files:
                name = self.name_of(file)
                listed.add(name)
                info = os.stat(file)
                stamp = (info.st_mtime_ns, info.st_size)
                held = known.get(name)
                if held is not None and held[:2] == stamp:
                    done.unchanged.append(name)
                    continue
                data = file.read_bytes()
                digest = hashlib.sha256(data).hexdigest()
                if held is not None and held[2] == digest:
                    db.execute(
                        "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (*stamp, name)
                    )
                    done.touched.append(name)
                    continue
                chunks = read_document(data, file.suffix, name)
                db.execute("DELETE FROM passages WHERE path = ?", (name,))
                db.executemany(
                    "INSERT INTO passages (stems, text, path, line, page) VALUES (?, ?, ?, ?, ?)",
                    [(index_stems(c.text), c.text, name, c.line, c.page) for c in chunks],
                )
                db.execute(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                    (name, *stamp, digest, len(chunks)),
                )
                done.read.append(name)
            for name in sorted(set(known) - listed):
                db.execute("DELETE FROM passages WHERE path = ?", (name,))
                db.execute("DELETE FROM files WHERE path = ?", (name,))
                done.removed.append(name)
        return done

    def search(self, stems: Sequence[str], limit: int) -> list[Passage]:
        """The passages holding any of `stems`, best first by BM25."""
        terms = [s for s in stems if s and '"' not in s]
        if not terms:
            return []
        query = " OR ".join(f'"{term}"' for term in terms)
        with self._lock:
            rows = self._db.execute(
                "SELECT text, path, line, page FROM passages WHERE passages MATCH ? "
                "ORDER BY bm25(passages) LIMIT ?",
                (query, int(limit)),
            ).fetchall()
        return [Passage(text, path, int(line), page) for text, path, line, page in rows]

    def frequencies(self, stems: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(how many passages there are, how many hold each of `stems`)."""
        counts: dict[str, int] = {}
        with self._lock:
            total = self._db.execute("SELECT count(*) FROM passages").fetchone()[0]
            for stem in stems:
                row = self._db.execute(
                    "SELECT doc FROM passages_terms WHERE term = ?", (stem,)
                ).fetchone()
                counts[stem] = int(row[0]) if row else 0
        return int(total), counts

    def files(self) -> dict[str, int]:
        """The files indexed, each with its number of passages."""
        with self._lock:
            return dict(self._db.execute("SELECT path, passages FROM files ORDER BY path"))
