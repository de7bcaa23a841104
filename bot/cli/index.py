"""``slackzilla index``: build or update the index under the shared reindex lock."""
from __future__ import annotations

from pathlib import Path

import click

from bot.cli.common import (embeddings_provider, emit, fail, friendly_errors, index_option, json_option, pool_policy,
                             printable, progress_bar, repo_option)
from rag.engine import Engine
from rag.ingest.stats import DEGRADED_REASONS

__all__ = ["index_cmd"]


@click.command("index")
@repo_option
@index_option
@click.option("--full", is_flag=True, help="Rebuild the index from scratch.")
@json_option
@friendly_errors
def index_cmd(repo: Path | None, index_path: Path | None, full: bool, as_json: bool) -> None:
    """Build or update the index (incremental by content hash); --repo all updates every configured repository."""
    from bot.cli.selection import select_repositories

    configs = select_repositories(repo, index_path)
    if len(configs) > 1:
        results = {config.name: _index_one(config, full=full, as_json=as_json) for config in configs}
        if as_json:
            emit({"repositories": results})
        if any(not r.get("ok", True) for r in results.values()):
            fail("indexing failed for " + ", ".join(n for n, r in results.items() if not r.get("ok", True)))
        return
    stats = _index_one(configs[0], full=full, as_json=as_json, single=True)
    if as_json:
        emit(stats)


def _index_one(config, *, full: bool, as_json: bool, single: bool = False) -> dict:
    """Index one repository under its lock; the text summary goes to stdout unless ``as_json``."""
    from rag.errors import RagError
    from rag.ingest.reindexer import Reindexer, empty_index_message

    try:
        engine = Engine.open(config.path, index_path=config.index_path, embeddings=embeddings_provider(whole_index=True),
                             pool_policy=pool_policy(), name=config.name, scope=None if config.scope.empty else config.scope)
    except RagError as exc:
        if single:
            raise
        click.echo(f"error: {config.name}: {exc}", err=True)
        return {"ok": False, "error": str(exc)}
    repo = config.path
    if not single and not as_json:
        click.echo(f"{config.name}:")
    try:
        # The same lock as the bot's scheduler and /sz-reindex (in-process and a file lock):
        # a concurrent update raises ReindexBusyError, printed as one line.
        from bot.repos import extra_sources

        reindexer = Reindexer(engine, sources=extra_sources(config))
        if engine.vectors is not None and not as_json:
            threads = getattr(engine.vectors.provider, "num_threads", None)  # a local ONNX model's
            on = f", {threads} thread{'s' if threads != 1 else ''}" if threads else ""
            click.echo(f"embeddings: {engine.vectors.model}{on} (missing vectors are computed after indexing)", err=True)
        with progress_bar(quiet=as_json) as progress, \
                progress_bar(quiet=as_json, label="embedding") as embed_progress:
            record = reindexer.run(full=full, trigger="cli", progress=progress, embed_progress=embed_progress)
    finally:
        engine.close()
    if not record.ok:
        if not single:
            click.echo(f"error: {config.name}: indexing failed: {record.error}", err=True)
            return {"ok": False, "error": record.error}
        fail(f"indexing failed: {record.error} (the previous index is unchanged)")
    run = record.stats
    stats = {"files": run.files, "chunks": run.chunks, "added": run.added, "changed": run.changed,
             "removed": run.removed, "skipped": run.skipped, "seconds": record.duration_s,
             "redactions": run.redactions, "copies": run.copies, "generation": record.generation,
             "embeddings": record.embeddings, "problems": run.problems, "sources": record.sources}
    if as_json:
        return stats
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(run.skipped.items())) or "none"
    click.echo(
        f"{run.files} files, {run.chunks} chunks: {run.added} added, {run.changed} changed, "
        f"{run.removed} removed in {record.duration_s:.2f}s (skipped: {skipped}; secrets redacted: {run.redactions})"
    )
    if run.copies:
        click.echo(f"{run.copies} {'file is' if run.copies == 1 else 'files are'} build output or copies of an indexed "
                   "source (ranked below their sources)")
    for problem in run.problems:
        how = "indexed with coarser chunks" if problem["reason"] in DEGRADED_REASONS else "not indexed"
        click.echo(f"  {how}: {printable(problem['path'], one_line=True)} ({problem['reason']})")
    report = (record.sources or {}).get("github")
    if report:
        from rag.sources.github import github_status

        line = github_status(report)
        click.echo(f"github: {printable(line)}", err=not report.get("ok"))
    if run.files == 0:
        click.echo(f"warning: {empty_index_message(Path(repo or '.').resolve().name, record)}", err=True)
    return stats
