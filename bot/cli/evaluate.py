"""``slackzilla eval``: score retrieval on an eval set (R@1, R@5, MRR@10 per kind, abstain rate)."""
from __future__ import annotations

from pathlib import Path

import click

from bot.cli.common import embeddings_provider, emit, fail, friendly_errors, json_option, pool_policy, reranker

__all__ = ["eval_cmd", "STREAM_CHOICES"]

STREAM_CHOICES: dict[str, frozenset[str] | None] = {
    "all": None,
    "lexical": frozenset({"lexical", "structure"}),
    "vectors": frozenset({"vectors"}),
}
"""``--streams`` values → the retrieval streams run (:attr:`rag.search.lexical.RetrievalPolicy.streams`)."""


@click.command("eval")
@click.option("--set", "set_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--corpora", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path), help="Also write score.py-style results JSONL.")
@click.option("--index-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the corpora's indexes (and vectors) here between runs (default: a temp dir).")
@click.option("--embeddings", "use_embeddings", type=click.Choice(["auto", "off"]), default="auto", show_default=True,
              help="auto: hybrid retrieval when an embeddings provider is configured or installed.")
@click.option("--streams", type=click.Choice(sorted(STREAM_CHOICES)), default="all", show_default=True,
              help="all: every configured stream; lexical: BM25 + structure only; vectors: the vector ranking alone "
                   "(needs embeddings; never abstains).")
@json_option
@friendly_errors
def eval_cmd(set_path, corpora, limit, results, index_dir, use_embeddings, streams, as_json) -> None:
    """Score retrieval on an eval set: R@1, R@5, MRR@10 per kind, abstain rate.

    Retrieval is what ``slackzilla retrieve`` does: hybrid with the configured embeddings
    provider (unless ``--embeddings off``), reranked when ``RERANK_URL`` is set."""
    from rag.evaluation import run_eval

    provider = embeddings_provider(whole_index=True) if use_embeddings == "auto" and streams != "lexical" else None
    if streams == "vectors" and provider is None:
        fail("--streams vectors needs an embeddings provider (the local model or EMBEDDINGS_URL) "
             "and --embeddings auto")
    if index_dir is not None:
        index_dir.mkdir(parents=True, exist_ok=True)
    result = run_eval(set_path, corpora, limit=limit, results_out=results, index_dir=index_dir,
                      embeddings=provider, reranker=reranker(), pool_policy=pool_policy(),
                      progress=lambda m: click.echo(m, err=True), streams=STREAM_CHOICES[streams])
    if as_json:
        emit(result)
        return
    click.echo(f"{'kind':<12}{'n':>4}{'R@1':>8}{'R@5':>8}{'MRR@10':>8}")
    for kind, row in [*result["kinds"].items(), ("ALL", result["all"])]:
        if row.get("n"):
            click.echo(f"{kind:<12}{row['n']:>4}{row['r1']:>8.3f}{row['r5']:>8.3f}{row['mrr10']:>8.3f}")
    ab = result["abstain"]
    if ab["n"]:
        click.echo(f"{'none':<12}{ab['n']:>4}  abstain rate {ab['rate']:.3f}")
