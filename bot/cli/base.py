"""The ``slackzilla`` command line (DESIGN.md §6 is the contract).

Every command that reads a repository takes ``--repo`` (default ``$REPO_PATH``,
then the current directory) and ``--index`` (default ``$RAG_INDEX_PATH``, then
``<repo>/.rag/index.sqlite``). ``--json`` prints exactly one JSON document on
stdout; progress and logs go to stderr. Errors are one line on stderr and a
non-zero exit, never a traceback.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import click

from rag.engine import Engine
from rag.errors import RagError

__all__ = ["main", "cli"]

EXIT_USAGE = 2
EXIT_FAILURE = 1


def _fail(message: str, code: int = EXIT_FAILURE) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def friendly_errors(fn: Callable) -> Callable:
    """Turn engine and OS errors into one clear line and a non-zero exit."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RagError as exc:
            _fail(str(exc))
        except (OSError, ValueError) as exc:
            _fail(str(exc))
        except sqlite3.Error as exc:
            _fail(f"index error: {exc} (run `slackzilla index --full` to rebuild it)")
        except KeyboardInterrupt:
            _fail("interrupted", 130)

    return wrapper


repo_option = click.option(
    "--repo", "repo", type=click.Path(path_type=Path), envvar="REPO_PATH", default=None,
    help="Repository root (default: $REPO_PATH, then the current directory).",
)
index_option = click.option(
    "--index", "index_path", type=click.Path(path_type=Path), envvar="RAG_INDEX_PATH", default=None,
    help="Index file (default: $RAG_INDEX_PATH, then <repo>/.rag/index.sqlite).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` safe for a terminal: control characters other than newline and tab shown as ``\\xNN``.

    Repository text could otherwise carry escape sequences (OSC 52 clipboard
    writes, cursor moves) into the user's terminal.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _emit(data) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=None))


def open_engine(repo: Path | None, index_path: Path | None, *, update: bool = True, quiet: bool = False) -> Engine:
    """Open the engine and bring the index up to date (progress bar on a TTY unless ``quiet``).

    With an embeddings provider configured, retrieval also uses the vectors already
    stored (``slackzilla index`` computes missing ones; questions do not wait for that).
    """
    engine = Engine.open(repo, index_path=index_path, embeddings=embeddings_provider(), reranker=reranker())
    if update:
        run_update(engine, full=False, quiet=quiet)
    return engine


def run_update(engine: Engine, *, full: bool, quiet: bool):
    """Run one index update with a progress bar on stderr when it is a terminal."""
    with _progress_bar(quiet=quiet) as progress:
        return engine.update(full=full, progress=progress)


@contextlib.contextmanager
def _progress_bar(*, quiet: bool):
    """Yield a ``progress(done, total)`` callback drawing a bar on a terminal stderr, else ``None``."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="indexing", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        yield progress
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
def cli(verbose: bool) -> None:
    """Slackzilla: ask questions about a code repository."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")


@cli.command("index")
@repo_option
@index_option
@click.option("--full", is_flag=True, help="Rebuild the index from scratch.")
@json_option
@friendly_errors
def index_cmd(repo: Path | None, index_path: Path | None, full: bool, as_json: bool) -> None:
    """Build or update the index (incremental by content hash)."""
    from rag.ingest.reindexer import Reindexer

    engine = Engine.open(repo, index_path=index_path, embeddings=embeddings_provider())
    try:
        # The same lock as the bot's scheduler and /sz-reindex (in-process and a file lock):
        # a concurrent update raises ReindexBusyError, printed as one line.
        reindexer = Reindexer(engine)
        if engine.vectors is not None and not as_json:
            click.echo(f"embeddings: {engine.vectors.model} (missing vectors are computed after indexing)", err=True)
        with _progress_bar(quiet=as_json) as progress:
            record = reindexer.run(full=full, trigger="cli", progress=progress)
    finally:
        engine.close()
    if not record.ok:
        _fail(f"indexing failed: {record.error} (the previous index is unchanged)")
    stats = {"files": record.files, "chunks": record.chunks, "added": record.added, "changed": record.changed,
             "removed": record.removed, "skipped": record.skipped, "seconds": record.duration_s,
             "redactions": record.redactions, "generation": record.generation, "embeddings": record.embeddings}
    if as_json:
        _emit(stats)
        return
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(record.skipped.items())) or "none"
    click.echo(
        f"{record.files} files, {record.chunks} chunks: {record.added} added, {record.changed} changed, "
        f"{record.removed} removed in {record.duration_s:.2f}s (skipped: {skipped}; secrets redacted: {record.redactions})"
    )


