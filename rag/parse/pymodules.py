"""Python module names → repository files, for import resolution.

Python finds ``import a.b`` on ``sys.path``; a repository does not say what its
``sys.path`` is, so it is inferred from the files, the way setuptools' package
discovery reads a tree: a directory holding ``__init__.py`` is a package, and the
*root* of a file is the directory above its outermost enclosing package (for
``src/flask/json/tag.py`` with ``src/flask/__init__.py`` and
``src/flask/json/__init__.py``: root ``src``, module ``flask.json.tag``). A file
in a directory without ``__init__.py`` is a top-level module of its own directory
(a script beside its helpers: ``examples/app.py`` is ``app`` with root ``examples``).

Resolution (:meth:`PythonModules.resolve`):

* **relative** (``.x``, ``..a.b``; PEP 328): the importing file's package is its
  directory; each dot past the first goes one directory up (never above the
  repository). ``<base>/<parts>.py`` then ``<base>/<parts>/__init__.py``.
* **absolute** (``a.b``): every file whose module name is ``a.b``; when several
  roots have one, the importing file's own root wins, then its own directory
  (script-style imports), then the repository root or ``src`` (the two layouts
  packaging tools default to); still ambiguous → unresolved.
* ``from M import n`` is recorded with the spec ``M.n`` (see
  :class:`rag.parse.records.Import`): ``n`` may be a submodule (``from . import
  views``) or a name defined in ``M``; the submodule is tried first, then ``M``
  itself (the order the import system uses, reversed only in that an attribute
  and a submodule of the same name cannot both exist in a consistent tree).
"""
from __future__ import annotations

import posixpath
from collections.abc import Iterable

__all__ = ["PythonModules", "split_relative"]

_PREFERRED_ROOTS = ("", "src")


def split_relative(spec: str) -> tuple[int, str]:
    """``(level, rest)`` of a module spec: ``..a.b`` → ``(2, "a.b")``, ``a`` → ``(0, "a")``."""
    level = len(spec) - len(spec.lstrip("."))
    return level, spec[level:]


class PythonModules:
    """The module names of a repository's ``.py`` files (module docstring).

    Args:
        known_paths: repository-relative POSIX paths of the repository's files;
            only ``.py`` ones are used.

    Example::

        modules = PythonModules(["src/pkg/__init__.py", "src/pkg/views.py"])
        modules.resolve("src/pkg/__init__.py", ".views")          # "src/pkg/views.py"
        modules.resolve("tests/test_views.py", "pkg.views")        # "src/pkg/views.py"
    """

    def __init__(self, known_paths: Iterable[str]) -> None:
        self._files = {p for p in known_paths if p.endswith(".py")}
        self._packages = {posixpath.dirname(p) for p in self._files if posixpath.basename(p) == "__init__.py"}
        self._by_name: dict[str, list[tuple[str, str]]] = {}
        self._root_of: dict[str, str] = {}
        for path in sorted(self._files):
            name, root = self._module_of(path)
            self._root_of[path] = root
            if name:
                self._by_name.setdefault(name, []).append((root, path))

    def _module_of(self, path: str) -> tuple[str, str]:
        """``(dotted module name, root directory)`` of one ``.py`` file."""
        directory, filename = posixpath.split(path)
        parts = [] if filename == "__init__.py" else [filename[:-3]]
        while directory in self._packages:
            directory, package = posixpath.split(directory)
            parts.insert(0, package)
        return ".".join(parts), directory

    def module_file(self, from_path: str, module: str) -> str | None:
        """The file of module ``module`` (absolute or relative) imported from ``from_path``, or ``None``."""
        level, rest = split_relative(module)
        if level:
            base = posixpath.dirname(from_path)
            for _ in range(level - 1):
                if not base:
                    return None  # above the repository
                base = posixpath.dirname(base)
            stem = posixpath.join(base, *rest.split(".")) if rest else base
            candidates = [stem + ".py"] if rest else []
            candidates.append(posixpath.join(stem, "__init__.py") if stem else "__init__.py")
            return next((c for c in candidates if c in self._files), None)
        if not rest:
            return None
        found = self._by_name.get(rest)
        if not found:
            return None
        if len(found) == 1:
            return found[0][1]
        own_root = self._root_of.get(from_path)
        own_dir = posixpath.dirname(from_path)
        for wanted in (own_root, own_dir, *_PREFERRED_ROOTS):
            hits = [path for root, path in found if root == wanted]
            if len(hits) == 1:
                return hits[0]
        return None

    def resolve(self, from_path: str, spec: str, *, member: bool = False) -> str | None:
        """Resolve an import spec to a repository file.

        Args:
            from_path: repository-relative path of the importing file.
            spec: the module spec (``a.b``, ``..a``); with ``member``, the spec of
                ``from M import n`` written ``M.n`` (``.n`` when ``M`` is ``.``).
            member: the last component may be a name defined in the module before it
                (``from M import n``): that module is the fallback.

        Returns:
            The file path, or ``None`` for modules outside the repository (the
            standard library, installed packages) and ambiguous names.
        """
        found = self.module_file(from_path, spec)
        if found is not None or not member:
            return found
        level, rest = split_relative(spec)
        if "." in rest:
            parent = spec[:level] + rest.rsplit(".", 1)[0]
        elif level:
            parent = spec[:level]
        else:
            return None
        return self.module_file(from_path, parent)
