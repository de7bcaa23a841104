"""``slackzilla bench``: indexing and query latency on a scratch copy of the repository."""
from __future__ import annotations

import asyncio
from pathlib import Path

import click

from bot.cli.common import embeddings_provider, emit, friendly_errors, json_option, repo_option

__all__ = ["bench_cmd"]


@click.command("bench")
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
        emit(result)
        return
    for key, value in result.items():
        click.echo(f"{key:>18}: {value}")
