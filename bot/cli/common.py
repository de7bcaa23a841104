"""What every ``slackzilla`` command shares: options, one-line errors, terminal-safe text, opening the engine.

Every command that reads a repository takes ``--repo`` (default ``$REPO_PATH``,
then the current directory) and ``--index`` (default ``$RAG_INDEX_PATH``, then
``<repo>/.rag/index.sqlite``). ``--json`` prints exactly one JSON document on
stdout; progress and logs go to stderr. Errors are one line on stderr and a
non-zero exit, never a traceback.
"""
from __future__ import annotations

import contextlib
import functools
import json
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bot.cli.environment import environment
from bot.cli.failure import EXIT_FAILURE, EXIT_USAGE, fail
from rag.errors import EmptyQuestionError, RagError
from rag.text import DIRECTION_CONTROLS, TAG_CHARACTERS

if TYPE_CHECKING:
    from rag.engine import Engine

__all__ = [
    "EXIT_FAILURE", "EXIT_USAGE", "bot_core", "check_question", "emit", "embeddings_provider", "fail",
    "friendly_errors", "index_option", "json_option", "json_text", "note_if_nothing_indexed", "open_engine",
    "pool_policy", "printable", "progress_bar", "repo_option", "repository_path", "reranker", "run_update",
]



def friendly_errors(fn: Callable) -> Callable:
    """Turn engine and OS errors into one clear line and a non-zero exit (a closed stdout pipe, as
    under ``| head``, is left to click, which exits 1 quietly)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RagError as exc:
            fail(str(exc))
        except BrokenPipeError:
            # The reader went away (`| head`): click's own handler exits 1 without a message.
            raise
        except (OSError, ValueError) as exc:
            fail(str(exc))
        except sqlite3.Error as exc:
            fail(f"index error: {exc} (run `slackzilla index --full` to rebuild it)")
        except KeyboardInterrupt:
            fail("interrupted", 130)

    return wrapper


def _env_default(position: int) -> Callable:
    """A click callback: the option's value, else ``REPO_PATH`` (``position`` 0) or ``RAG_INDEX_PATH`` (1)
    as read by :func:`rag.config.engine_paths` (unchecked; ``Engine.open`` checks the repository)."""

    def callback(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
        from rag.config import engine_paths

        return value if value is not None else engine_paths(environment())[position]

    return callback


repo_option = click.option(
    "--repo", "repo", type=click.Path(path_type=Path), default=None, callback=_env_default(0),
    help="Repository root, or a repository named in slackzilla.toml (default: $REPO_PATH, then the configured "
         "default, then the current directory); ask, retrieve and context also take 'all'.",
)
index_option = click.option(
    "--index", "index_path", type=click.Path(path_type=Path), default=None, callback=_env_default(1),
    help="Index file (default: $RAG_INDEX_PATH, then <repo>/.rag/index.sqlite).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")


_INVISIBLE_ORDER = DIRECTION_CONTROLS + TAG_CHARACTERS
"""Text-direction controls (a right-to-left override reorders what follows) and tag characters (invisible)."""
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_INVISIBLE_ORDER}]")
_CONTROL_OR_BREAK = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_INVISIBLE_ORDER}]")


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` safe for a terminal: control characters other than newline and tab shown as ``\\xNN``, and the
    text-direction controls and tag characters as ``\\uNNNN`` / ``\\UNNNNNNNN``.

    Repository text could otherwise carry escape sequences (OSC 52 clipboard
    writes, cursor moves) into the user's terminal. With ``one_line`` (a listing
    line holding a file name, a heading or a symbol), newline and tab are escaped
    too: a name ``a\\nb.py`` would otherwise print as two lines of the listing.
    """
    pattern = _CONTROL_OR_BREAK if one_line else _CONTROL
    return pattern.sub(_escaped, text)


def _escaped(match: re.Match) -> str:
    """A character as Python writes its escape: ``\\x1b``, ``\\u202e``, ``\\U000e0069``."""
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


_C1 = re.compile(r"[\x7f-\x9f]")


def json_text(data, *, indent: int | None = None) -> str:
    """``data`` as JSON with non-ASCII text kept, except DEL and the C1 controls (U+007F-U+009F,
    e.g. U+009B, an 8-bit CSI a terminal may obey), written as ``\\u`` escapes; JSON itself
    escapes U+0000-U+001F. Only string contents can hold them, so the result parses the same."""
    return _C1.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(data, ensure_ascii=False, indent=indent))


