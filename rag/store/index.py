"""The persistent index: one SQLite file with FTS5.

Layout (``<repo>/.rag/index.sqlite`` unless told otherwise)::

    migrations(name, applied_at)          ordered, named schema migrations (llm-style)
    meta(key, value)                      generation counter, repo root, last update
    files(path, size, mtime_ns, hash, file_type, kind, lines, redactions, structure, ctime_ns, ino, seen_ns)
    chunks(id, path, start, end, heading, symbol, file_type, kind, text, hash, stems, header)
    chunks_fts(body, path, heading, symbols)   FTS5, porter+unicode61, rowid = chunks.id

A chunk's ``symbol`` is its symbol path (``proto.handle``) and ``header`` the enclosing
signatures it does not show (:class:`rag.types.Chunk`); the header is indexed with the
body (FTS ``body`` and ``stems``) but ``text`` holds only the chunk's real lines.
    chunk_vectors(chunk_hash, model, dim, vec) embeddings keyed by chunk content hash
    documents(id, title, text, metadata, created_at, shared, redactions)   rag.documents; chunks "doc:<id>"
    github_items(path, kind, number, title, state, url, updated_at, data)  rag.sources.items; chunks "issue:<n>", "pr:<n>"
    github_item_files(item, path, updated_at)   a pull request's changed paths
    file_fingerprints(path, lines, map_sources)    normalised-line hashes per file (copy detection)
    file_copies(path, source, reason, rank, similarity)  build output / duplicates of indexed sources

Consistency: the database runs in WAL mode. Every update is one ``BEGIN
IMMEDIATE`` … ``COMMIT`` transaction that also bumps ``meta.generation``;
readers run each query inside one read transaction, so they see the old
generation or the new one, never a mix, and an exception or a killed process
mid-update leaves the previous generation intact (SQLite's atomic commit).

A file that is not a SQLite database, has a foreign schema, or a schema newer
than this code knows is moved aside and rebuilt (never fatal).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rag.errors import IndexUnavailableError
from rag.store import queries
from rag.text import index_text, stem_set
from rag.types import Chunk, WalkedFile

__all__ = ["Index", "IndexWriter", "FileRow", "FileUpdate", "ChunkTerms", "chunk_terms", "stored_terms", "structure_text",
           "SCHEMA_VERSION",
           "insert_chunks", "delete_chunks"]

log = logging.getLogger(__name__)

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next schema migration (applied in definition order)."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def _script(conn: sqlite3.Connection, sql: str) -> None:
    """Run ``;``-separated DDL inside the caller's transaction.

    (``executescript`` would COMMIT first, breaking the migration's atomicity.)
    """
    for statement in sql.split(";"):
        if statement.strip():
            conn.execute(statement)


@migration
def m001_initial(conn: sqlite3.Connection) -> None:
    _script(conn, 
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE files (
            path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
            hash TEXT NOT NULL, file_type TEXT NOT NULL, kind TEXT NOT NULL,
            lines INTEGER NOT NULL, redactions INTEGER NOT NULL DEFAULT 0, structure TEXT
        );
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY, path TEXT NOT NULL, start INTEGER NOT NULL,
            end INTEGER NOT NULL, heading TEXT, symbol TEXT, file_type TEXT NOT NULL,
            kind TEXT NOT NULL, text TEXT NOT NULL, hash TEXT NOT NULL
        );
        CREATE INDEX chunks_path ON chunks(path);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            body, path, heading, symbols, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE images (path TEXT PRIMARY KEY);
        """
    )


@migration
def m002_vectors(conn: sqlite3.Connection) -> None:
    _script(conn, 
        """
        CREATE TABLE chunk_vectors (
            chunk_hash TEXT NOT NULL, model TEXT NOT NULL, dim INTEGER NOT NULL,
            vec BLOB NOT NULL, PRIMARY KEY (chunk_hash, model)
        );
        """
    )


@migration
def m003_chunk_stems(conn: sqlite3.Connection) -> None:
    """Per-chunk light stems for coverage scoring; existing rows lack them, so they are dropped
    (the next update re-reads every file)."""
    conn.execute("ALTER TABLE chunks ADD COLUMN stems TEXT NOT NULL DEFAULT ''")
    conn.execute("DELETE FROM chunks")
    conn.execute("DELETE FROM chunks_fts")
    conn.execute("DELETE FROM files")


