"""The repository's own manifests: which files they are, and the package name they give.

Retrieval uses both: a manifest chunk (package.json, pyproject.toml …) answers
questions about itself only (:func:`is_manifest`, a ranking prior), and the
package's name is no evidence that the repository answers a question
(:func:`repository_names`, read with :func:`read_manifests`).
"""
from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag.text import index_text

__all__ = ["NAME_MANIFESTS", "MANIFEST_MAX_BYTES", "is_manifest", "read_manifests", "repository_names"]

NAME_MANIFESTS = ("package.json", "pyproject.toml", "Cargo.toml", "go.mod")
"""Root files that name the package (see :func:`repository_names`)."""
MANIFEST_MAX_BYTES = 1_000_000
"""A manifest larger than this is read cut (and then gives no name)."""

# Package and build manifests (not other config: docker-compose.yml answers questions about env vars).
_MANIFEST_RE = re.compile(
    r"(^|/)(package\.json|pyproject\.toml|Cargo\.toml|composer\.json|setup\.cfg|go\.mod|Gemfile|[^/]+\.gemspec|"
    r"pom\.xml|build\.gradle(\.kts)?|tsconfig[^/]*\.json|jsconfig\.json|deno\.jsonc?)$"
)


def is_manifest(path: str) -> bool:
    """Whether a repository-relative ``path`` is a package or build manifest (not other config)."""
    return _MANIFEST_RE.search(path) is not None


def read_manifests(root: Path) -> dict[str, str]:
    """The :data:`NAME_MANIFESTS` present at ``root``: file name → text (BOM dropped, at most
    :data:`MANIFEST_MAX_BYTES` read). Unreadable or non-UTF-8 files are left out; never raises."""
    manifests: dict[str, str] = {}
    for name in NAME_MANIFESTS:
        try:
            with open(root / name, "rb") as fh:
                manifests[name] = fh.read(MANIFEST_MAX_BYTES).decode("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue
    return manifests


def repository_names(manifests: dict[str, str]) -> frozenset[str]:
    """Words of the repository's own package name, read from its manifests.

    A question about Koa says "where does Koa parse bodies?"; "koa" then matches
    every chunk that names the package, so it is no evidence that the repository
    answers the question (see ``meta_terms`` in :func:`rag.search.lexical.rank_chunks`). The names
    come from ``package.json`` ``name`` (the part after an npm scope),
    ``pyproject.toml`` ``[project]`` or ``[tool.poetry]`` ``name``, ``Cargo.toml``
    ``[package] name`` and ``go.mod``'s ``module`` (its last segment that is not a
    ``/vN`` major version); each is split like indexed text (``my-lib`` → my, lib).
    The checkout directory's name is not used (``main``, ``src``, ``app`` are common).

    Args:
        manifests: file name → text, for the manifests present at the repository root.

    Returns:
        Lower-case words (empty when there is no readable manifest). Never raises:
        malformed, truncated or absurdly nested manifests give no name.
    """
    names: list[str] = []

    def parsed(loader: Callable[[str], Any], text: str | None) -> Any:
        if not text:
            return None
        try:
            return loader(text.lstrip("\ufeff"))
        except (ValueError, RecursionError):  # JSONDecodeError and TOMLDecodeError are ValueErrors
            return None

    def dig(data: Any, *keys: str) -> str | None:
        for key in keys:
            data = data.get(key) if isinstance(data, dict) else None
        return data if isinstance(data, str) else None

    package = dig(parsed(json.loads, manifests.get("package.json")), "name")
    if package:
        names.append(package.rsplit("/", 1)[-1])
    pyproject = parsed(tomllib.loads, manifests.get("pyproject.toml"))
    names += [n for n in (dig(pyproject, "project", "name"), dig(pyproject, "tool", "poetry", "name")) if n]
    cargo = dig(parsed(tomllib.loads, manifests.get("Cargo.toml")), "package", "name")
    if cargo:
        names.append(cargo)
    match = re.search(r"^module[ \t]+(\S+)", manifests.get("go.mod") or "", re.M)
    if match:
        segments = [p for p in match.group(1).strip('"').split("/") if p and not re.fullmatch(r"v\d+", p)]
        if segments:
            names.append(segments[-1])
    return frozenset(w for name in names for w in index_text(name).lower().split() if len(w) >= 2)