def emit(data) -> None:
    """Print ``data`` as one JSON line on stdout (:func:`json_text`)."""
    click.echo(json_text(data))


def check_question(question: str | None) -> str:
    """The question, or exit 2 with one line when it is empty (the check is
    :func:`rag.answer.question.require_question`, shared with Slack and the HTTP API)."""
    from rag.answer.question import require_question

    try:
        require_question(question)
    except EmptyQuestionError:
        fail("the question is empty: pass a question in quotes, e.g. slackzilla ask \"how is the index built?\"",
             EXIT_USAGE)
    return question


def repository_path(path: str, root: Path) -> str:
    """A file argument as the repository-relative POSIX path the index stores.

    A relative path is taken from the repository root, ``./`` and ``x/../`` resolved
    (``./lib/a.js``, ``lib/x/../a.js`` → ``lib/a.js``); an absolute path is accepted when it is
    inside ``root`` (compared as given and with symbolic links resolved, so a root reached
    through a link matches too). A path that leads out of the repository is a usage error
    (exit 2). Whether the file is indexed is the caller's question.
    """
    import os
    import posixpath

    shown = printable(path, one_line=True)
    if os.path.isabs(path):
        given = os.path.normpath(path)
        for base, candidate in ((os.path.abspath(root), given), (os.path.realpath(root), os.path.realpath(given))):
            relative = os.path.relpath(candidate, base)
            if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
                return Path(relative).as_posix()
        raise click.UsageError(f"{shown} is outside the repository ({printable(str(root), one_line=True)}); "
                               "give a path inside it, or relative to its root")
    relative = posixpath.normpath(path)
    if relative == os.pardir or relative.startswith(os.pardir + "/"):
        raise click.UsageError(f"{shown} leads out of the repository; give a path relative to its root")
    return relative


def open_engine(repo: Path | None, index_path: Path | None, *, update: bool = True, quiet: bool = False,
                allow_all: bool = False):
    """Open the engine ``--repo`` selects and bring the index up to date (progress bar on a TTY unless ``quiet``).

    ``--repo`` is a path or a repository named in ``slackzilla.toml`` (:func:`bot.cli.repos.select_repositories`);
    with ``allow_all``, ``all`` opens every configured repository as one
    :class:`rag.federation.FederatedEngine` (one that cannot be opened is skipped with a warning).
    With an embeddings provider configured, retrieval also uses the vectors already
    stored (``slackzilla index`` computes missing ones; questions do not wait for that).
    """
    from bot.cli.selection import select_repositories
    from rag.engine import Engine

    configs = select_repositories(repo, index_path)
    if len(configs) > 1 and not allow_all:
        fail("this command reads one repository: name one with --repo (ask, retrieve and context take --repo all)",
             EXIT_USAGE)
    embeddings, rerank = embeddings_provider(), reranker()
    engines = {}
    for config in configs:
        try:
            engine = Engine.open(config.path, index_path=config.index_path, embeddings=embeddings, reranker=rerank,
                                 pool_policy=pool_policy(), name=config.name, scope=None if config.scope.empty else config.scope)
        except RagError as exc:
            if len(configs) == 1:
                raise
            click.echo(f"warning: {config.name} skipped: {exc}", err=True)
            continue
        if update:
            run_update(engine, full=False, quiet=quiet)
        engines[config.name] = engine
    if len(configs) == 1:
        return engines[configs[0].name]
    if not engines:
        fail("no configured repository could be opened")
    from rag.federation import FederatedEngine

    return FederatedEngine(engines)


def note_if_nothing_indexed(engine) -> None:
    """``note: Nothing is indexed in NAME: …`` on stderr for each repository of ``engine`` whose index
    holds no file, so an empty answer is not taken for "nothing matched" (``ask`` raises
    ``IndexEmptyError`` instead; :func:`rag.ingest.reindexer.empty_index_message` is the text)."""
    from rag.ingest.reindexer import empty_index_message

    members = getattr(engine, "members", None) or {"": engine}
    for member in members.values():
        try:
            files = member.index.counts()[0]
        except sqlite3.Error:
            continue  # the retrieval itself reports an unreadable index
        if files == 0:
            click.echo(f"note: {empty_index_message(member.repo_root.name, None)}", err=True)