@migration
def m006_documents(conn: sqlite3.Connection) -> None:
    """Documents (:mod:`rag.documents`): titled text stored with the repository's index. Their chunks
    live in ``chunks`` under the path ``doc:<id>`` and are kept by every update (they have no row in
    ``files``, and a full rebuild spares them)."""
    _script(conn,
        """
        CREATE TABLE documents (
            id TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL, shared INTEGER NOT NULL DEFAULT 0, redactions INTEGER NOT NULL DEFAULT 0
        );
        """
    )


@migration
def m007_github_items(conn: sqlite3.Connection) -> None:
    """Issues and pull requests (:mod:`rag.sources.items`): like documents, their chunks live under
    ``issue:<n>`` / ``pr:<n>`` and are kept by every update; a pull request's changed paths are rows of
    ``github_item_files`` ("which PR last changed lib/router.js?")."""
    _script(conn,
        """
        CREATE TABLE github_items (
            path TEXT PRIMARY KEY, kind TEXT NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL,
            state TEXT NOT NULL, url TEXT NOT NULL, updated_at TEXT NOT NULL, data TEXT NOT NULL
        );
        CREATE TABLE github_item_files (
            item TEXT NOT NULL, path TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (item, path)
        );
        CREATE INDEX github_item_files_path ON github_item_files(path, updated_at);
        """
    )


@migration
def m008_file_copies(conn: sqlite3.Connection) -> None:
    """Copy detection (:mod:`rag.ingest.copies`): per-file line fingerprints and the copy relations.
    Existing files have no fingerprint, so they are dropped (the next update re-reads every file;
    stored vectors are keyed by chunk text and kept). Documents, issues and pull requests are not
    files: their chunks stay."""
    _script(conn,
        """
        CREATE TABLE file_fingerprints (path TEXT PRIMARY KEY, lines BLOB NOT NULL, map_sources TEXT);
        CREATE TABLE file_copies (
            path TEXT NOT NULL, source TEXT NOT NULL, reason TEXT NOT NULL, rank INTEGER NOT NULL,
            similarity REAL, PRIMARY KEY (path, source)
        );
        DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path IN (SELECT path FROM files));
        DELETE FROM chunks WHERE path IN (SELECT path FROM files);
        DELETE FROM files
        """
    )


@migration
def m009_chunk_symbol(conn: sqlite3.Connection) -> None:
    """Symbol-boundary chunks: each chunk's enclosing-signature ``header`` (its ``symbol`` path goes in
    the column m001 created and nothing filled). Existing file chunks are line windows without either,
    so they are dropped (the next update re-reads and re-chunks every file); documents, issues and
    pull requests are not files: their chunks stay."""
    conn.execute("ALTER TABLE chunks ADD COLUMN header TEXT")
    conn.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path IN (SELECT path FROM files))")
    conn.execute("DELETE FROM chunks WHERE path IN (SELECT path FROM files)")
    conn.execute("DELETE FROM files")


@migration
def m010_file_stat(conn: sqlite3.Connection) -> None:
    """The stat each file was read with beyond size and mtime: inode change time, inode number and when the
    walk took it, so an update trusts an unchanged stat instead of reading and hashing every file
    (:func:`rag.ingest.prepare.stat_unchanged`). Existing rows get 0s: they are read once more, as before."""
    for column in ("ctime_ns", "ino", "seen_ns"):
        conn.execute(f"ALTER TABLE files ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0")


@migration
def m011_document_tombstones(conn: sqlite3.Connection) -> None:
    """The ids of global (shared) documents deleted from this index: a repository that was not serving
    when one was deleted still holds it, and :meth:`bot.documents.DocumentService.sync_shared` deletes it
    there instead of copying it back to every repository."""
    conn.execute("CREATE TABLE document_tombstones (id TEXT PRIMARY KEY, removed_at REAL NOT NULL)")


SCHEMA_VERSION = len(MIGRATIONS)
DOCUMENT_PATHS = "SELECT 'doc:' || id FROM documents UNION ALL SELECT path FROM github_items"
"""The chunk paths of the sources that are not files: stored documents, issues and pull requests
(a full rebuild keeps these chunks)."""


