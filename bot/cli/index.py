"""``slackzilla index``: build or update the index under the shared reindex lock."""
from __future__ import annotations

from pathlib import Path

import click

from bot.cli.common import (embeddings_provider, emit, fail, friendly_errors, index_option, json_option, pool_policy,
                             printable, progress_bar, repo_option)
from rag.engine import Engine

__all__ = ["index_cmd"]


@click.command("index")
@repo_option
@index_option
@click.option("--full", is_flag=True, help="Rebuild the index from scratch.")
@json_option
@friendly_errors
def index_cmd(repo: Path | None, index_path: Path | None, full: bool, as_json: bool) -> None:
    """Build or update the index (incremental by content hash)."""
    from rag.ingest.reindexer import Reindexer, empty_index_message

    engine = Engine.open(repo, index_path=index_path, embeddings=embeddings_provider(), pool_policy=pool_policy())
    try:
        # The same lock as the bot's scheduler and /sz-reindex (in-process and a file lock):
        # a concurrent update raises ReindexBusyError, printed as one line.
        reindexer = Reindexer(engine)
        if engine.vectors is not None and not as_json:
            click.echo(f"embeddings: {engine.vectors.model} (missing vectors are computed after indexing)", err=True)
        with progress_bar(quiet=as_json) as progress:
            record = reindexer.run(full=full, trigger="cli", progress=progress)
    finally:
        engine.close()
    if not record.ok:
        fail(f"indexing failed: {record.error} (the previous index is unchanged)")
    run = record.stats
    stats = {"files": run.files, "chunks": run.chunks, "added": run.added, "changed": run.changed,
             "removed": run.removed, "skipped": run.skipped, "seconds": record.duration_s,
             "redactions": run.redactions, "generation": record.generation, "embeddings": record.embeddings,
             "problems": run.problems}
    if as_json:
        emit(stats)
        return
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(run.skipped.items())) or "none"
    click.echo(
        f"{run.files} files, {run.chunks} chunks: {run.added} added, {run.changed} changed, "
        f"{run.removed} removed in {record.duration_s:.2f}s (skipped: {skipped}; secrets redacted: {run.redactions})"
    )
    for problem in run.problems:
        click.echo(f"  not indexed: {printable(problem['path'])} ({problem['reason']})")
    if run.files == 0:
        click.echo(f"warning: {empty_index_message(Path(repo or '.').resolve().name, record)}", err=True)
