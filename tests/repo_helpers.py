"""Small helpers shared by test modules: write (and index) a repository, parse the code fixture, list result paths."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from rag.context.codegraph import CodeGraph
from rag.engine import Engine
from rag.parse.parser import PARSEABLE_EXTENSIONS, JsParser, resolve_imports

CODE_REPO = Path(__file__).parent / "fixtures" / "code-repo"


def write_repo(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (parents created) and return ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@contextlib.contextmanager
def indexed_engine(root: Path, files: dict[str, str]) -> Iterator[Engine]:
    """An :class:`Engine` on ``files`` written under ``root/repo``, indexed at ``root/index.sqlite``; closed after."""
    engine = Engine.open(write_repo(root / "repo", files), index_path=root / "index.sqlite")
    try:
        engine.update()
        yield engine
    finally:
        engine.close()


def result_paths(sources) -> list[str]:
    """Sorted distinct paths of retrieved sources."""
    return sorted({s.path for s in sources})


def code_repo_graph(root: Path = CODE_REPO) -> CodeGraph:
    """The :class:`CodeGraph` of the JS fixture repository (parsed, imports resolved)."""
    paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    parser = JsParser()
    structures = {
        path: parser.parse(path, (root / path).read_text(encoding="utf-8"))
        for path in paths
        if path.rsplit(".", 1)[-1] in PARSEABLE_EXTENSIONS
    }
    resolve_imports(structures, known_paths=paths)
    return CodeGraph(structures)
