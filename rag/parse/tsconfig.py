"""TypeScript path aliases: ``compilerOptions.paths`` and ``baseUrl`` of ``tsconfig.json``/``jsconfig.json``.

Applications import their own files through aliases far more often than through ``../../``
(``import { db } from '@/lib/db'``, ``~/core/x``, ``#config``); without the aliases every such
import looks like a package and "which files import ``src/lib/db.ts``" misses them. This module
reads the repository's configs the way ``tsc`` does and turns an aliased specifier into the
repository paths it may name; :class:`rag.parse.parser.ImportResolver` tries those as it tries a
relative specifier (extensions, ``index``, ``./x.js`` → ``x.ts``).

Rules (TypeScript's, kept to what a repository shows):

* A file is governed by the nearest ``tsconfig.json`` (else ``jsconfig.json``) in its directory or
  above, as editors and ``tsc -p`` discover it.
* ``extends`` (a relative path, or a list of them) is followed; options are merged per option, so a
  config's own ``paths`` replaces the extended one's. ``baseUrl`` is relative to the config that sets
  it; ``paths`` targets are relative to the effective ``baseUrl``, else to the config that sets
  ``paths``. An ``extends`` naming a package (``@tsconfig/node20``) is not followed.
* A solution-style config (neither option, only ``references``) takes the first referenced config
  that has them (Vite's ``tsconfig.json`` → ``tsconfig.app.json``).
* Matching: an exact key first, else the ``*`` pattern with the longest prefix; its targets in
  order; then ``baseUrl`` + the specifier.

Configs are JSON with comments and trailing commas; one that does not parse is ignored.

Example::

    aliases = PathAliases.from_configs({"tsconfig.json": text})
    aliases.candidates("src/app.ts", "@/lib/db")   # ["src/lib/db"]
"""
from __future__ import annotations

import logging
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

import json5

__all__ = ["CONFIG_NAMES", "PathAliases", "is_config_path"]

logger = logging.getLogger(__name__)

CONFIG_NAMES = ("tsconfig.json", "jsconfig.json")
"""The config file names discovered per directory, in order of precedence."""
_MAX_EXTENDS_DEPTH = 8


def is_config_path(path: str) -> bool:
    """Whether ``path`` is a TypeScript/JavaScript project config (``tsconfig*.json``, ``jsconfig*.json``)."""
    name = posixpath.basename(path)
    return name.endswith(".json") and name.startswith(("tsconfig", "jsconfig"))


def _load(path: str, text: str) -> dict | None:
    try:  # tsconfig.json is JSONC (comments, trailing commas): JSON5 reads it
        data = json5.loads(text)
    except ValueError as exc:
        logger.debug("config %s is not JSON (%s); its path aliases are ignored", path, exc)
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True, slots=True)
class _Options:
    """The resolved alias options of one config: ``base`` is the directory ``paths`` targets are
    relative to (``None``: no ``paths``), ``base_url`` the directory of ``baseUrl`` (``None``: unset)."""

    paths: tuple[tuple[str, tuple[str, ...]], ...] = ()
    base: str | None = None
    base_url: str | None = None

    @property
    def empty(self) -> bool:
        return not self.paths and self.base_url is None


def _join(directory: str, relative: str) -> str | None:
    """``directory``/``relative`` normalised, ``""`` for the root, ``None`` when it leaves the repository."""
    joined = posixpath.normpath(posixpath.join(directory, relative))
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None
    return joined