@dataclass(frozen=True, slots=True)
class FileRow:
    """What the index remembers of one file: its content hash and the stat it was read with
    (``ctime_ns``, ``ino`` and ``seen_ns`` are 0 for rows written before migration m010)."""

    size: int
    mtime_ns: int
    hash: str
    ctime_ns: int = 0
    ino: int = 0
    seen_ns: int = 0


@dataclass(slots=True)
class FileUpdate:
    """A new or changed file, ready to be written.

    Attributes:
        path, size, mtime_ns, hash, file_type, kind: as in ``files``.
        ctime_ns, ino, seen_ns: the stat the file was read with (:class:`rag.types.WalkedFile`).
        lines: number of lines.
        redactions: secrets redacted in this file's text.
        chunks: its chunks (text already redacted).
        structure: parsed code structure as a JSON-ready dict, or ``None``.
        chunk_symbols: per chunk, space-separated names of symbols defined in it.
        terms: per chunk, its :class:`ChunkTerms` when already computed (by an indexing worker
            process, :mod:`rag.ingest.pool`), else ``None``: :meth:`Index.apply` computes them.
        fingerprint: its line fingerprint for copy detection (:func:`rag.ingest.copies.file_fingerprint`)
            when a worker computed it, else ``None``: the update computes it.
        structure_json: ``structure`` as stored (:func:`structure_text`) when a worker serialised it,
            else ``None``: the writer serialises ``structure``. A worker's result carries only this
            (``structure`` is then ``None``): one string pickles and unpickles in a fraction of the
            time of the nested records, and the writer has no JSON left to encode.
        map_sources: the repository paths its inline source map lists
            (:func:`rag.ingest.prepare.elide_inline_source_map`: the map is no longer in its chunks), ``[]``
            when it lists none here, ``None`` without an inline map (the update reads a map comment from the
            last chunk, :func:`rag.ingest.copies.update_copies`).
    """

    path: str
    size: int
    mtime_ns: int
    hash: str
    file_type: str
    kind: str
    lines: int
    redactions: int
    chunks: list[Chunk]
    structure: dict | None = None
    chunk_symbols: list[str] | None = None
    terms: list[ChunkTerms] | None = None
    fingerprint: bytes | None = None
    structure_json: str | None = None
    ctime_ns: int = 0
    ino: int = 0
    seen_ns: int = 0
    map_sources: list[str] | None = None


def structure_text(structure: dict | None) -> str | None:
    """A parsed structure as the ``files.structure`` column stores it: compact JSON, ``None`` for none."""
    return json.dumps(structure, separators=(",", ":")) if structure is not None else None


@dataclass(frozen=True, slots=True)
class ChunkTerms:
    """What the index stores for one chunk besides its text: the FTS5 columns (``body``,
    ``heading``, ``symbols``: :func:`rag.text.index_text` output), the light stems for
    coverage scoring (``stems``) and the content hash of its text (``hash``)."""

    body: str
    heading: str
    symbols: str
    stems: str
    hash: str


TermsKey = tuple  # (text hash, header, heading, symbols column): what a chunk's ChunkTerms depend on


def chunk_terms(update: FileUpdate, *, known: dict[TermsKey, ChunkTerms] | None = None) -> list[ChunkTerms]:
    """The :class:`ChunkTerms` of every chunk of ``update``, in order (pure CPU: tokenising and
    hashing, the part of writing a file that needs no database, so it can run in a worker).

    ``known``: terms already stored for chunks of this file (:func:`stored_terms`); a chunk with the
    same text, header, heading and symbols gets them back instead of being tokenised again (they are
    the same function of the same inputs), as most chunks of a file edited in one place are.
    """
    symbols = update.chunk_symbols or [""] * len(update.chunks)
    out = []
    for chunk, syms in zip(update.chunks, symbols):
        digest, symbol_terms = _chunk_hash(chunk.text), index_text(syms)
        stored = known.get((digest, chunk.header, chunk.heading or "", symbol_terms)) if known else None
        if stored is not None:
            out.append(stored)
            continue
        body = index_text(f"{chunk.header}\n{chunk.text}" if chunk.header else chunk.text)  # the header is searched too
        heading = index_text(chunk.heading or "")
        out.append(ChunkTerms(body, heading, symbol_terms, stem_set(f"{body} {heading}"), digest))
    return out


