"""``slackzilla retrieve``: the sources that best match a question (one, or a JSONL batch)."""
from __future__ import annotations

from pathlib import Path

import click

from rag.tools.schemas import CHUNK_KINDS

from bot.cli.common import (check_question, emit, friendly_errors, index_option, json_option, note_if_nothing_indexed,
                            open_engine, printable, repo_option)

__all__ = ["retrieve_cmd"]


@click.command("retrieve")
@click.argument("question", required=False)
@repo_option
@index_option
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 100), help="Maximum sources.")
@click.option("--type", "kind", type=click.Choice(CHUNK_KINDS),
              default=None, help="Only chunks of this type.")
@click.option("--batch", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL file of {\"id\", \"question\"}; prints one JSON line per input line.")
@json_option
@friendly_errors
def retrieve_cmd(question, repo, index_path, limit, kind, batch, as_json) -> None:
    """Retrieve the sources that best match a question (--repo all: every configured repository, fused)."""
    if batch is None:
        check_question(question)
    engine = open_engine(repo, index_path, quiet=as_json or batch is not None, allow_all=True)
    try:
        if batch is not None:
            from rag.evaluation import load_jsonl

            items = load_jsonl(batch)
            for number, item in enumerate(items, 1):  # check every line before printing anything
                if not isinstance(item, dict) or not isinstance(item.get("question"), str):
                    raise ValueError(f"{batch}:{number}: expected a JSON object with \"id\" and a \"question\" string")
            for item in items:
                sources = engine.retrieve(str(item.get("question", "")), limit=limit, kind=kind)
                emit({"id": item.get("id"), "sources": [s.to_json() for s in sources]})
            return
        sources = engine.retrieve(question, limit=limit, kind=kind)
        images = engine.retrieve_images(question)
        absent = [] if sources else engine.absent_terms(question)
        if not sources:
            note_if_nothing_indexed(engine)
    finally:
        engine.close()
    if as_json:
        emit({"sources": [s.to_json() for s in sources], "images": [i.to_json() for i in images],
              "absent_terms": absent})
        return
    if not sources:
        click.echo("No matching sources." + (f" No indexed file mentions {', '.join(absent)}." if absent else ""))
    for s in sources:
        click.echo(printable(f"{s.score:7.3f}  {s.path}:{s.start}-{s.end}" + (f"  # {s.heading}" if s.heading else ""),
                             one_line=True))
