"""``slackzilla bench``: indexing and query latency on a scratch copy of the repository."""
from __future__ import annotations

import asyncio
from pathlib import Path

import click

from bot.cli.common import embeddings_provider, emit, friendly_errors, json_option, pool_policy, repo_option, reranker

__all__ = ["bench_cmd"]


@click.command("bench")
@repo_option
@click.option("--queries", default=200, show_default=True, type=click.IntRange(1, 10000))
@click.option("--embeddings", "use_embeddings", type=click.Choice(["auto", "off"]), default="off", show_default=True,
              help="auto: also time embedding and hybrid queries with the configured provider.")
@click.option("--scale", "scale_chunks", type=click.IntRange(0, 10_000_000), default=100_000, show_default=True,
              help="Also time queries on a synthetic index of this many chunks built from the repository's (0: skip).")
@click.option("--healthz", "healthz_rounds", type=click.IntRange(0, 20), default=0, show_default=True,
              help="Also measure GET /healthz latency on the bot's event loop during N full reindexes.")
@json_option
@friendly_errors
def bench_cmd(repo, queries, use_embeddings, scale_chunks, healthz_rounds, as_json) -> None:
    """Benchmark indexing and query latency on a scratch copy of the repository.

    Queries are reranked when ``RERANK_URL`` is set (as ``slackzilla retrieve`` does); indexing uses
    ``INDEX_WORKERS``. ``--scale`` adds query latency (lexical, and hybrid with ``--embeddings auto``)
    on a synthetic index of that many chunks, embedding throughput, and each phase's peak memory."""
    from rag.evaluation import run_bench
    from rag.errors import RepoNotFoundError

    root = Path(repo or ".")
    if not root.is_dir():
        raise RepoNotFoundError(f"Repository not found: {root} is not a directory.")
    provider = embeddings_provider() if use_embeddings == "auto" else None
    if use_embeddings == "auto" and provider is None:
        raise click.UsageError("--embeddings auto: no embeddings provider is configured or installed")
    result = run_bench(root, queries=queries, progress=None if as_json else (lambda m: click.echo(m, err=True)),
                       embeddings=provider, reranker=reranker(), pool_policy=pool_policy(),
                       scale_chunks=scale_chunks).to_json()
    if healthz_rounds:
        from bot.cli.loopbench import healthz_during_reindex

        result.update(asyncio.run(healthz_during_reindex(root, rounds=healthz_rounds)))
    if as_json:
        emit(result)
        return
    for key, value in result.items():
        click.echo(f"{key:>18}: {value}")