def stored_terms(rows: Iterable[tuple]) -> dict[TermsKey, ChunkTerms]:
    """The :class:`ChunkTerms` of a file's stored chunks (:func:`rag.store.queries.stored_chunks_of`
    rows), by what they depend on (for :func:`chunk_terms`' ``known``)."""
    return {(digest, header, heading or "", symbols): ChunkTerms(body, fts_heading, symbols, stems, digest)
            for _id, _start, _end, digest, header, heading, _symbol, _type, _kind, stems, body, fts_heading, symbols
            in rows}


class IndexWriter:
    """The rows of one open write transaction (:meth:`Index.writer`); not for use after it ends.

    ``add`` replaces a file (:meth:`replace`; after a full rebuild's delete-all there are no rows
    to look for); ``insert`` writes a file known to have no rows; ``remove`` forgets paths. New
    chunk rowids are assigned in call order.
    """

    def __init__(self, conn: sqlite3.Connection, *, full: bool) -> None:
        self.conn = conn
        self.full = full

    def remove(self, paths: Iterable[str]) -> None:
        """Delete the file rows, chunks and FTS rows of ``paths`` (absent paths are ignored)."""
        conn = self.conn
        for path in paths:
            ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,))]
            if ids:
                conn.executemany("DELETE FROM chunks_fts WHERE rowid=?", [(i,) for i in ids])
                conn.execute("DELETE FROM chunks WHERE path=?", (path,))
            conn.execute("DELETE FROM files WHERE path=?", (path,))

    def add(self, update: FileUpdate) -> None:
        """Write a new or changed file, replacing what the index held for its path."""
        if self.full:
            self.insert(update)
        else:
            self.replace(update)

    def insert(self, u: FileUpdate) -> None:
        """Write one file's row, chunks and FTS rows (``u.terms``, or computed now: :func:`chunk_terms`)."""
        self._file_row(u)
        _insert_chunk_rows(self.conn, u.path, u.chunks, u.terms if u.terms is not None else chunk_terms(u))

    def replace(self, u: FileUpdate) -> None:
        """Write a new or changed file over what the index holds for its path, touching only the chunks
        that changed.

        A stored chunk whose text, header, heading, symbol, type, kind and FTS terms are those of a new
        chunk keeps its row and its FTS row (its line range is updated when lines were inserted or
        removed above it); the other stored chunks are deleted and the other new chunks inserted.
        Deleting an FTS5 row reads its content back to remove its tokens, and inserting one tokenises
        it into the index's segments: an edit in one function of a 144-chunk file rewrote all 144
        (eslint's ``lib/types/rules.d.ts``, issue 20). ``u.terms`` is computed when absent, reusing the
        stored terms of unchanged chunks (:func:`chunk_terms`). The rows are those a delete and insert
        would have written, except that unchanged chunks keep their ids.
        """
        conn = self.conn
        stored = queries.stored_chunks_of(conn, u.path)
        if u.terms is None:
            u.terms = chunk_terms(u, known=stored_terms(stored))
        kept: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
        for cid, start, end, *same in stored:
            kept[tuple(same)].append((cid, start, end))
        conn.execute("DELETE FROM files WHERE path=?", (u.path,))
        self._file_row(u)
        fresh: list[tuple[Chunk, ChunkTerms]] = []
        moved: list[tuple[int, int, int]] = []
        for chunk, t in zip(u.chunks, u.terms, strict=True):
            same = (t.hash, chunk.header, chunk.heading, chunk.symbol, chunk.file_type, chunk.kind, t.stems,
                    t.body, t.heading, t.symbols)
            rows = kept.get(same)
            if not rows:
                fresh.append((chunk, t))
                continue
            cid, start, end = rows.pop(0)
            if (start, end) != (chunk.start, chunk.end):
                moved.append((chunk.start, chunk.end, cid))
        stale = [(cid,) for rows in kept.values() for cid, _start, _end in rows]
        if stale:
            conn.executemany("DELETE FROM chunks_fts WHERE rowid=?", stale)
            conn.executemany("DELETE FROM chunks WHERE id=?", stale)
        conn.executemany("UPDATE chunks SET start=?, end=? WHERE id=?", moved)
        _insert_chunk_rows(conn, u.path, [c for c, _ in fresh], [t for _, t in fresh])

    def _file_row(self, u: FileUpdate) -> None:
        self.conn.execute(
            "INSERT INTO files (path, size, mtime_ns, hash, file_type, kind, lines, redactions, structure, "
            "ctime_ns, ino, seen_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (u.path, u.size, u.mtime_ns, u.hash, u.file_type, u.kind, u.lines, u.redactions,
             u.structure_json if u.structure_json is not None else structure_text(u.structure),
             u.ctime_ns, u.ino, u.seen_ns),
        )

    def set_images(self, images: list[str]) -> None:
        """Replace the image list with ``images``."""
        self.conn.execute("DELETE FROM images")
        self.conn.executemany("INSERT INTO images VALUES (?)", [(p,) for p in images])

    def set_meta(self, meta: dict[str, str]) -> None:
        """Set ``meta`` keys."""
        for key, value in meta.items():
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


