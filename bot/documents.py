"""Documents across the bot's repositories: one service behind ``/api/documents``, ``slackzilla docs``
and the "Save to Slackzilla" shortcut.

    docs = DocumentService({"api": api_engine, "web": web_engine}, max_chars=200_000)
    doc, repo = docs.add("Deploy runbook", text, repo="api")   # stored in api's index
    docs.add("On-call rota", text)                             # global: stored in every repository's index
    docs.list(repo="api")                                      # api's own and the global ones
    docs.remove(doc.id); docs.clear(repo="api")                # clear empties only api's own documents

Each repository's documents live in its own index (:class:`rag.documents.DocumentStore`),
searched with its files. A *global* document (no ``repo``) is stored in every serving
repository's index under one id (``shared``), so every repository's questions find it
through the same retriever and the same statistics as its own text, and ``in:all``
fusion keeps one copy (same path). A repository that was down when a global document was
added gets it at the next start (:meth:`DocumentService.sync_shared`).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from rag.documents import (DEFAULT_MAX_CHARS, Document, DocumentError, DocumentStore, DocumentWriteError,
                           new_document_id)
from rag.errors import UserError

__all__ = ["DocumentService", "StoredDocument", "UnknownDocumentRepositoryError"]

log = logging.getLogger(__name__)


class UnknownDocumentRepositoryError(UserError):
    """A document request named a repository that does not serve; the message lists those that do."""


@dataclass(frozen=True)
class StoredDocument:
    """A document and where it is stored: ``repo`` is its repository's name, ``None`` for a global one."""

    document: Document
    repo: str | None

    def to_json(self, *, full: bool = False) -> dict:
        """:meth:`rag.documents.Document.to_json` plus ``"repo"``."""
        return {**self.document.to_json(full=full), "repo": self.repo}


class DocumentService:
    """Add, list, show, remove and clear documents of several repositories (module docstring).

    Args:
        engines: repository name → opened :class:`rag.engine.Engine` (the serving ones, in order).
        max_chars: the size cap of one document (``[documents] max_chars``).
    """

    def __init__(self, engines: Mapping[str, object], *, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.engines = dict(engines)
        self.max_chars = max_chars

    def _store(self, name: str) -> DocumentStore:
        engine = self.engines[name]
        return DocumentStore(engine.index, literals=engine.secret_redactor(), max_chars=self.max_chars)

    def _name(self, repo: str | None) -> str | None:
        if repo is None:
            return None
        for name in self.engines:
            if name.lower() == repo.lower():
                return name
        raise UnknownDocumentRepositoryError(f"There is no repository called {repo[:60]!r} to store documents in; "
                                             f"choose one of {', '.join(self.engines)} (or none, for every one).")

    def add(self, title: str, text: str, *, metadata: dict | None = None, repo: str | None = None) -> StoredDocument:
        """Store a document for ``repo`` (a name), or for every repository (``None``).

        Raises:
            rag.documents.DocumentTooLargeError, rag.documents.DocumentError: refused (nothing stored).
            rag.documents.DocumentWriteError: an index could not be written; a global document already
                written to other indexes is removed from them again.
            UnknownDocumentRepositoryError: ``repo`` does not serve.
        """
        name = self._name(repo)
        if name is not None:
            return StoredDocument(self._store(name).add(title, text, metadata=metadata), name)
        doc_id, stored, written = new_document_id(), None, []
        try:
            for each in self.engines:
                doc = self._store(each).add(title, text, metadata=metadata, doc_id=doc_id, shared=True,
                                            created_at=stored.created_at if stored else None)
                written.append(each)
                stored = stored or doc
        except DocumentWriteError:
            self._undo_add(doc_id, written)  # all or none: the caller is told nothing was stored
            raise
        if stored is None:
            raise DocumentError("No repository serves, so the document cannot be stored.")
        return StoredDocument(stored, None)

    def _undo_add(self, doc_id: str, names: list[str]) -> None:
        for each in names:
            try:
                self._store(each).remove(doc_id)
            except DocumentWriteError as err:  # kept there; sync_shared copies it to the others at the next start
                log.warning("global document %s stays in %s after a failed add: %s", doc_id, each, err)

    def list(self, *, repo: str | None = None) -> list[StoredDocument]:
        """Every document (``repo``: that repository's own and the global ones), oldest first."""
        name = self._name(repo)
        found: dict[str, StoredDocument] = {}
        for each in ([name] if name else self.engines):
            for doc in self._store(each).list():
                found.setdefault(doc.id, StoredDocument(doc, None if doc.shared else each))
        return sorted(found.values(), key=lambda d: (d.document.created_at, d.document.id))

    def get(self, doc_id: str) -> StoredDocument | None:
        """The document ``doc_id`` (or ``doc:<id>``), or ``None``."""
        for each in self.engines:
            doc = self._store(each).get(doc_id)
            if doc is not None:
                return StoredDocument(doc, None if doc.shared else each)
        return None

    def remove(self, doc_id: str) -> bool:
        """Delete the document from every index holding it; ``True`` when one did. A global document
        leaves a tombstone in every serving index, so a repository that was not serving, and still holds
        it, loses it at the next :meth:`sync_shared` instead of copying it back."""
        found = self.get(doc_id)
        tombstone = found is not None and found.repo is None
        return any([self._store(each).remove(doc_id, tombstone=tombstone) for each in self.engines])

    def clear(self, *, repo: str | None = None) -> int:
        """Delete documents: ``repo``'s own (its global copies stay, so the other repositories keep them
        too), or every document (``None``). Returns how many distinct documents went."""
        name = self._name(repo)
        if name is not None:
            return len(self._store(name).clear(shared=False))
        return len({doc_id for each in self.engines for doc_id in self._store(each).clear()})

    def sync_shared(self) -> int:
        """Copy global documents into the serving repositories that lack them (a repository that was
        down when one was added), and delete the ones another repository's index has a tombstone for
        (deleted while this one was down); returns how many copies were written."""
        shared: dict[str, Document] = {}
        held: dict[str, set[str]] = {}
        deleted: set[str] = set()
        for each in self.engines:
            store = self._store(each)
            docs = [d for d in store.list() if d.shared]
            held[each] = {d.id for d in docs}
            deleted |= store.tombstones()
            for doc in docs:
                shared.setdefault(doc.id, doc)
        for each in self.engines:
            for doc_id in sorted(held[each] & deleted):
                self._store(each).remove(doc_id)
                log.info("global document %s deleted from %s too (deleted elsewhere while it was down)", doc_id, each)
        written = 0
        for each in self.engines:
            for doc_id, doc in shared.items():
                if doc_id not in held[each] and doc_id not in deleted:
                    self._store(each).add(doc.title, doc.text, metadata=doc.metadata, doc_id=doc_id, shared=True,
                                          created_at=doc.created_at)
                    written += 1
        if written:
            log.info("copied %d global document(s) into repositories that lacked them", written)
        return written