def _check_question(question: str) -> str:
    if not question or not question.strip():
        _fail("the question is empty: pass a question in quotes, e.g. slackzilla ask \"how is the index built?\"", EXIT_USAGE)
    return question


@cli.command("retrieve")
@click.argument("question", required=False)
@repo_option
@index_option
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 100), help="Maximum sources.")
@click.option("--type", "kind", type=click.Choice(["documentation", "source", "config", "example", "test"]),
              default=None, help="Only chunks of this type.")
@click.option("--batch", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL file of {\"id\", \"question\"}; prints one JSON line per input line.")
@json_option
@friendly_errors
def retrieve_cmd(question, repo, index_path, limit, kind, batch, as_json) -> None:
    """Retrieve the sources that best match a question."""
    if batch is None:
        _check_question(question)
    engine = open_engine(repo, index_path, quiet=as_json or batch is not None)
    try:
        if batch is not None:
            from rag.evaluation import load_jsonl

            items = load_jsonl(batch)
            for number, item in enumerate(items, 1):  # check every line before printing anything
                if not isinstance(item, dict) or not isinstance(item.get("question"), str):
                    raise ValueError(f"{batch}:{number}: expected a JSON object with \"id\" and a \"question\" string")
            for item in items:
                sources = engine.retrieve(str(item.get("question", "")), limit=limit, kind=kind)
                _emit({"id": item.get("id"), "sources": [s.to_json() for s in sources]})
            return
        sources = engine.retrieve(question, limit=limit, kind=kind)
        images = engine.retrieve_images(question)
    finally:
        engine.close()
    if as_json:
        _emit({"sources": [s.to_json() for s in sources], "images": [i.to_json() for i in images]})
        return
    if not sources:
        click.echo("No matching sources.")
    for s in sources:
        click.echo(printable(f"{s.score:7.3f}  {s.path}:{s.start}-{s.end}" + (f"  # {s.heading}" if s.heading else "")))


@cli.command("ask")
@click.argument("question", required=False)
@repo_option
@index_option
@click.option("--no-ai", is_flag=True, help="Answer locally from the retrieved sources, without a model.")
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50), help="Sources to retrieve.")
@click.option("--type", "kind", type=click.Choice(["documentation", "source", "config", "example", "test"]),
              default=None, help="Only sources of this type.")
@json_option
@friendly_errors
def ask_cmd(question, repo, index_path, no_ai, limit, kind, as_json) -> None:
    """Answer a question about the repository, with sources.

    Uses the model when AI_API_KEY is set (tokens stream to the terminal),
    otherwise prints the retrieved sources with snippets.
    """
    _check_question(question)
    from bot.cli.terminal import format_answer_for_terminal

    engine = open_engine(repo, index_path, quiet=as_json)
    streamed = False

    def on_token(text: str) -> None:
        nonlocal streamed
        streamed = True
        sys.stdout.write(printable(text))
        sys.stdout.flush()

    try:
        result = asyncio.run(_bot_core(engine).asker.answer(
            question, with_ai=not no_ai, top_k=limit, kind=kind,
            on_token=None if as_json else on_token,
        ))
    finally:
        engine.close()
    if as_json:
        _emit(result.to_json())
        return
    if streamed:
        click.echo()
    click.echo(printable(format_answer_for_terminal(result, streamed=streamed)))


def embeddings_provider():
    """The configured embeddings provider (``EMBEDDINGS_*`` variables, or the installed local
    model), or ``None``; a misconfiguration is reported on stderr and retrieval stays BM25-only."""
    import os

    from rag.providers.embeddings import provider_from_env
    from rag.errors import ProviderError

    try:
        return provider_from_env(os.environ)
    except ProviderError as exc:
        click.echo(f"warning: embeddings disabled: {exc}", err=True)
        return None


def reranker():
    """The reranker configured by ``RERANK_URL`` (+ ``RERANK_API_KEY``, ``RERANK_MODEL``), or ``None``
    (off by default); a bad URL is reported on stderr and retrieval keeps the fused order."""
    import os

    from rag.errors import ProviderError
    from rag.providers.rerank import reranker_from_env

    try:
        return reranker_from_env(os.environ)
    except ProviderError as exc:
        click.echo(f"warning: reranking disabled: {exc}", err=True)
        return None


def _bot_core(engine: Engine):
    """The bot's Slack-free objects (registry, runtime, live tools, the asker) around ``engine``."""
    from bot.compose import compose_core
    from bot.settings import Settings

    return compose_core(Settings.from_env(require_slack=False), engine=engine)


