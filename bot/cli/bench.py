"""``slackzilla bench``: indexing and query latency on a scratch copy of the repository; with ``--load``,
Slack ack latency of the running bot under concurrent questions and a full reindex (:mod:`bot.bench.load`)."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from bot.cli.common import (EXIT_FAILURE, embeddings_provider, emit, friendly_errors, json_option, pool_policy,
                             repo_option, reranker)

__all__ = ["bench_cmd"]


@click.command("bench")
@repo_option
@click.option("--queries", default=200, show_default=True, type=click.IntRange(1, 10000))
@click.option("--embeddings", "use_embeddings", type=click.Choice(["auto", "off"]), default="off", show_default=True,
              help="auto: also time embedding and hybrid queries with the configured provider.")
@click.option("--scale", "scale_chunks", type=click.IntRange(0, 10_000_000), default=100_000, show_default=True,
              help="Also time queries on a synthetic index of this many chunks built from the repository's (0: skip).")
@click.option("--copies", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Index a tree of this many copies of the repository (copy-1/ … copy-N/): the issue's "
                   "ten-times tree is --copies 10.")
@click.option("--healthz", "healthz_rounds", type=click.IntRange(0, 20), default=0, show_default=True,
              help="Also measure GET /healthz latency on the bot's event loop during N full reindexes.")
@click.option("--load", "load", is_flag=True,
              help="Instead: run `slackzilla serve` against local stand-ins for Slack and a slow model, send "
                   "--asks concurrent /sz-ask during a full reindex and time the acks of a /sz-help probe.")
@click.option("--asks", default=60, show_default=True, type=click.IntRange(1, 1000),
              help="--load: concurrent /sz-ask.")
@click.option("--files", default=2000, show_default=True, type=click.IntRange(1, 50000),
              help="--load: files of the synthetic JS/TS repository (unless --repo is given).")
@click.option("--token-delay-ms", default=40.0, show_default=True, type=click.FloatRange(0, 10000),
              help="--load: the model stand-in's pause before each streamed word.")
@click.option("--answer-tokens", default=120, show_default=True, type=click.IntRange(1, 10000),
              help="--load: words per model answer.")
@click.option("--probe-interval-ms", default=100.0, show_default=True, type=click.FloatRange(10, 10000),
              help="--load: between two /sz-help probes.")
@click.option("--reindex/--no-reindex", default=True, show_default=True, help="--load: the full reindex.")
@click.option("--profile", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="--load: write a py-spy profile of the bot there (.svg flame graph, .json speedscope, "
                   "else collapsed stacks); needs py-spy.")
@click.option("--check", is_flag=True, help="--load: exit 1 when the target (probe ack p99 <= 1 s, max <= 2 s, "
                                            "no answer lost or duplicated) is missed.")
@json_option
@friendly_errors
def bench_cmd(repo, queries, use_embeddings, scale_chunks, copies, healthz_rounds, load, asks, files, token_delay_ms,
              answer_tokens, probe_interval_ms, reindex, profile, check, as_json) -> None:
    """Benchmark indexing and query latency on a scratch copy of the repository (or, with --load, the
    bot's ack latency under load).

    Queries are reranked when ``RERANK_URL`` is set (as ``slackzilla retrieve`` does); indexing uses
    ``INDEX_WORKERS``. ``--scale`` adds query latency (lexical, and hybrid with ``--embeddings auto``)
    on a synthetic index of that many chunks, embedding throughput, and each phase's peak memory;
    ``--copies N`` measures all of it on a tree of N copies of the repository."""
    from rag.errors import RepoNotFoundError

    if load:
        _load(repo, asks=asks, files=files, token_delay_ms=token_delay_ms, answer_tokens=answer_tokens,
              probe_interval_ms=probe_interval_ms, reindex=reindex, profile=profile, check=check, as_json=as_json)
        return
    from bot.isolated_update import ProcessUpdate
    from rag.evaluation import run_bench

    root = Path(repo or ".")
    if not root.is_dir():
        raise RepoNotFoundError(f"Repository not found: {root} is not a directory.")
    provider = embeddings_provider() if use_embeddings == "auto" else None
    if use_embeddings == "auto" and provider is None:
        raise click.UsageError("--embeddings auto: no embeddings provider is configured or installed")
    result = run_bench(root, queries=queries, progress=None if as_json else (lambda m: click.echo(m, err=True)),
                       embeddings=provider, reranker=reranker(), pool_policy=pool_policy(),
                       scale_chunks=scale_chunks, copies=copies, isolated_update=ProcessUpdate).to_json()
    if healthz_rounds:
        from bot.cli.loopbench import healthz_during_reindex

        result.update(asyncio.run(healthz_during_reindex(root, rounds=healthz_rounds)))
    if as_json:
        emit(result)
        return
    for key, value in result.items():
        if key != "not_copied":  # said on stderr with the progress, one line
            click.echo(f"{key:>18}: {value}")


def _load(repo, *, asks: int, files: int, token_delay_ms: float, answer_tokens: int, probe_interval_ms: float,
          reindex: bool, profile: Path | None, check: bool, as_json: bool) -> None:
    from bot.bench.load import LoadOptions, run_load

    given = click.get_current_context().get_parameter_source("repo") == click.core.ParameterSource.COMMANDLINE
    options = LoadOptions(asks=asks, files=files, repo=Path(repo) if given else None,
                          token_delay_s=token_delay_ms / 1000, answer_tokens=answer_tokens,
                          probe_interval_s=probe_interval_ms / 1000, reindex=reindex, profile=profile)
    report = asyncio.run(run_load(options, progress=None if as_json else (lambda m: click.echo(m, err=True))))
    if as_json:
        emit(report.to_json())
    else:
        for line in report.lines():
            click.echo(line)
    if check and not report.target_met:
        sys.exit(EXIT_FAILURE)