class Index:
    """A handle on one index file; safe to share across threads.

    Each thread gets its own SQLite connection (SQLite connections must not be
    shared between threads without locking); writes are serialised by SQLite's
    own lock (``BEGIN IMMEDIATE``) plus an in-process lock.

    Raises:
        IndexUnavailableError: the location cannot be created or opened.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexUnavailableError(f"cannot create the index directory {self.path.parent}: {exc.strerror}") from exc
        _ignore_index_folder(self.path.parent)
        self._open_or_rebuild()

    # -- connections -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise IndexUnavailableError(f"cannot open the index at {self.path}: {exc}") from exc
        conn.execute("PRAGMA journal_mode=WAL")
        # Without a limit the WAL keeps its largest size (twice the database after a rebuild).
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=OFF")
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; use :meth:`read` / :meth:`write`)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close every connection this handle opened."""
        with self._connections_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover - closing is best effort
                    pass
            self._connections.clear()
        self._local = threading.local()

    def _open_or_rebuild(self) -> None:
        if self.path.exists() and not self.path.is_file():
            raise IndexUnavailableError(
                f"the index path {self.path} exists and is not a regular file; choose another --index path")
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise IndexUnavailableError(f"the index at {self.path} is read-only; it cannot be updated")
        foreign = _foreign_tables(self.path) if self.path.exists() else []
        if foreign:
            raise IndexUnavailableError(
                f"{self.path} is another program's SQLite database (tables: {', '.join(foreign[:5])}), not an "
                "index: choose another --index path; nothing was changed")
        if self.path.exists() and not _may_be_index(self.path):
            raise IndexUnavailableError(
                f"{self.path} is not an index (it is not a SQLite database and has no .sqlite/.db name): "
                "choose another --index path; nothing was changed")
        try:
            self._migrate(self.conn)
            check = self.conn.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise _ForeignSchema(f"integrity check failed: {check[0][0] if check else 'no answer'}")
        except sqlite3.OperationalError as exc:
            if not _is_corruption(exc):  # locked, read-only, disk full, I/O: never throw the index away
                self.close()
                raise IndexUnavailableError(f"cannot open the index at {self.path}: {exc}") from exc
            self._rebuild(exc)
        except _NotAnIndex as exc:
            self.close()
            raise IndexUnavailableError(
                f"{self.path} is another program's SQLite database (tables: {', '.join(exc.tables[:5])}), not an "
                "index: choose another --index path; nothing was changed") from None
        except (sqlite3.DatabaseError, _ForeignSchema) as exc:
            self._rebuild(exc)

    def _rebuild(self, exc: Exception) -> None:
        """Move the unusable file aside (``<name>.broken-<time>``, nothing deleted) and start afresh."""
        self.close()
        aside = self.path.with_name(f"{self.path.name}.broken-{int(time.time())}")
        log.warning("index at %s is unusable (%s); kept as %s, rebuilding it", self.path, exc, aside.name)
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                try:
                    os.replace(src, Path(str(aside) + suffix))
                except OSError as move_exc:
                    raise IndexUnavailableError(f"cannot replace the broken index at {self.path}: {move_exc}") from move_exc
        try:
            self._migrate(self.conn)
        except sqlite3.Error as exc2:
            raise IndexUnavailableError(f"cannot create the index at {self.path}: {exc2}") from exc2

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if tables and "migrations" not in tables:
                raise _NotAnIndex(sorted(tables))
            conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
            known = {name for name, _ in MIGRATIONS}
            if done - known:
                raise _ForeignSchema(f"the index was written by a newer version ({sorted(done - known)})")
            for name, fn in MIGRATIONS:
                if name not in done:
                    fn(conn)
                    conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # -- transactions ------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every statement inside sees one generation."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    @contextmanager
    def write(self, *, bump: str = "generation") -> Iterator[sqlite3.Connection]:
        """A write transaction that bumps a counter on commit; rolls back on any exception.

        Args:
            bump: the ``meta`` counter to increment: ``generation`` for index
                content (also stamps ``updated_at``), ``vectors_version`` for
                embeddings added in the background (content unchanged).
        """
        conn = self.conn
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("INSERT OR IGNORE INTO meta VALUES (?, '0')", (bump,))
                conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = ?", (bump,))
                if bump == "generation":
                    conn.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('updated_at', ?)", (repr(time.time()),)
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    # -- reads -------------------------------------------------------------------------------

    def generation(self, conn: sqlite3.Connection | None = None) -> int:
        """The committed generation number (0 for a never-filled index)."""
        row = (conn or self.conn).execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    def meta(self, key: str) -> str | None:
        """A value from ``meta``, or ``None``."""
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def file_rows(self) -> dict[str, FileRow]:
        """``{path: FileRow}`` for every indexed file."""
        return {
            path: FileRow(size, mtime, digest, ctime, ino, seen)
            for path, size, mtime, digest, ctime, ino, seen in self.conn.execute(
                "SELECT path, size, mtime_ns, hash, ctime_ns, ino, seen_ns FROM files")
        }

    def image_paths(self) -> list[str]:
        """Indexed image paths, sorted."""
        return [r[0] for r in self.conn.execute("SELECT path FROM images ORDER BY path")]

    def file_paths(self) -> list[str]:
        """Every indexed file path, sorted (one read transaction)."""
        with self.read() as conn:
            return queries.file_paths(conn)

    def read_lines(self, path: str, start: int, end: int) -> str:
        """Indexed text of ``path`` lines ``start..end`` (1-based, inclusive), joined from its chunks.

        Reads the index, never the working tree, so secrets stay redacted and the text
        matches the generation that produced the line numbers. Where chunks overlap, the
        first chunk's copy of a line wins. Lines past the end of the file are simply
        absent (``""`` when none is left).

        Raises:
            KeyError: ``path`` is not indexed.
        """
        with self.read() as conn:
            text = queries.joined_lines(conn, path, start, end)
            if text is None:
                if not queries.has_file(conn, path):
                    raise KeyError(path)
                return ""
        return text

    def copy_count(self) -> int:
        """Number of files recorded as copies of another indexed file (``file_copies``)."""
        with self.read() as conn:
            return conn.execute("SELECT COUNT(DISTINCT path) FROM file_copies").fetchone()[0]

    def counts(self) -> tuple[int, int]:
        """``(files, chunks)`` currently indexed."""
        with self.read() as conn:
            files = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
            chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return files, chunks

    # -- writes ------------------------------------------------------------------------------

    def apply(
        self,
        *,
        updates: list[FileUpdate],
        removed: list[str],
        images: list[str] | None = None,
        full: bool = False,
        meta: dict[str, str] | None = None,
        after: Callable[[sqlite3.Connection], None] | None = None,
    ) -> int:
        """Write one update as a single transaction and return the new generation.

        Args:
            updates: new or changed files (their old chunks are replaced).
            removed: paths to forget.
            images: the complete current list of image paths (``None`` keeps it).
            full: drop everything first (a full rebuild).
            meta: extra ``meta`` keys to set.
            after: called with the connection once the files are written, inside the same
                transaction (derived tables such as ``file_copies``: readers see them with
                the generation they belong to).
        """
        with self.writer(full=full) as writer:
            writer.remove(removed)
            for u in updates:   # a changed file's unchanged chunks keep their rows (IndexWriter.replace)
                writer.add(u)
            if images is not None:
                writer.set_images(images)
            writer.set_meta(meta or {})
            if after is not None:
                after(writer.conn)
        return self.generation()

    @contextmanager
    def writer(self, *, full: bool = False) -> Iterator[IndexWriter]:
        """One update written as it is produced, in a single transaction (:meth:`write`): the
        :class:`IndexWriter` adds files one by one, and the generation is bumped and committed when
        the block ends (rolled back, nothing visible, on any exception); then the WAL is checkpointed.

        Example::

            with index.writer(full=True) as w:      # BEGIN IMMEDIATE; every row deleted
                for update in prepared:             # e.g. as worker processes return them
                    w.add(update)
                w.set_images(images)
            index.generation()                      # the new generation

        Args:
            full: drop every file, chunk and FTS row first (a full rebuild).
        """
        with self.write() as conn:
            if full:
                conn.execute("DELETE FROM files")
                if conn.execute(f"SELECT 1 FROM ({DOCUMENT_PATHS}) LIMIT 1").fetchone() is None:
                    conn.execute("DELETE FROM chunks")
                    # Deleting an FTS5 table's rows tokenises each one again to remove its postings;
                    # dropping and re-creating it (its stored DDL, in this transaction) costs half as much
                    # (27,660 chunks of eslint ×10: 0.81 s → 0.41 s).
                    (ddl,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
                    conn.execute("DROP TABLE chunks_fts")
                    conn.execute(ddl)
                else:  # documents, issues and pull requests are not files: their chunks stay
                    conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path NOT IN "
                                 f"({DOCUMENT_PATHS}))")
                    conn.execute(f"DELETE FROM chunks WHERE path NOT IN ({DOCUMENT_PATHS})")
            yield IndexWriter(conn, full=full)
        self.checkpoint(min_wal_bytes=CHECKPOINT_MIN_WAL_BYTES)

    def refresh_stats(self, files: Iterable[WalkedFile]) -> int:
        """Store the stat of walked files found unchanged by their content, so later updates trust it
        (:func:`rag.ingest.prepare.stat_unchanged`). The content is unchanged, so the generation is not
        bumped (``stat_version`` is). Returns the rows updated."""
        rows = [(f.size, f.mtime_ns, f.ctime_ns, f.ino, f.seen_ns, f.path) for f in files]
        if not rows:
            return 0
        with self.write(bump="stat_version") as conn:
            conn.executemany("UPDATE files SET size=?, mtime_ns=?, ctime_ns=?, ino=?, seen_ns=? WHERE path=?", rows)
        return len(rows)

    def checkpoint(self, *, min_wal_bytes: int = 0) -> bool:
        """Copy the WAL into the database and truncate it (``PRAGMA wal_checkpoint(TRUNCATE)``).

        Called after every update, so the ``-wal`` file does not stay at the size of the
        largest transaction. Best effort: with a reader still on an old snapshot SQLite
        checkpoints what it can and the file shrinks at the next call.

        Args:
            min_wal_bytes: do nothing while the ``-wal`` file is smaller than this: a small
                update's pages are left to SQLite's automatic checkpoint (every 1000 pages,
                ``PRAGMA wal_autocheckpoint``) instead of paying two ``fsync`` now.

        Returns:
            ``True`` when the WAL was fully checkpointed and truncated.
        """
        if min_wal_bytes > 0:
            try:
                if os.path.getsize(str(self.path) + "-wal") < min_wal_bytes:
                    return False
            except OSError:
                return False  # no WAL file: nothing to copy
        try:
            busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("WAL checkpoint failed: %s", exc)
            return False
        return busy == 0


