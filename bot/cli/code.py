"""``slackzilla code …`` and ``slackzilla context …``: the code graph and the packed context.

Shapes (DESIGN.md §6): ``code routes|env|symbols --json`` → a list of records
with at least ``path`` and ``line`` (plus ``method``/``route``, ``name``,
``kind``/``end``); ``code deps PATH --json`` → ``{"dependencies", "dependants"}``;
``context "Q" --json`` → the packed text and its metadata.
"""
from __future__ import annotations

import click

from bot.cli.common import check_question, emit, friendly_errors, index_option, json_option, open_engine, printable, repo_option

__all__ = ["code_group", "context_cmd"]


@click.group("code")
def code_group() -> None:
    """Inspect the code structure of JavaScript/TypeScript files: symbols, routes, env vars, dependencies."""


def _from_graph(repo, index_path, as_json: bool, read):
    """Open the engine (index updated), apply ``read(graph)``, close; returns its result."""
    engine = open_engine(repo, index_path, quiet=as_json)
    try:
        return read(engine.code_graph())
    finally:
        engine.close()


@code_group.command("symbols")
@repo_option
@index_option
@json_option
@friendly_errors
def symbols_cmd(repo, index_path, as_json) -> None:
    """Every function, class, method and field definition with its line range."""
    records = _from_graph(repo, index_path, as_json, lambda g: [s.to_json() for s in g.symbols()])
    if as_json:
        emit(records)
        return
    for r in records:
        owner = f"{r['parent']}." if r.get("parent") else ""
        click.echo(f"{r['path']}:{r['line']}-{r['end']}  {r['kind']:<9} {owner}{r['name']}")


@code_group.command("routes")
@repo_option
@index_option
@json_option
@friendly_errors
def routes_cmd(repo, index_path, as_json) -> None:
    """HTTP routes (method and full path, mount prefixes applied)."""
    records = _from_graph(repo, index_path, as_json, lambda g: [r.to_json() for r in g.routes()])
    if as_json:
        emit(records)
        return
    for r in records:
        click.echo(f"{r['method']:<7} {r['route']:<40} {r['path']}:{r['line']}")


@code_group.command("env")
@repo_option
@index_option
@json_option
@friendly_errors
def env_cmd(repo, index_path, as_json) -> None:
    """Environment variables read through ``process.env``, with where they are read."""
    table = _from_graph(repo, index_path, as_json, lambda g: g.environment_variables())
    records = [{"name": name, "path": path, "line": line}
               for name, uses in sorted(table.items()) for path, line in uses]
    if as_json:
        emit(records)
        return
    for r in records:
        click.echo(f"{r['name']:<32} {r['path']}:{r['line']}")


@code_group.command("deps")
@click.argument("path")
@repo_option
@index_option
@json_option
@friendly_errors
def deps_cmd(path, repo, index_path, as_json) -> None:
    """Files PATH imports (dependencies) and files importing PATH (dependants)."""
    engine = open_engine(repo, index_path, quiet=as_json)
    try:
        graph = engine.code_graph()
        if graph.structure(path) is None and path not in engine.indexed_paths():
            raise click.UsageError(f"{path} is not an indexed file of this repository")
        result = {"dependencies": graph.dependencies(path), "dependants": graph.dependants(path)}
    finally:
        engine.close()
    if as_json:
        emit(result)
        return
    click.echo("dependencies:")
    for p in result["dependencies"]:
        click.echo(f"  {p}")
    click.echo("dependants:")
    for p in result["dependants"]:
        click.echo(f"  {p}")


@click.command("context")
@click.argument("question", required=False)
@repo_option
@index_option
@click.option("--budget", default=4000, show_default=True, type=click.IntRange(1, 200_000), help="Token budget.")
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50), help="Retrieved sources.")
@json_option
@friendly_errors
def context_cmd(question, repo, index_path, budget, limit, as_json) -> None:
    """Show the context that would be given to the model for a question."""
    check_question(question)
    engine = open_engine(repo, index_path, quiet=as_json, allow_all=True)
    try:
        sources = engine.retrieve(question, limit=limit)
        packed = engine.pack_context(question, sources=sources, budget_tokens=budget)
    finally:
        engine.close()
    if as_json:
        emit(packed.to_json())
        return
    click.echo(printable(packed.text))
    click.echo(f"\n-- {packed.tokens_used}/{packed.budget} tokens, {len(packed.files)} files, "
               f"{packed.code_contexts} code contexts", err=True)
