"""The engine's exception tree.

    RagError                      base of every error the engine raises on purpose
    ├── UserError                 bad input; its message is shown to the user as is
    │   ├── EmptyQuestionError    the question is empty or only white space
    │   └── RepoNotFoundError     the repository path does not exist or is not a directory
    ├── IndexUnavailableError     the index file cannot be created, opened or written
    ├── IndexWorkerError          an indexing worker process died; nothing was written
    └── ProviderError             the model / embeddings provider failed (reason is user-facing)

Everything under ``UserError`` carries a message written for a person: the CLI
prints it as one line, the Slack bot shows it in the channel.
"""
from __future__ import annotations

__all__ = [
    "RagError",
    "UserError",
    "EmptyQuestionError",
    "RepoNotFoundError",
    "IndexUnavailableError",
    "IndexOfAnotherRepositoryError",
    "IndexWorkerError",
    "ProviderError",
]


class RagError(Exception):
    """Base class of every error the engine raises deliberately."""


class UserError(RagError):
    """Bad input; ``str(err)`` is a complete sentence meant for the user."""


class EmptyQuestionError(UserError):
    """The question is empty or contains only white space."""

    def __init__(self, message: str = "The question is empty: type a question after the command.") -> None:
        super().__init__(message)


class RepoNotFoundError(UserError):
    """The repository root does not exist or is not a directory."""


class IndexUnavailableError(RagError):
    """The index location cannot be created, opened or written (permissions, disk full)."""


class IndexOfAnotherRepositoryError(UserError):
    """The index was built for another repository that still exists (two repositories configured with
    one ``index_path``, or ``--index`` naming another repository's index): updating it would replace
    that repository's files. ``str(err)`` names both and what to do."""


class IndexWorkerError(RagError):
    """A worker process of the indexing pool (:mod:`rag.ingest.pool`) died (killed, out of memory,
    a crash in a native library) before it returned its files; the update wrote nothing, the
    previous generation is unchanged. ``str(err)`` names the files it was preparing and how it ended."""


class ProviderError(RagError):
    """A model or embeddings provider failed; ``str(err)`` is a one-line, user-facing reason."""


class InputRejectedError(ProviderError):
    """The provider refused the request's inputs (HTTP 400, 413 or 422), not the request itself:
    sending fewer inputs may succeed (an embeddings batch is split to find the one refused)."""


class UpdateCancelledError(RagError):
    """An index update stopped before it wrote anything (a deadline passed or shutdown asked);
    the previous generation is unchanged. ``str(err)`` says why."""