def _insert_chunk_rows(conn: sqlite3.Connection, path: str, chunks: Sequence[Chunk],
                       terms: Sequence[ChunkTerms]) -> None:
    """Insert ``chunks`` of ``path`` with their precomputed ``terms`` into ``chunks`` and ``chunks_fts``."""
    path_text = index_text(path)
    for chunk, t in zip(chunks, terms, strict=True):
        cur = conn.execute(
            "INSERT INTO chunks (path, start, end, heading, symbol, file_type, kind, text, hash, stems, header)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (chunk.path, chunk.start, chunk.end, chunk.heading, chunk.symbol, chunk.file_type,
             chunk.kind, chunk.text, t.hash, t.stems, chunk.header),
        )
        conn.execute(
            "INSERT INTO chunks_fts (rowid, body, path, heading, symbols) VALUES (?,?,?,?,?)",
            (cur.lastrowid, t.body, path_text, t.heading, t.symbols),
        )


def insert_chunks(conn: sqlite3.Connection, path: str, chunks: list[Chunk], symbols: list[str] | None = None) -> None:
    """Insert ``chunks`` of ``path`` into ``chunks`` and ``chunks_fts`` (inside the caller's write transaction).

    ``symbols``: per chunk, space-separated names of symbols defined in it (the FTS ``symbols`` column).
    """
    update = FileUpdate(path, 0, 0, "", "", "", 0, 0, list(chunks), None, symbols)
    _insert_chunk_rows(conn, path, chunks, chunk_terms(update))


