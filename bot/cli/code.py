"""``slackzilla code …`` and ``slackzilla context …``: the code graph and the packed context.

Shapes (DESIGN.md §6): ``code routes|env|symbols --json`` → a list of records
with at least ``path`` and ``line`` (plus ``method``/``route``, ``name``,
``kind``/``end``); ``code deps PATH --json`` → ``{"dependencies", "dependants"}``;
``context "Q" --json`` → the packed text and its metadata.

Structure exists for JavaScript, TypeScript and Python files (definitions only for
Go, Java, Rust and Ruby: :data:`rag.parse.grammars.LANGUAGES`). When a listing is
empty, or ``deps`` is asked about a file without structure, one ``note:`` line on
stderr says why (no file of a supported language, or none of them declares the
thing asked for); stdout stays the plain or JSON listing and the exit code 0.
"""
from __future__ import annotations

from collections import Counter

import click

from bot.cli.common import (check_question, emit, friendly_errors, index_option, json_option, note_if_nothing_indexed,
                            open_engine, printable, repo_option, repository_path)
from rag.parse.parser import FULL, language_display, language_for_path, structure_level, supported_languages

__all__ = ["code_group", "context_cmd"]


def _supported() -> str:
    levels = supported_languages()
    return f"structure is parsed for {', '.join(levels['full'])}; definitions only for {', '.join(levels['definitions'])}"


def _note(message: str) -> None:
    click.echo(f"note: {message}", err=True)


def _parsed_languages(graph) -> Counter:
    """Display language → number of files with a parsed structure."""
    return Counter(language_display(graph.structure(path).language) for path in graph.paths)


def _explain_empty(graph, what: str, *, full_only: bool) -> None:
    """The ``note:`` for an empty listing of ``what`` (module docstring)."""
    counts = _parsed_languages(graph)
    if not counts:
        _note(f"no {what}: no indexed file is in a language with code structure ({_supported()})")
        return
    files = ", ".join(f"{language} {n}" for language, n in counts.most_common())
    full = sum(1 for path in graph.paths if structure_level(graph.structure(path).language) == FULL)
    if full_only and not full:
        _note(f"no {what}: the parsed files ({files}) are in languages parsed for definitions only ({_supported()})")
        return
    _note(f"no {what} found in the {sum(counts.values())} parsed files ({files})")


@click.group("code")
def code_group() -> None:
    """Inspect the code structure: symbols, routes, env vars, dependencies.

    JavaScript, TypeScript and Python files have full structure; Go, Java, Rust and Ruby
    files have their definitions (symbols) only.
    """


def _from_graph(repo, index_path, as_json: bool, read):
    """Open the engine (index updated), apply ``read(graph)``, close; returns ``(result, graph)``."""
    engine = open_engine(repo, index_path, quiet=as_json)
    try:
        graph = engine.code_graph()
        return read(graph), graph
    finally:
        engine.close()


@code_group.command("symbols")
@repo_option
@index_option
@json_option
@friendly_errors
def symbols_cmd(repo, index_path, as_json) -> None:
    """Every class, function, method and field definition with its line range."""
    records, graph = _from_graph(repo, index_path, as_json, lambda g: [s.to_json() for s in g.symbols()])
    if not records:
        _explain_empty(graph, "symbols", full_only=False)
    if as_json:
        emit(records)
        return
    for r in records:
        owner = f"{r['parent']}." if r.get("parent") else ""
        click.echo(printable(f"{r['path']}:{r['line']}-{r['end']}  {r['kind']:<9} {owner}{r['name']}", one_line=True))


@code_group.command("routes")
@repo_option
@index_option
@json_option
@friendly_errors
def routes_cmd(repo, index_path, as_json) -> None:
    """HTTP routes and router mounts (USE), full paths with mount prefixes applied, and their handlers."""
    records, graph = _from_graph(repo, index_path, as_json, lambda g: [r.to_json() for r in g.routes()])
    if not records:
        _explain_empty(graph, "routes", full_only=True)
    if as_json:
        emit(records)
        return
    for r in records:
        handler = f"  → {r['handler']}" if r.get("handler") else ""
        click.echo(printable(f"{r['method']:<7} {r['route']:<40} {r['path']}:{r['line']}{handler}", one_line=True))


@code_group.command("env")
@repo_option
@index_option
@json_option
@friendly_errors
def env_cmd(repo, index_path, as_json) -> None:
    """Environment variables read (``process.env``, ``import.meta.env``, ``Deno.env``, ``Bun.env``;
    ``os.environ``, ``os.getenv``, settings classes), and where."""
    reads, graph = _from_graph(repo, index_path, as_json, lambda g: g.environment_reads())
    records = [{"name": name, "path": path, "line": line, **({"expression": expression} if expression else {})}
               for name, path, line, expression in reads]
    if not records:
        _explain_empty(graph, "environment variables", full_only=True)
    if as_json:
        emit(records)
        return
    for r in records:  # a dynamic read shows what it reads through: `* [name]`, `* (process.env)` for all of it
        shown = f"{r['name']} ({r['expression']})" if "expression" in r else r["name"]
        click.echo(printable(f"{shown:<32} {r['path']}:{r['line']}", one_line=True))


@code_group.command("deps")
@click.argument("path")
@repo_option
@index_option
@json_option
@friendly_errors
def deps_cmd(path, repo, index_path, as_json) -> None:
    """Files PATH imports (dependencies) and files importing PATH (dependants).

    PATH is relative to the repository root (``./`` and ``..`` allowed inside it) or absolute
    inside the repository."""
    engine = open_engine(repo, index_path, quiet=as_json)
    try:
        path = repository_path(path, engine.repo_root)
        graph = engine.code_graph()
        structure = graph.structure(path)
        if structure is None and path not in engine.indexed_paths():
            raise click.UsageError(f"{printable(path, one_line=True)} is not an indexed file of this repository")
        result = {"dependencies": graph.dependencies(path), "dependants": graph.dependants(path)}
    finally:
        engine.close()
    language = structure.language if structure is not None else language_for_path(path)
    if structure is None and language is None:
        _note(f"{path} has no code structure: its file type is not parsed ({_supported()}); "
              "dependants are the parsed files importing it")
    elif language is not None and structure_level(language) != FULL:
        _note(f"{path}: {language_display(language)} files are parsed for definitions only, not imports")
    if as_json:
        emit(result)
        return
    for title in ("dependencies", "dependants"):
        click.echo(f"{title}:")
        for p in result[title] or ["(none)"]:
            click.echo(printable(f"  {p}", one_line=True))


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
        if not sources:
            note_if_nothing_indexed(engine)
    finally:
        engine.close()
    if as_json:
        emit(packed.to_json())
        return
    click.echo(printable(packed.text))
    click.echo(f"\n-- {packed.tokens_used}/{packed.budget} tokens, {len(packed.files)} files, "
               f"{packed.code_contexts} code contexts", err=True)
