"""Documents: titled text that lives in no repository (a runbook, a decision, a saved Slack thread),
stored in a repository's index and searched by the same retriever as its files.

    store = DocumentStore(engine.index, literals=engine.secret_redactor())
    doc = store.add("Deploy runbook", text, metadata={"url": "https://…"})   # Document(id="3f9a1c2b7e", …)
    engine.retrieve("how do we roll back a release?")                        # may return doc:3f9a1c2b7e
    store.remove(doc.id)

Storage: the ``documents`` table of the index (migration ``m006_documents``) holds the
text, title, metadata (JSON) and creation time; the text is chunked like a Markdown file
(:func:`rag.ingest.chunk.chunk_text`, kind ``documentation``) into ``chunks`` under the
path ``doc:<id>``, each chunk's heading being the title, with the same FTS5 columns as
file chunks, so BM25, the structure signals, the vector stream (vectors are computed by
the next index update's embedding step, like any new chunk) and the reranker treat them
alike. A document has no row in ``files``: an incremental update never removes it, a full
rebuild spares its chunks (:meth:`rag.store.index.Index.apply`), so documents survive
reindexes and restarts. Every write is one transaction that bumps the index generation
(readers' caches are keyed by it).

Secrets: title, text and metadata are redacted like repository text, once, before anything is
stored (:func:`rag.secrets.redact_secrets` for Markdown, then :func:`rag.secrets.redact_text`
with the repository's secret-file values); the count is kept in ``redactions``.

Ids are 10 random hex characters (40 bits), unique across every index, so a document
shared by several repositories (``shared``: stored in each, see ``bot.documents``) has one
id and one citation, ``doc:<id>``.
"""
from __future__ import annotations

import json
import re
import secrets
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from rag.errors import UserError
from rag.ingest.chunk import DEFAULT_CHUNK_POLICY, ChunkPolicy, chunk_text
from rag.secrets import LiteralRedactor, redact_secrets, redact_text
from rag.store.index import Index, delete_chunks, insert_chunks
from rag.text import CONTROL_CHARACTERS, DIRECTION_CONTROLS, TAG_CHARACTERS

__all__ = ["DOC_PREFIX", "DEFAULT_MAX_CHARS", "MAX_TITLE_CHARS", "TITLE_CONTROL", "PREVIEW_CHARS", "Document", "DocumentError",
           "DocumentTooLargeError", "DocumentWriteError", "DocumentStore", "document_path", "new_document_id"]

DOC_PREFIX = "doc:"
DEFAULT_MAX_CHARS = 200_000
"""Largest document accepted, in characters (about 50,000 tokens)."""
MAX_TITLE_CHARS = 200
MAX_METADATA_BYTES = 8 * 1024
PREVIEW_CHARS = 100
_ID_CHARS = set("0123456789abcdef")
_INVISIBLE = re.compile("[\u00ad\u034f\u115f\u1160\u180e\u200b-\u200f\u2060-\u2064\u3164\ufeff\uffa0]")
"""Characters that show nothing (zero-width spaces and joiners, word joiner, fillers): a title of only these is
no title."""
TITLE_CONTROL = re.compile(f"[{CONTROL_CHARACTERS}{DIRECTION_CONTROLS}\ufeff{TAG_CHARACTERS}]")
"""What a title may not hold once its whitespace is folded: the C0 and C1 controls and DEL (a terminal
obeys escape sequences) and the text-direction controls (a right-to-left override makes ``gnp.exe`` read
``exe.png``; Unicode TR 9, as in the "Trojan Source" attacks, CVE-2021-42574), the byte-order mark and the tag
characters (U+E0000-U+E007F: invisible text a model still reads, "ASCII smuggling"). Joiners stay (emoji)."""


class DocumentError(UserError):
    """A document was refused (empty, a bad title or metadata); the message says why."""


class DocumentTooLargeError(DocumentError):
    """The document is longer than the size cap; the message gives both sizes."""


class DocumentWriteError(DocumentError):
    """The index could not be written, so nothing was added or deleted: ``busy`` while an index update
    (another process) holds it past SQLite's busy timeout, to be tried again; else the disk is full or
    read-only. The message says which."""

    def __init__(self, message: str, *, busy: bool) -> None:
        super().__init__(message)
        self.busy = busy


def new_document_id() -> str:
    """10 random hex characters (``secrets.token_hex(5)``)."""
    return secrets.token_hex(5)


def document_path(doc_id: str) -> str:
    """``doc:<id>``: the path of a document's chunks, and its citation."""
    return DOC_PREFIX + doc_id


def is_document_id(text: str) -> bool:
    """Whether ``text`` looks like a document id (hex, 6 to 32 characters)."""
    return 6 <= len(text) <= 32 and set(text) <= _ID_CHARS


