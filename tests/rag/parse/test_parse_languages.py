"""Languages and grammars: extension table, one compiled grammar per process, definitions-only
languages (Go, Java, Rust, Ruby) and the message for a file type without structure."""
from __future__ import annotations

import pytest

from rag.parse import grammars
from rag.parse.parser import (
    DEFINITIONS,
    FULL,
    PARSEABLE_EXTENSIONS,
    CodeParser,
    JsParser,
    language_for_path,
    structure_level,
    supported_languages,
)


def _defs(path: str, source: str) -> list[tuple]:
    structure = CodeParser().parse(path, source)
    assert not structure.has_error
    assert not (structure.imports or structure.calls or structure.env_vars or structure.routes)
    return [(d.kind, d.name, d.start, d.end, d.parent, d.static) for d in structure.definitions]


def test_extension_table_and_levels():
    assert [language_for_path(p) for p in ("a.py", "a.go", "A.java", "a.rs", "a.rb", "a.PY", "a.sh", "Makefile")] == [
        "python", "go", "java", "rust", "ruby", "python", None, None]
    assert {"js", "ts", "py", "go", "java", "rs", "rb"} <= PARSEABLE_EXTENSIONS
    assert structure_level("python") == FULL and structure_level("go") == DEFINITIONS
    assert structure_level("cobol") is None
    assert supported_languages() == {FULL: ["JavaScript", "TypeScript", "Python"],
                                     DEFINITIONS: ["Go", "Java", "Rust", "Ruby"]}
    assert JsParser is CodeParser  # the former name still works


def test_grammars_compile_once_per_process():
    for name in grammars.LANGUAGES:
        assert grammars.grammar(name) is grammars.grammar(name)
    first, second = CodeParser(), CodeParser()
    first.parse("a.py", "x = 1\n")
    second.parse("b.py", "y = 2\n")
    assert first._parser("python") is not second._parser("python")  # parse state is per instance


def test_unsupported_extension_is_a_clear_error():
    with pytest.raises(ValueError, match=r"no structure support for 'notes\.md'"):
        CodeParser().parse("notes.md", "# hi\n")


def test_go_definitions():
    source = (
        "package main\n"
        "type Server struct {\n\tport int\n}\n"            # 2-4
        "type Handler interface { Serve() }\n"             # 5
        "type ID = string\n"                               # 6
        "func (s *Server) Start(x int) error {\n\treturn nil\n}\n"  # 7-9
        "func (s Box[T]) Open() {}\n"                      # 10
        "func main() {}\n"                                 # 11
    )
    assert _defs("main.go", source) == [
        ("struct", "Server", 2, 4, None, False), ("interface", "Handler", 5, 5, None, False),
        ("type", "ID", 6, 6, None, False), ("method", "Start", 7, 9, "Server", False),
        ("method", "Open", 10, 10, "Box", False), ("function", "main", 11, 11, None, False)]


def test_java_definitions():
    source = (
        "package a;\n"
        "@Entity\n"                                        # 2: annotations are in the range
        "public class User extends Base {\n"
        "  @Override\n"
        "  public String toString() { return \"\"; }\n"  # 4-5
        "  public User() {}\n"                             # 6
        "  enum Color { RED }\n"                           # 7
        "  interface Named { String name(); }\n"           # 8
        "}\n"                                              # 9
    )
    assert _defs("User.java", source) == [
        ("class", "User", 2, 9, None, False), ("method", "toString", 4, 5, "User", False),
        ("method", "User", 6, 6, "User", False), ("enum", "Color", 7, 7, "User", False),
        ("interface", "Named", 8, 8, "User", False), ("method", "name", 8, 8, "Named", False)]


def test_rust_definitions():
    source = (
        "pub struct Point { x: f64 }\n"                                 # 1
        "trait Shape {\n    fn area(&self) -> f64;\n}\n"                 # 2-4
        "impl<T> Wrapper<T> {\n    pub fn new() -> Self { todo!() }\n}\n"  # 5-7
        "impl Shape for Point { fn area(&self) -> f64 { 0.0 } }\n"      # 8
        "mod util { fn helper() {} }\n"                                 # 9
        "fn main() {}\n"                                                # 10
    )
    assert _defs("lib.rs", source) == [
        ("struct", "Point", 1, 1, None, False), ("trait", "Shape", 2, 4, None, False),
        ("method", "area", 3, 3, "Shape", False), ("method", "new", 6, 6, "Wrapper", False),
        ("method", "area", 8, 8, "Point", False), ("module", "util", 9, 9, None, False),
        ("function", "helper", 9, 9, "util", False), ("function", "main", 10, 10, None, False)]


def test_ruby_definitions():
    source = (
        "module Api\n"
        "  class UsersController < ApplicationController\n"
        "    def index\n    end\n"                     # 3-4
        "    def self.build; end\n"                    # 5
        "  end\n"
        "end\n"                                        # 7
        "def helper; end\n"                            # 8
    )
    assert _defs("users_controller.rb", source) == [
        ("module", "Api", 1, 7, None, False), ("class", "UsersController", 2, 6, "Api", False),
        ("method", "index", 3, 4, "UsersController", False), ("method", "build", 5, 5, "UsersController", True),
        ("function", "helper", 8, 8, None, False)]
