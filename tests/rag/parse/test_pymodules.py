"""Python import resolution rules (rag/parse/pymodules.py) on small path sets."""
from __future__ import annotations

from rag.parse.parser import ImportResolver
from rag.parse.pymodules import PythonModules, split_relative

FILES = [
    "src/pkg/__init__.py", "src/pkg/app.py", "src/pkg/views/__init__.py", "src/pkg/views/users.py",
    "src/pkg/core/__init__.py", "src/pkg/core/db.py",
    "tests/conftest.py", "tests/test_app.py",
    "examples/one/app.py", "examples/one/helpers.py", "examples/two/app.py",
    "tools/__init__.py", "tools/build.py", "README.md",
]


def test_split_relative():
    assert split_relative("..a.b") == (2, "a.b") and split_relative(".") == (1, "") and split_relative("a") == (0, "a")


def test_relative_imports_walk_up_packages():
    modules = PythonModules(FILES)
    assert modules.resolve("src/pkg/app.py", ".views") == "src/pkg/views/__init__.py"         # a package
    assert modules.resolve("src/pkg/views/users.py", "..core.db") == "src/pkg/core/db.py"
    assert modules.resolve("src/pkg/views/__init__.py", ".users") == "src/pkg/views/users.py"  # __init__: its own dir
    assert modules.resolve("src/pkg/views/users.py", "..") == "src/pkg/__init__.py"
    assert modules.resolve("tools/build.py", "...x") is None                                     # above the repository
    assert modules.resolve("src/pkg/app.py", ".missing") is None


def test_from_import_falls_back_to_the_module_for_a_name():
    modules = PythonModules(FILES)
    assert modules.resolve("src/pkg/app.py", ".views.users", member=True) == "src/pkg/views/users.py"  # submodule
    assert modules.resolve("src/pkg/app.py", ".core.Session", member=True) == "src/pkg/core/__init__.py"
    assert modules.resolve("src/pkg/app.py", ".Thing", member=True) == "src/pkg/__init__.py"  # from . import Thing
    assert modules.resolve("src/pkg/app.py", ".core.Session") is None                         # `import` has no fallback
    assert modules.resolve("src/pkg/app.py", "flask.Flask", member=True) is None              # not in the repository


def test_absolute_imports_src_layout_and_ambiguity():
    modules = PythonModules(FILES)
    assert modules.resolve("tests/test_app.py", "pkg.app") == "src/pkg/app.py"      # src layout
    assert modules.resolve("src/pkg/app.py", "pkg.core.db") == "src/pkg/core/db.py"
    assert modules.resolve("tests/test_app.py", "tools.build") == "tools/build.py"  # root layout
    assert modules.resolve("tests/test_app.py", "conftest") == "tests/conftest.py"  # script directory
    # two scripts named app: the importing file's own directory decides; from elsewhere it is ambiguous
    assert modules.resolve("examples/one/helpers.py", "app") == "examples/one/app.py"
    assert modules.resolve("tests/test_app.py", "app") is None
    assert modules.resolve("src/pkg/app.py", "os.path") is None


def test_import_resolver_dispatches_on_the_importing_language():
    resolver = ImportResolver(FILES + ["web/a.js", "web/b.js"])
    assert resolver.resolve("web/a.js", "./b") == "web/b.js"
    assert resolver.resolve("src/pkg/app.py", ".views.users", member=True) == "src/pkg/views/users.py"
    assert resolver.resolve("src/pkg/app.py", "./b") is None