@dataclass(frozen=True)
class Document:
    """One stored document.

    Attributes:
        id: its id (``doc:<id>`` is its path and citation).
        title: its title (redacted).
        text: its text (redacted).
        metadata: JSON-ready metadata given when it was added (``url`` links to its origin).
        created_at: epoch seconds.
        shared: stored for every repository (a global document), not one.
        redactions: secrets replaced by ``[REDACTED]`` when it was added.
    """

    id: str
    title: str
    text: str
    metadata: dict = field(default_factory=dict)
    created_at: float = 0.0
    shared: bool = False
    redactions: int = 0

    @property
    def path(self) -> str:
        return document_path(self.id)

    def preview(self, chars: int = PREVIEW_CHARS) -> str:
        """The first ``chars`` characters of the text, white space folded (``…`` when cut)."""
        flat = " ".join(self.text.split())
        return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"

    def to_json(self, *, full: bool = False) -> dict:
        """``{"id", "title", "preview", "length", "metadata", "created_at", "shared", "redactions"}``
        (``"text"`` too with ``full``)."""
        data = {"id": self.id, "title": self.title, "preview": self.preview(), "length": len(self.text),
                "metadata": self.metadata, "created_at": self.created_at, "shared": self.shared,
                "redactions": self.redactions}
        if full:
            data["text"] = self.text
        return data


