"""``slackzilla docs``: documents stored with the repositories' indexes, without a running bot.

    slackzilla docs add FILE|- --title T [--repo NAME|PATH [--index FILE]] [--meta KEY=VALUE …] [--json]   → the id
    slackzilla docs list [--repo NAME|PATH [--index FILE]] [--json]
    slackzilla docs show ID [--repo NAME|PATH [--index FILE]] [--json]
    slackzilla docs remove ID [--repo NAME|PATH [--index FILE]] [--json]
    slackzilla docs clear [--repo NAME|PATH [--index FILE]] [--json]      its own documents, or every document

The same :class:`bot.documents.DocumentService` as ``/api/documents`` and the Slack shortcut,
over every configured repository (``slackzilla.toml``; else the one ``--repo``/``$REPO_PATH``
or the current directory names). Without ``--repo``, ``add`` stores a global document (in
every repository). Documents live in the index files, so the bot finds them at once (its
caches follow the index generation).
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from bot.cli.common import emit, fail, friendly_errors, json_option, printable
from bot.cli.selection import configured_documents, configured_repositories, select_repositories
from bot.cli.environment import environment
from rag.config import engine_paths

__all__ = ["docs_group"]

repo_name_option = click.option("--repo", "repo", default=None,
                                help="A repository named in slackzilla.toml, or a repository path.")
index_path_option = click.option("--index", "index_path", type=click.Path(path_type=Path), default=None,
                                 help="The index file of the --repo path (default: $RAG_INDEX_PATH, then "
                                      "<repo>/.rag/index.sqlite), as every command takes it.")


@contextlib.contextmanager
def _service(repo: str | None, index_path: Path | None = None):
    """The :class:`DocumentService` over the configured repositories (or the one ``repo`` names without a
    configuration file, with ``index_path`` or ``$RAG_INDEX_PATH`` as its index, as every command reads them);
    yields ``(service, name of repo or None)``; closes the engines after."""
    from bot.documents import DocumentService
    from rag.engine import Engine
    from rag.errors import RagError

    if repo is not None and not repo.strip():
        raise click.UsageError("--repo names a repository (a name in slackzilla.toml or a path); it cannot be empty")
    configs = configured_repositories()
    named = repo is not None and any(c.name.lower() == repo.lower() for c in configs)
    if index_path is not None or not configs or (repo is not None and not named):
        if index_path is None and repo is not None and not named:
            index_path = engine_paths(environment())[1]  # $RAG_INDEX_PATH, as retrieve's --index defaults
        configs = select_repositories(repo, index_path)
    engines = {}
    try:
        for config in configs:
            try:
                engines[config.name] = Engine.open(config.path, index_path=config.index_path, name=config.name)
            except RagError as exc:
                if len(configs) == 1:
                    raise
                click.echo(f"warning: {config.name} skipped: {exc}", err=True)
        name = None
        if repo is not None:
            name = next((n for n in engines if n.lower() == repo.lower()), None) or \
                (next(iter(engines)) if len(engines) == 1 else None)
            if name is None:
                fail(f"there is no serving repository called {repo!r}; choose one of {', '.join(engines)}")
        yield DocumentService(engines, max_chars=configured_documents().max_chars), name
    finally:
        for engine in engines.values():
            engine.close()


def max_document_bytes(max_chars: int) -> int:
    """The most bytes a document of ``max_chars`` characters can take in any encoding ``docs add`` reads:
    4 per character (UTF-8 and UTF-32) and a 4-byte byte-order mark. More input than that is refused
    unread, so an endless input (``/dev/zero``, a pipe that never closes) is never read whole."""
    return 4 * max_chars + 4


@click.group("docs")
def docs_group() -> None:
    """Add, list, show, remove and clear documents (titled text searched with the repository)."""


@docs_group.command("add")
@click.argument("source", type=click.File("rb"))
@click.option("--title", required=True, help="The document's title (1-200 characters).")
@repo_name_option
@index_path_option
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Metadata (repeatable), e.g. url=https://…")
@json_option
@friendly_errors
def add_cmd(source, title: str, repo: str | None, index_path: Path | None, meta: tuple[str, ...],
            as_json: bool) -> None:
    """Add the document in FILE ('-' reads stdin); without --repo it is searched with every repository."""
    metadata = {}
    for item in meta:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--meta takes KEY=VALUE, got {item!r}", 2)
        metadata[key.strip()] = value
    from rag.ingest.walk import decode_text

    name = getattr(source, "name", "<stdin>")
    name = name if isinstance(name, str) and name != "<stdin>" else "the input"
    max_chars = configured_documents().max_chars
    data = source.read(max_document_bytes(max_chars) + 1)  # never more: the input may not end (/dev/zero, a pipe)
    if len(data) > max_document_bytes(max_chars):
        fail(f"{name} is longer than a document may be: the limit is {max_chars:,} characters "
             "(split it, or raise [documents] max_chars)")
    text = decode_text(data)  # as a repository file: UTF-8, or UTF-16/32 with a BOM
    if text is None:
        fail(f"{name} is not text (it holds NUL bytes, as binary files do); documents are text")
    with _service(repo, index_path) as (service, name):
        stored = service.add(title, text, metadata=metadata, repo=name)
    if as_json:
        emit({"id": stored.document.id, "repo": stored.repo, "length": len(stored.document.text),
              "redactions": stored.document.redactions})
        return
    where = stored.repo or "every repository"
    click.echo(f"{stored.document.id}  added to {where} ({len(stored.document.text):,} characters"
               + (f", {stored.document.redactions} secrets redacted" if stored.document.redactions else "") + ")")


@docs_group.command("list")
@repo_name_option
@index_path_option
@json_option
@friendly_errors
def list_cmd(repo: str | None, index_path: Path | None, as_json: bool) -> None:
    """List the documents (id, title, repository, length, preview)."""
    with _service(repo, index_path) as (service, name):
        found = service.list(repo=name)
    if as_json:
        emit({"documents": [d.to_json() for d in found]})
        return
    if not found:
        click.echo("No documents.")
    for item in found:
        doc = item.document
        click.echo(printable(f"{doc.id}  {item.repo or '(all)':<12} {len(doc.text):>7,}  {doc.title}  — {doc.preview(60)}"))


@docs_group.command("show")
@click.argument("doc_id")
@repo_name_option
@index_path_option
@json_option
@friendly_errors
def show_cmd(doc_id: str, repo: str | None, index_path: Path | None, as_json: bool) -> None:
    """Print one document (its metadata on stderr)."""
    with _service(repo, index_path) as (service, _):
        found = service.get(doc_id)
    if found is None:
        fail(f"there is no document {doc_id!r}")
    if as_json:
        emit(found.to_json(full=True))
        return
    doc = found.document
    click.echo(printable(f"{doc.title} ({doc.path}, {found.repo or 'every repository'})"), err=True)
    if doc.metadata:
        click.echo(printable(f"metadata: {doc.metadata}"), err=True)
    sys.stdout.write(printable(doc.text) + ("" if doc.text.endswith("\n") else "\n"))


@docs_group.command("remove")
@click.argument("doc_id")
@repo_name_option
@index_path_option
@json_option
@friendly_errors
def remove_cmd(doc_id: str, repo: str | None, index_path: Path | None, as_json: bool) -> None:
    """Remove one document (from every repository holding it; --repo: of that repository's index)."""
    with _service(repo, index_path) as (service, _):
        removed = service.remove(doc_id)
    if not removed:
        fail(f"there is no document {doc_id!r}")
    if as_json:
        emit({"deleted": 1})
        return
    click.echo(f"removed {doc_id}")


@docs_group.command("clear")
@repo_name_option
@index_path_option
@json_option
@friendly_errors
def clear_cmd(repo: str | None, index_path: Path | None, as_json: bool) -> None:
    """Remove the documents of --repo NAME (its own; global ones stay), or every document."""
    with _service(repo, index_path) as (service, name):
        count = service.clear(repo=name)
    if as_json:
        emit({"deleted": count})
        return
    click.echo(f"removed {count} document{'s' if count != 1 else ''}" + (f" of {name}" if name else ""))