@dataclass
class PathAliases:
    """The path aliases of every config of a repository (see the module docstring).

    Args:
        configs: config path → its parsed JSON object (:meth:`from_configs` builds it from texts).
    """

    configs: dict[str, dict]
    _options: dict[str, _Options] = field(default_factory=dict, repr=False)
    _governing: dict[str, str | None] = field(default_factory=dict, repr=False)

    @classmethod
    def from_configs(cls, texts: Mapping[str, str]) -> PathAliases:
        """Aliases from config path → text (only :func:`is_config_path` paths are read; bad JSON is skipped)."""
        configs = {}
        for path, text in texts.items():
            if is_config_path(path):
                data = _load(path, text)
                if data is not None:
                    configs[path] = data
        return cls(configs)

    def __bool__(self) -> bool:
        return bool(self.configs)

    def candidates(self, from_path: str, spec: str) -> list[str]:
        """Repository paths (without extension handling) the non-relative ``spec`` may name when
        imported by ``from_path``, most likely first; ``[]`` when no alias applies."""
        config = self._config_for(posixpath.dirname(from_path))
        if config is None:
            return []
        options = self._effective(config)
        found: list[str] = []
        if options.paths and options.base is not None:
            exact = next((targets for key, targets in options.paths if key == spec), None)
            if exact is not None:
                substituted = list(exact)
            else:
                best: tuple[int, tuple[str, ...], str] | None = None
                for key, targets in options.paths:
                    prefix, star, suffix = key.partition("*")
                    if not star or not spec.startswith(prefix) or not spec.endswith(suffix):
                        continue
                    if len(spec) < len(prefix) + len(suffix):
                        continue
                    if best is None or len(prefix) > best[0]:
                        best = (len(prefix), targets, spec[len(prefix):len(spec) - len(suffix)])
                substituted = [t.replace("*", best[2], 1) for t in best[1]] if best is not None else []
            for target in substituted:
                joined = _join(options.base, target)
                if joined:
                    found.append(joined)
        if options.base_url is not None:
            joined = _join(options.base_url, spec)
            if joined:
                found.append(joined)
        return found

    # -- configs -----------------------------------------------------------------
    def _config_for(self, directory: str) -> str | None:
        """The config governing files of ``directory`` (nearest one in it or above), cached per directory."""
        if directory in self._governing:
            return self._governing[directory]
        found = None
        for name in CONFIG_NAMES:
            candidate = posixpath.join(directory, name) if directory else name
            if candidate in self.configs:
                found = candidate
                break
        if found is None and directory:
            found = self._config_for(posixpath.dirname(directory))
        self._governing[directory] = found
        return found

    def _effective(self, path: str, depth: int = 0) -> _Options:
        cached = self._options.get(path)
        if cached is not None:
            return cached
        self._options[path] = _Options()  # cycle guard
        options = self._own(path, depth)
        if options.empty:
            for reference in self._references(path):
                referenced = self._effective(reference, depth + 1)
                if not referenced.empty:
                    options = referenced
                    break
        self._options[path] = options
        return options

    def _own(self, path: str, depth: int) -> _Options:
        """``path``'s options with its ``extends`` chain merged (not its references)."""
        data = self.configs.get(path, {})
        directory = posixpath.dirname(path)
        inherited = _Options()
        if depth < _MAX_EXTENDS_DEPTH:
            extends = data.get("extends")
            for parent in ([extends] if isinstance(extends, str) else extends if isinstance(extends, list) else []):
                parent_path = self._extended_path(directory, parent)
                if parent_path is not None:
                    merged = self._own(parent_path, depth + 1)
                    inherited = _Options(paths=merged.paths or inherited.paths,
                                         base=merged.base if merged.paths else inherited.base,
                                         base_url=merged.base_url if merged.base_url is not None else inherited.base_url)
        compiler = data.get("compilerOptions")
        compiler = compiler if isinstance(compiler, dict) else {}
        base_url = inherited.base_url
        if isinstance(compiler.get("baseUrl"), str):
            base_url = _join(directory, compiler["baseUrl"])
        paths, base = inherited.paths, inherited.base
        own_paths = compiler.get("paths")
        if isinstance(own_paths, dict):
            paths = tuple((key, tuple(t for t in targets if isinstance(t, str)))
                          for key, targets in own_paths.items() if isinstance(targets, list))
            base = directory
        if paths and base_url is not None:
            base = base_url
        return _Options(paths=paths, base=base, base_url=base_url)

    def _extended_path(self, directory: str, extends: object) -> str | None:
        if not isinstance(extends, str) or not extends.startswith(("./", "../")):
            return None
        joined = _join(directory, extends)
        if joined is None:
            return None
        for candidate in (joined, joined + ".json", posixpath.join(joined, "tsconfig.json")):
            if candidate in self.configs:
                return candidate
        return None

    def _references(self, path: str) -> list[str]:
        references = self.configs.get(path, {}).get("references")
        found = []
        for reference in references if isinstance(references, list) else []:
            target = reference.get("path") if isinstance(reference, dict) else None
            joined = _join(posixpath.dirname(path), target) if isinstance(target, str) else None
            if joined is None:
                continue
            for candidate in (joined, posixpath.join(joined, "tsconfig.json")):
                if candidate in self.configs:
                    found.append(candidate)
                    break
        return found