class DocumentStore:
    """The documents of one index (module docstring). Thread-safe as :class:`rag.store.index.Index` is.

    Args:
        index: the repository's index.
        literals: the repository's secret-file values (``Engine.secret_redactor()``), redacted too.
        max_chars: the size cap (characters).
        chunk_policy: how the text is chunked (the files' policy by default).
    """

    def __init__(self, index: Index, *, literals: LiteralRedactor | None = None, max_chars: int = DEFAULT_MAX_CHARS,
                 chunk_policy: ChunkPolicy = DEFAULT_CHUNK_POLICY) -> None:
        self.index = index
        self.literals = literals
        self.max_chars = max_chars
        self.chunk_policy = chunk_policy

    def _redact(self, text: str, *, file_type: str) -> tuple[str, int]:
        text, first = redact_secrets(text, file_type=file_type)
        text, second = redact_text(text, literals=self.literals)
        return text, first + second

    @contextmanager
    def _write(self):
        """:meth:`rag.store.index.Index.write`, its SQLite failures raised as :class:`DocumentWriteError`."""
        try:
            with self.index.write() as conn:
                yield conn
        except sqlite3.OperationalError as exc:
            reason = str(exc)
            if "locked" in reason or "busy" in reason:
                raise DocumentWriteError("The index is being updated (another process is writing it), so the "
                                         "documents were not changed; try again in a moment.", busy=True) from exc
            raise DocumentWriteError(f"The index cannot be written ({reason[:120]}), so the documents were not "
                                     "changed.", busy=False) from exc

    def _redact_metadata(self, metadata: dict, encoded: str) -> tuple[dict, str, int]:
        """``(metadata, its JSON, redactions)``: the JSON redacted as a JSON file is (a value after a secret's
        name, a URL's password, a token anywhere), or each string value alone should that break the JSON."""
        redacted, hits = self._redact(encoded, file_type="json")
        if not hits:
            return metadata, encoded, 0
        try:
            value = json.loads(redacted)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            counted = [0]

            def each(item):
                if isinstance(item, str):
                    item, found = self._redact(item, file_type="txt")
                    counted[0] += found
                    return item
                if isinstance(item, dict):
                    return {key: each(inner) for key, inner in item.items()}
                return [each(inner) for inner in item] if isinstance(item, list) else item

            value, hits = each(metadata), counted[0]
        return value, json.dumps(value, ensure_ascii=False, sort_keys=True), hits

    def add(self, title: str, text: str, *, metadata: dict | None = None, doc_id: str | None = None,
            shared: bool = False, created_at: float | None = None) -> Document:
        """Store, chunk and index a document (one transaction); returns it as stored (redacted).

        Args:
            title: 1-200 characters.
            text: the body (Markdown or plain text), at most ``max_chars`` characters.
            metadata: JSON-serialisable object, at most 8 KiB as JSON (``url`` links to its origin).
            doc_id: its id (default: a new one); an existing document with that id is replaced.
            shared: a global document (stored in every repository by ``bot.documents``).
            created_at: epoch seconds (default now).

        Raises:
            DocumentTooLargeError: ``text`` is over the cap.
            DocumentError: an empty text or title, a title over 200 characters or holding a control
                character (:data:`TITLE_CONTROL`; whitespace folds to spaces), metadata that is not a
                JSON object or is too large, a malformed ``doc_id``.
        """
        if not isinstance(title, str) or not _INVISIBLE.sub("", title).strip():  # "\u200b" shows nothing
            raise DocumentError("A document needs a title.")
        title = " ".join(title.split())  # line breaks and tabs (str.split's whitespace) fold to spaces
        control = TITLE_CONTROL.search(title)
        if control is not None:
            raise DocumentError(f"The title holds the control character U+{ord(control.group(0)):04X}; "
                                "a title is one line of plain text.")
        if len(title) > MAX_TITLE_CHARS:
            raise DocumentError(f"The title is {len(title)} characters; the limit is {MAX_TITLE_CHARS}.")
        if not isinstance(text, str) or not text.strip():
            raise DocumentError("The document is empty.")
        if len(text) > self.max_chars:
            raise DocumentTooLargeError(f"The document is {len(text):,} characters; the limit is "
                                        f"{self.max_chars:,} (split it, or raise [documents] max_chars).")
        metadata = dict(metadata or {})
        try:
            encoded = json.dumps(metadata, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            raise DocumentError("The metadata must be a JSON object.") from None
        if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
            raise DocumentError(f"The metadata is larger than {MAX_METADATA_BYTES // 1024} KiB.")
        metadata, encoded, meta_hits = self._redact_metadata(metadata, encoded)
        if doc_id is not None and not is_document_id(doc_id):
            raise DocumentError(f"{doc_id[:40]!r} is not a document id.")
        doc_id = doc_id or new_document_id()
        title, title_hits = self._redact(title, file_type="txt")
        body, hits = self._redact(text, file_type="md")
        path = document_path(doc_id)
        chunks = [
            type(chunk)(chunk.path, chunk.start, chunk.end, chunk.text, chunk.file_type, chunk.kind,
                        title if not chunk.heading else f"{title}: {chunk.heading}", chunk.symbol)
            for chunk in chunk_text(path, body, file_type="md", kind="documentation", policy=self.chunk_policy)
        ]
        created = time.time() if created_at is None else float(created_at)
        doc = Document(doc_id, title, body, metadata, created, bool(shared), hits + title_hits + meta_hits)
        with self._write() as conn:
            delete_chunks(conn, path)
            conn.execute("DELETE FROM document_tombstones WHERE id = ?", (doc_id,))  # stored again on purpose
            conn.execute("INSERT OR REPLACE INTO documents VALUES (?,?,?,?,?,?,?)",
                         (doc.id, doc.title, doc.text, encoded, doc.created_at, int(doc.shared), doc.redactions))
            insert_chunks(conn, path, chunks)
        self.index.checkpoint()
        return doc

    def get(self, doc_id: str) -> Document | None:
        """The document ``doc_id`` (a bare id or ``doc:<id>``), or ``None``."""
        doc_id = doc_id.removeprefix(DOC_PREFIX)
        with self.index.read() as conn:
            row = conn.execute("SELECT id, title, text, metadata, created_at, shared, redactions FROM documents "
                               "WHERE id = ?", (doc_id,)).fetchone()
        return _document(row) if row else None

    def list(self) -> list[Document]:
        """Every document, oldest first."""
        with self.index.read() as conn:
            rows = conn.execute("SELECT id, title, text, metadata, created_at, shared, redactions FROM documents "
                                "ORDER BY created_at, id").fetchall()
        return [_document(row) for row in rows]

    def count(self) -> int:
        """How many documents are stored."""
        with self.index.read() as conn:
            return conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]

    def remove(self, doc_id: str, *, tombstone: bool = False) -> bool:
        """Delete a document and its chunks (one transaction); ``True`` when it existed.

        A shared document leaves a tombstone (:meth:`tombstones`), and so does any id with
        ``tombstone`` (a global document this index does not hold: the deletion is remembered for
        the repositories that do)."""
        doc_id = doc_id.removeprefix(DOC_PREFIX)
        with self.index.read() as conn:
            row = conn.execute("SELECT shared FROM documents WHERE id = ?", (doc_id,)).fetchone()
        if row is None and not tombstone:
            return False
        with self._write() as conn:
            if row is not None:
                delete_chunks(conn, document_path(doc_id))
                conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
            if tombstone or row[0]:
                conn.execute("INSERT OR REPLACE INTO document_tombstones VALUES (?, ?)", (doc_id, time.time()))
        return row is not None

    def clear(self, *, shared: bool | None = None) -> list[str]:
        """Delete every document (``shared=False``: only this repository's own, ``True``: only the shared
        ones) in one transaction, shared ones leaving tombstones; returns the ids deleted."""
        where = "" if shared is None else f"WHERE shared = {int(bool(shared))}"
        with self.index.read() as conn:
            rows = conn.execute(f"SELECT id, shared FROM documents {where}").fetchall()
        if not rows:
            return []
        removed_at = time.time()
        with self._write() as conn:
            for doc_id, is_shared in rows:
                delete_chunks(conn, document_path(doc_id))
                conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
                if is_shared:
                    conn.execute("INSERT OR REPLACE INTO document_tombstones VALUES (?, ?)", (doc_id, removed_at))
        return [doc_id for doc_id, _ in rows]

    def tombstones(self) -> set[str]:
        """The ids of shared documents deleted from this index (:meth:`remove`, :meth:`clear`)."""
        with self.index.read() as conn:
            return {r[0] for r in conn.execute("SELECT id FROM document_tombstones")}


def _document(row) -> Document:
    doc_id, title, text, metadata, created_at, shared, redactions = row
    try:
        meta = json.loads(metadata) if metadata else {}
    except ValueError:
        meta = {}
    return Document(doc_id, title, text, meta if isinstance(meta, dict) else {}, float(created_at), bool(shared),
                    int(redactions))
