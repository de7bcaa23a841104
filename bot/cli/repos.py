"""``slackzilla repos``, and what ``--repo`` means: a path, a repository named in ``slackzilla.toml``, or ``all``.

    slackzilla repos [--json]       name, path, default, index state (files, chunks, documents, generation,
                                    last update) of every configured repository
    slackzilla ask "Q" --repo api   the repository called api in slackzilla.toml
    slackzilla retrieve "Q" --repo all --json     every repository, fused (sources carry "repo")

``--repo`` is read by :func:`bot.cli.selection.select_repositories`.
"""
from __future__ import annotations

import sqlite3
import time

import click

from bot.cli.common import emit, fail, friendly_errors, json_option, printable
from bot.cli.selection import configured_repositories, select_repositories
from bot.config_file import RepoConfig

__all__ = ["repos_cmd"]


def _index_state(config: RepoConfig) -> dict:
    """Files, chunks, documents, generation and last update of the repository's index, read-only."""
    from rag.engine import default_index_path

    path = config.index_path or default_index_path(config.path)
    row = {"name": config.name, "path": str(config.path), "default": config.default, "web_url": config.web_url,
           "index": str(path), "exists": config.path.is_dir(), "built": path.is_file(), "files": None,
           "chunks": None, "documents": None, "generation": None, "last_update_at": None, "error": None}
    if not row["exists"]:
        row["error"] = f"{config.path} is not a directory"
        return row
    if not row["built"]:
        return row
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'updated_at')"))
            row["files"] = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
            row["chunks"] = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            row["documents"] = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0] \
                if "documents" in tables else 0
        finally:
            conn.close()
        row["generation"] = int(meta.get("generation", 0))
        row["last_update_at"] = float(meta["updated_at"]) if meta.get("updated_at") else None
    except (sqlite3.Error, ValueError) as exc:
        row["error"] = f"index unreadable: {exc}"
    return row


@click.command("repos")
@json_option
@friendly_errors
def repos_cmd(as_json: bool) -> None:
    """List the configured repositories with their index state (files, chunks, generation, last update)."""
    configs = configured_repositories() or select_repositories(None, None)
    rows = [_index_state(c) for c in configs]
    if as_json:
        emit({"repositories": rows})
        return
    for row in rows:
        mark = "*" if row["default"] else " "
        if row["error"]:
            state = f"unavailable: {row['error']}"
        elif not row["built"]:
            state = "not indexed yet (run slackzilla index --repo NAME)"
        else:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["last_update_at"])) \
                if row["last_update_at"] else "never"
            state = (f"{row['files']} files, {row['chunks']} chunks, {row['documents']} documents, "
                     f"generation {row['generation']}, updated {when}")
        click.echo(printable(f"{mark} {row['name']:<16} {row['path']}  {state}"))
    if not rows:
        fail("no repository is configured")