def delete_chunks(conn: sqlite3.Connection, path: str) -> int:
    """Delete every chunk of ``path`` (and its FTS rows) inside the caller's write transaction; returns how many."""
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,))]
    if ids:
        conn.executemany("DELETE FROM chunks_fts WHERE rowid=?", [(i,) for i in ids])
        conn.execute("DELETE FROM chunks WHERE path=?", (path,))
    return len(ids)


BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another connection's write transaction (an update in another process) to end."""
WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024
"""``journal_size_limit``: after a checkpoint the WAL is truncated to at most this size."""
CHECKPOINT_MIN_WAL_BYTES = 4 * 1024 * 1024
"""After an update the WAL is checkpointed and truncated only once it holds this much (SQLite's own
automatic checkpoint, 1000 pages of 4 KiB, keeps it about this size): a one-file update writes a
few hundred KiB, and its checkpoint's two ``fsync`` were a tenth of its time."""
SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file (https://www.sqlite.org/fileformat.html §1.3)."""
INDEX_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def _ignore_index_folder(folder: Path) -> None:
    """Put ``*`` in ``<repo>/.rag/.gitignore`` so ``git add -A`` never commits the index (as
    ``.venv``/``.pytest_cache`` do); only for the default ``.rag`` folder, best effort."""
    marker = folder / ".gitignore"
    if folder.name != ".rag" or marker.exists():
        return
    try:
        marker.write_text("# Slackzilla's index: not part of the repository\n*\n", encoding="utf-8")
    except OSError:
        pass


def _foreign_tables(path: Path) -> list[str]:
    """The tables of a SQLite database this program did not create (no ``migrations`` table),
    read through a read-only connection that changes nothing; ``[]`` for anything else."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                return []
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (OSError, sqlite3.Error):
        return []
    try:
        tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    except sqlite3.Error:
        return []  # damaged: the normal open decides (a rebuild keeps it aside)
    finally:
        conn.close()
    return tables if tables and "migrations" not in tables else []


def _may_be_index(path: Path) -> bool:
    """Whether an existing file may be (or have been) an index, so that a damaged one is rebuilt.

    An empty file, a SQLite database, or a file named like one (``*.sqlite``, ``*.db``:
    a damaged index) may be; any other file (``README.md`` given as ``--index``) is
    someone's data and is never moved aside or replaced.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError:
        return True  # unreadable: opening it reports the real reason
    return not head or head == SQLITE_HEADER or path.name.lower().endswith(INDEX_SUFFIXES)


def _chunk_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _is_corruption(exc: sqlite3.OperationalError) -> bool:
    """Whether an OperationalError means the file's content is bad (rather than access or locking)."""
    message = str(exc).lower()
    return any(word in message for word in ("malformed", "not a database", "no such table", "no such column",
                                             "duplicate column", "corrupt"))


class _NotAnIndex(Exception):
    """The file is a SQLite database with tables this program did not create: someone's data."""

    def __init__(self, tables: list[str]) -> None:
        super().__init__("the file holds tables this program did not create")
        self.tables = tables


class _ForeignSchema(Exception):
    """The file is a SQLite database but not one of ours (or from a newer version)."""