def run_update(engine: Engine, *, full: bool, quiet: bool):
    """Run one index update with a progress bar on stderr when it is a terminal; returns its ``IndexStats``."""
    with progress_bar(quiet=quiet) as progress:
        return engine.update(full=full, progress=progress)


@contextlib.contextmanager
def progress_bar(*, quiet: bool, label: str = "indexing"):
    """Yield a ``progress(done, total)`` callback drawing a bar labelled ``label`` on a terminal stderr,
    else ``None``. The bar is drawn from the first call and finished (its line ended) when ``done``
    reaches ``total``, so a second bar of a later phase starts on a line of its own."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    bar = None
    finished = False

    def progress(done: int, total: int) -> None:
        nonlocal bar, finished
        if finished:
            return
        if bar is None:
            bar = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)
            finished = True

    try:
        yield progress
    finally:
        if bar is not None and not finished:
            bar.__exit__(None, None, None)


def embeddings_provider(*, whole_index: bool = False):
    """The configured embeddings provider (``EMBEDDINGS_*`` variables, or the installed local
    model), or ``None``; a misconfiguration is reported on stderr and retrieval stays BM25-only.

    ``whole_index``: the command embeds whole indexes while the user waits (``index``, ``eval``), so
    a local ONNX model runs one thread per usable CPU unless ``EMBEDDINGS_LOCAL_THREADS`` says
    otherwise (:func:`rag.providers.embeddings.build_embeddings`); else one, as in the bot."""
    from rag.config import EmbeddingsConfig
    from rag.ingest.pool import usable_cpus
    from rag.providers.embeddings import build_embeddings

    threads = usable_cpus() if whole_index else None
    return _build_or_warn("embeddings", lambda: build_embeddings(EmbeddingsConfig.from_env(environment()), threads=threads))


def reranker():
    """The reranker configured by ``RERANK_URL`` (+ ``RERANK_API_KEY``, ``RERANK_MODEL``), or ``None``
    (off by default); a bad URL is reported on stderr and retrieval keeps the fused order."""
    from rag.config import RerankConfig
    from rag.providers.rerank import build_reranker

    return _build_or_warn("reranking", lambda: build_reranker(RerankConfig.from_env(environment())))


def pool_policy():
    """How updates prepare files (``INDEX_WORKERS``: worker processes, ``auto`` by default), as a
    :class:`rag.ingest.pool.PoolPolicy`; a bad value is reported on stderr and the default used."""
    from rag.config import ConfigError, IndexingConfig
    from rag.ingest.pool import DEFAULT_POOL_POLICY, PoolPolicy

    try:
        return PoolPolicy(workers=IndexingConfig.from_env(environment()).workers)
    except ConfigError as exc:
        click.echo(f"warning: {'; '.join(exc.problems)} (using auto)", err=True)
        return DEFAULT_POOL_POLICY


def _build_or_warn(what: str, build: Callable):
    """``build()``, or ``None`` after ``warning: <what> disabled: <reason>`` on stderr (one line)."""
    from rag.config import ConfigError
    from rag.errors import ProviderError

    try:
        return build()
    except ConfigError as exc:
        click.echo(f"warning: {what} disabled: {'; '.join(exc.problems)}", err=True)
    except ProviderError as exc:
        click.echo(f"warning: {what} disabled: {exc}", err=True)
    return None


def bot_core(engine: Engine):
    """The bot's Slack-free objects around ``engine`` (:func:`bot.compose.compose_core`: registry,
    runtime, live tools and the one answer entry point, ``.asker``); loads neither Bolt nor Slack."""
    import os

    from bot.compose import compose_core
    from bot.settings import Settings

    from bot.repos import OpenedRepository

    members = getattr(engine, "members", None)
    if members is None:
        # The repository is the one --repo chose, also for deciding whether ./.env is that repository's own file.
        environ = {**environment(), "REPO_PATH": str(engine.repo_root)}
        return compose_core(Settings.from_env(environ, require_slack=False, dotenv_path=None), engine=engine)
    # --repo all: every repository of slackzilla.toml
    settings = Settings.from_env(environment(), require_slack=False, dotenv_path=None)
    from bot.compose import repo_config_for

    opened = [OpenedRepository(repo_config_for(member, settings), member) for member in members.values()]
    return compose_core(settings, engine=next(iter(members.values())), repositories=opened)