@cli.command("tool")
@click.argument("name")
@click.option("--args", "args_json", default="{}", show_default=True, help="Tool arguments as a JSON object.")
@click.option("--describe", is_flag=True, help="Describe the tool and its arguments instead of running it.")
@repo_option
@index_option
@friendly_errors
def tool_cmd(name, args_json, describe, repo, index_path) -> None:
    """Run one live tool (getStatus, getCommands, runCommand, getLogs, ...) and print its sanitised output."""
    engine = open_engine(repo, index_path, quiet=True)
    try:
        context = _bot_core(engine)
        if describe:
            try:
                click.echo(context.tools.describe(name))
            except KeyError as exc:
                _fail(str(exc.args[0]) if exc.args else str(exc), EXIT_USAGE)
            return
        result = asyncio.run(context.tools.call(name, args_json, identity=None))
    finally:
        engine.close()
    click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    if not result.ok:
        sys.exit(EXIT_FAILURE)


@cli.command("eval")
@click.option("--set", "set_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--corpora", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path), help="Also write score.py-style results JSONL.")
@click.option("--index-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the corpora's indexes (and vectors) here between runs (default: a temp dir).")
@click.option("--embeddings", "use_embeddings", type=click.Choice(["auto", "off"]), default="auto", show_default=True,
              help="auto: hybrid retrieval when an embeddings provider is configured or installed.")
@json_option
@friendly_errors
def eval_cmd(set_path, corpora, limit, results, index_dir, use_embeddings, as_json) -> None:
    """Score retrieval on an eval set: R@1, R@5, MRR@10 per kind, abstain rate."""
    from rag.evaluation import run_eval

    provider = embeddings_provider() if use_embeddings == "auto" else None
    if index_dir is not None:
        index_dir.mkdir(parents=True, exist_ok=True)
    result = run_eval(set_path, corpora, limit=limit, results_out=results, index_dir=index_dir,
                      embeddings=provider, progress=lambda m: click.echo(m, err=True))
    if as_json:
        _emit(result)
        return
    click.echo(f"{'kind':<12}{'n':>4}{'R@1':>8}{'R@5':>8}{'MRR@10':>8}")
    for kind, row in [*result["kinds"].items(), ("ALL", result["all"])]:
        if row.get("n"):
            click.echo(f"{kind:<12}{row['n']:>4}{row['r1']:>8.3f}{row['r5']:>8.3f}{row['mrr10']:>8.3f}")
    ab = result["abstain"]
    if ab["n"]:
        click.echo(f"{'none':<12}{ab['n']:>4}  abstain rate {ab['rate']:.3f}")


@cli.command("bench")
@repo_option
@click.option("--queries", default=200, show_default=True, type=click.IntRange(1, 10000))
@click.option("--embeddings", "use_embeddings", type=click.Choice(["auto", "off"]), default="off", show_default=True,
              help="auto: also time embedding and hybrid queries with the configured provider.")
@click.option("--healthz", "healthz_rounds", type=click.IntRange(0, 20), default=0, show_default=True,
              help="Also measure GET /healthz latency on the bot's event loop during N full reindexes.")
@json_option
@friendly_errors
def bench_cmd(repo, queries, use_embeddings, healthz_rounds, as_json) -> None:
    """Benchmark indexing and query latency on a scratch copy of the repository."""
    from rag.evaluation import run_bench
    from rag.errors import RepoNotFoundError

    root = Path(repo or ".")
    if not root.is_dir():
        raise RepoNotFoundError(f"Repository not found: {root} is not a directory.")
    provider = embeddings_provider() if use_embeddings == "auto" else None
    if use_embeddings == "auto" and provider is None:
        raise click.UsageError("--embeddings auto: no embeddings provider is configured or installed")
    result = run_bench(root, queries=queries, progress=None if as_json else (lambda m: click.echo(m, err=True)),
                       embeddings=provider).to_json()
    if healthz_rounds:
        from bot.cli.loopbench import healthz_during_reindex

        result.update(asyncio.run(healthz_during_reindex(root, rounds=healthz_rounds)))
    if as_json:
        _emit(result)
        return
    for key, value in result.items():
        click.echo(f"{key:>18}: {value}")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="slackzilla")


def _load_subcommands() -> None:
    """Import the modules that attach further commands to :data:`cli` (explicit list)."""
    import importlib

    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name)


SUBCOMMAND_MODULES = ("bot.cli.code", "bot.cli.serve")
_load_subcommands()  # at the end: those modules import names defined above


if __name__ == "__main__":  # pragma: no cover
    main()
