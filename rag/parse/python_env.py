"""Environment variables a Python file reads: ``os.environ``, ``os.getenv``, env readers, settings classes.

Recognised reads (each an :class:`~rag.parse.records.EnvVar` at the line of its name):

* ``os.environ["X"]``, ``os.environ.get("X"[, default])``, ``.setdefault``, ``.pop``,
  ``os.environ.update({"X": …})``,
  ``"X" in os.environ`` (and ``not in``), ``del``/assignments through the same
  subscript — the JavaScript parser records ``process.env.X = …`` too;
* ``os.getenv("X"[, default])``;
* ``os.environ`` itself used as a value — passed, copied, iterated or bound as a default
  (``Config(environ=os.environ)``, ``dict(os.environ)``, ``os.environ.copy()``): a dynamic read
  of every variable (name ``*``, expression ``os.environ``);
* the same through aliases bound by the file's imports: ``import os as _os``,
  ``from os import environ [as env]``, ``from os import getenv``, Starlette's
  ``from starlette.config import environ`` (``os.environ`` behind a guard). A bare
  ``environ`` that was *not* imported from ``os`` is not the environment (WSGI's
  ``environ`` dict is the common case), so it is never read as one;
* command-line options bound to a variable: ``envvar="X"`` (or a list) on any call —
  ``@click.option("--token", envvar="API_TOKEN")``, ``typer.Option(envvar=…)``;
* test setup naming variables: ``monkeypatch.setenv("X", …)`` / ``delenv("X")``,
  ``monkeypatch.setitem(os.environ, "X", …)``, ``mock.patch.dict(os.environ, {"X": …})``;
* env readers: ``env = environ.Env()`` or ``env = Env()`` (django-environ, environs),
  ``config = Config(".env")`` (Starlette's ``starlette.config.Config``; its literal
  ``env_prefix=`` goes before each name), ``AutoConfig()``/``Config(…)`` of python-decouple,
  each only when imported from that module; then ``env("X")``, ``env.str("X", default=…)``,
  ``config.get("X", cast=int)``; python-decouple's ready-made ``config("X", cast=…)``
  (``from decouple import config``) is one itself;
* pydantic settings classes (``class S(BaseSettings)``, pydantic v1's and
  pydantic-settings' v2 API, and classes of the same file deriving from one): each
  annotated field is read from ``<env_prefix><FIELD>`` (upper-cased, since pydantic
  matches names case-insensitively unless ``case_sensitive=True``), where the
  prefix comes from ``model_config = SettingsConfigDict(env_prefix=…)`` (or a dict),
  a nested ``class Config: env_prefix = …``, or the class keyword
  ``class S(BaseSettings, env_prefix=…)``, inherited from a settings base of the
  same file; ``Field(env="X")`` (v1; a list gives several names),
  ``Field(validation_alias="X")`` / ``AliasChoices("X", "Y")`` and ``Field(alias="X")``
  name the variable exactly, without the prefix.

Defaults (``EnvVar.default``, source text, quotes kept): the ``get``/``getenv``
second argument or ``default=``, a reader's ``default=`` (or second positional
literal), a settings field's value or ``Field(<default>)``/``Field(default=…)``,
and ``<read> or <literal>`` (also through ``int()``/``float()``/``str()``/``bool()``).
A key that is a name bound once at module level to a literal string (``ENVIRONMENT_VARIABLE =
"DJANGO_SETTINGS_MODULE"``, then ``os.environ.get(ENVIRONMENT_VARIABLE)``) reads that string, unless a
parameter of the enclosing function shadows the name. Any other key that is not a literal string is a
dynamic read: name ``*``, ``dynamic=True``, ``expression`` its source text.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from rag.parse.nodes import line_of, text_of
from rag.parse.pynodes import call_arguments, compact, dotted_name, literal_text, string_value, strings_of
from rag.parse.records import EnvVar, Import

__all__ = ["EnvAliases", "env_aliases", "module_constants", "env_from_call", "env_from_subscript", "env_from_compare",
           "env_from_whole",
           "reader_names", "settings_env_vars"]

_MAX_EXPRESSION_CHARS = 120
_ENVIRON_METHODS = frozenset({"get", "setdefault", "pop"})
_CONVERTERS = frozenset({"int", "float", "str", "bool"})
# Module → the reader classes it defines (a call binds a reader) and its ready-made readers.
_ENV_READER_CLASSES = {"environ": ("Env",), "environs": ("Env",), "starlette.config": ("Config",),
                       "decouple": ("Config", "AutoConfig")}
_ENV_READER_INSTANCES = {"decouple": ("config",)}
# Importable names of os.environ itself (Starlette's guard refuses writes after a read, and passes them on).
_ENVIRON_ALIASES = frozenset({"os.environ", "starlette.config.environ"})
_SETTINGS_BASE = "BaseSettings"
# Reader methods that take no variable name.
_READER_NON_READS = frozenset({"read_env", "prefixed", "dump", "seal", "expand_vars"})
# pytest's monkeypatch (any receiver: `monkeypatch`, `mp`) and mapping patches of os.environ.
_TEST_ENV_METHODS = frozenset({"setenv", "delenv"})
_TEST_ITEM_METHODS = frozenset({"setitem", "delitem"})


def _patches_mapping(callee: str) -> bool:
    """Whether a call patches a mapping it is given (``monkeypatch.setitem``/``delitem``, ``mock.patch.dict``):
    for ``os.environ``, test setup that names its variables, not a read of the whole environment."""
    return callee.rpartition(".")[2] in _TEST_ITEM_METHODS or callee.endswith("patch.dict")


@dataclass(slots=True)
class EnvAliases:
    """Dotted names that mean ``os.environ``, ``os.getenv``, the env reader classes and the imported
    readers (python-decouple's ``config``) in one file, and its module-level string constants (name →
    value, :func:`module_constants`)."""

    environ: set[str] = field(default_factory=set)
    getenv: set[str] = field(default_factory=set)
    reader_classes: set[str] = field(default_factory=set)
    reader_instances: set[str] = field(default_factory=set)
    constants: dict[str, str] = field(default_factory=dict)

    def is_environ(self, name: str | None) -> bool:
        """Whether a dotted name is ``os.environ``: an alias, or reached through another module's
        ``os`` (``click._termui_impl.os.environ``, as tests patch it)."""
        return name is not None and (name in self.environ or name.endswith(".os.environ"))


def module_constants(assignments: Iterable[Node]) -> dict[str, str]:
    """Name → value of the module-level ``NAME = "literal"`` assignments (tree-sitter ``assignment``
    nodes); a name bound twice, or to an f-string or an empty string, is left out."""
    found: dict[str, str | None] = {}
    for assignment in assignments:
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        if left is None or right is None:
            continue
        name = text_of(left)
        value = string_value(right)
        found[name] = value if name not in found and value else None
    return {name: value for name, value in found.items() if value is not None}


def env_aliases(imports: Iterable[Import], *, constants: dict[str, str] | None = None) -> EnvAliases:
    """The aliases bound by a file's (Python) import records (module docstring), with its module-level
    string ``constants`` (:func:`module_constants`) for keys written as a name."""
    aliases = EnvAliases(constants=dict(constants or {}))
    for item in imports:
        if item.kind == "import":
            if item.spec == "os" or item.spec.startswith("os."):
                for name in item.names:
                    # `import os.path` binds `os`; `import os.path as p` binds the submodule.
                    if name == "os" or item.spec == "os":
                        aliases.environ.add(f"{name}.environ")
                        aliases.getenv.add(f"{name}.getenv")
            elif item.spec in _ENV_READER_CLASSES:
                for name in item.names:
                    # `import starlette.config` binds `starlette`; `import decouple as d` binds `d`.
                    module = item.spec if name == item.spec.split(".", 1)[0] else name
                    aliases.reader_classes.update(f"{module}.{c}" for c in _ENV_READER_CLASSES[item.spec])
                    aliases.reader_instances.update(f"{module}.{r}" for r in _ENV_READER_INSTANCES.get(item.spec, ()))
        elif item.kind == "from" and item.names:
            module, _, member = item.spec.rpartition(".")
            if item.spec in _ENVIRON_ALIASES:
                aliases.environ.update(item.names)
            elif item.spec == "os.getenv":
                aliases.getenv.update(item.names)
            elif member in _ENV_READER_CLASSES.get(module, ()):
                aliases.reader_classes.update(item.names)
            elif member in _ENV_READER_INSTANCES.get(module, ()):
                aliases.reader_instances.update(item.names)
    return aliases


def reader_names(assignment: Node, aliases: EnvAliases) -> tuple[str, str] | None:
    """``(variable, env_prefix)`` of an ``env = environ.Env(...)`` / ``config = Config(env_prefix="APP_")``
    assignment (the prefix a literal ``env_prefix=``, else ``""``), else ``None``."""
    left = assignment.child_by_field_name("left")
    right = assignment.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier" or right.type != "call":
        return None
    callee = dotted_name(right.child_by_field_name("function"))
    if callee is None or callee not in aliases.reader_classes:
        return None
    return text_of(left), string_value(call_arguments(right)[1].get("env_prefix")) or ""


def _fallback_default(read: Node) -> str | None:
    """The literal after ``or`` when ``read`` (maybe converted: ``int(read)``) is the left operand."""
    current, parent = read, read.parent
    while parent is not None:
        if parent.type == "parenthesized_expression":
            current, parent = parent, parent.parent
        elif (parent.type == "argument_list" and parent.named_child_count and parent.named_children[0] == current
              and parent.parent is not None and parent.parent.type == "call"
              and text_of(parent.parent.child_by_field_name("function") or parent) in _CONVERTERS):
            current, parent = parent.parent, parent.parent.parent
        else:
            break
    if parent is None or parent.type != "boolean_operator":
        return None
    operator = parent.child_by_field_name("operator")
    if operator is None or operator.type != "or" or parent.child_by_field_name("left") != current:
        return None
    right = parent.child_by_field_name("right")
    while right is not None and right.type == "parenthesized_expression" and right.named_child_count == 1:
        right = right.named_children[0]
    return literal_text(right)


def _read(key: Node, default: str | None, constants: dict[str, str] | None = None) -> EnvVar:
    name = string_value(key)
    if not name and constants and key.type == "identifier" and not _shadowed(key, text_of(key)):
        name = constants.get(text_of(key))
    if name is not None and name:
        return EnvVar(name=name, line=line_of(key), default=default)
    return EnvVar(name="*", line=line_of(key), default=default, dynamic=True,
                  expression=compact(key, _MAX_EXPRESSION_CHARS))


def _test_setup(call: Node, method: str, aliases: EnvAliases) -> list[EnvVar]:
    """Variables a test sets up: ``monkeypatch.setenv("X", …)``/``delenv``,
    ``monkeypatch.setitem(os.environ, "X", …)``, ``mock.patch.dict(os.environ, {"X": …})``."""
    positional, keywords = call_arguments(call)
    if method in _TEST_ENV_METHODS:
        key = positional[0] if positional else keywords.get("name")
        return [_read(key, None)] if key is not None and string_value(key) else []
    if len(positional) < 2 or not aliases.is_environ(dotted_name(positional[0])):
        return []
    if method in _TEST_ITEM_METHODS:
        return [_read(positional[1], None)] if string_value(positional[1]) else []
    return _dict_keys(positional[1:], keywords)


def _dict_keys(positional: list[Node], keywords: dict[str, Node]) -> list[EnvVar]:
    """The literal keys of a dict argument and the keyword names (``update({"X": 1}, Y=2)``)."""
    values = positional[0] if positional else None
    found = [_read(key, None) for pair in values.named_children if pair.type == "pair"
             and (key := pair.child_by_field_name("key")) is not None and string_value(key)] \
        if values is not None and values.type == "dictionary" else []
    return found + [EnvVar(name=name, line=line_of(node)) for name, node in keywords.items() if name != "clear"]


def env_from_call(call: Node, callee: str, aliases: EnvAliases,
                  readers: dict[str, list[tuple[int, str]]]) -> list[EnvVar]:
    """The env reads a call makes (``os.getenv``, ``os.environ.get``, an env reader (``readers``: the file's
    reader variables → ``(start byte, env prefix)`` of each binding, :func:`reader_names`), a test's
    ``monkeypatch.setenv``/``setitem(os.environ, …)``/``patch.dict(os.environ, …)``), maybe none."""
    receiver, _, method = callee.rpartition(".")
    if method == "update" and aliases.is_environ(receiver) and not _shadowed(call, receiver):
        return _dict_keys(*call_arguments(call))
    if receiver and (method in _TEST_ENV_METHODS or _patches_mapping(callee)):
        return _test_setup(call, "dict" if callee.endswith("patch.dict") else method, aliases)
    found = _env_call(call, callee, receiver, method, aliases, readers)
    if found is not None:
        return [found]
    envvar = call_arguments(call)[1].get("envvar")  # click.option("--x", envvar="X"), typer.Option(envvar=…)
    if envvar is None:
        return []
    nodes = [envvar] if envvar.type == "string" else [c for c in envvar.named_children if string_value(c)] \
        if envvar.type in ("list", "tuple") else []
    return [_read(node, None) for node in nodes if string_value(node)]


def _env_call(call: Node, callee: str, receiver: str, method: str, aliases: EnvAliases,
              readers: dict[str, list[tuple[int, str]]]) -> EnvVar | None:
    prefix = ""
    if callee in aliases.getenv or (method in _ENVIRON_METHODS and aliases.is_environ(receiver)):
        if _shadowed(call, callee.split(".", 1)[0] if "." not in receiver else receiver):
            return None
        kind = "environ"
    elif callee in readers or callee in aliases.reader_instances:
        kind, prefix = "reader", _reader_prefix(readers.get(callee), call)
    elif (receiver in readers or receiver in aliases.reader_instances) and method not in _READER_NON_READS \
            and not method.startswith("_"):
        kind, prefix = "reader", _reader_prefix(readers.get(receiver), call)
    else:
        return None
    positional, keywords = call_arguments(call)
    if not positional:
        return None
    default_node = keywords.get("default")
    if default_node is None and len(positional) > 1:
        default_node = positional[1]
    default = literal_text(default_node)
    if default is None and default_node is None and kind == "environ":
        default = _fallback_default(call)
    found = _read(positional[0], default, aliases.constants)
    if prefix and not found.dynamic:
        found.name = prefix + found.name
    return found


def _reader_prefix(bindings: list[tuple[int, str]] | None, call: Node) -> str:
    """The env prefix of the reader a call uses: its name's last binding before the call (a test module
    binds ``config`` once per test, each its own way), else its first; ``""`` for an imported reader."""
    if not bindings:
        return ""
    before = [prefix for start, prefix in sorted(bindings) if start < call.start_byte]
    return before[-1] if before else min(bindings)[1]


_SCOPE_TYPES = frozenset({"function_definition", "lambda"})


def _shadowed(node: Node, name: str) -> bool:
    """Whether a bare ``name`` at ``node`` is a parameter of an enclosing function
    (``def app(environ, start_response)`` shadows ``from os import environ``)."""
    if "." in name:
        return False
    parent = node.parent
    while parent is not None:
        if parent.type in _SCOPE_TYPES:
            parameters = parent.child_by_field_name("parameters")
            for parameter in parameters.named_children if parameters is not None else ():
                target = parameter if parameter.type == "identifier" else (
                    parameter.child_by_field_name("name") or next(iter(parameter.named_children), None))
                if target is not None and target.type == "identifier" and text_of(target) == name:
                    return True
        parent = parent.parent
    return False


def env_from_subscript(subscript: Node, aliases: EnvAliases) -> EnvVar | None:
    """``os.environ["X"]`` (or through an alias not shadowed by a parameter), else ``None``."""
    value = dotted_name(subscript.child_by_field_name("value"))
    if value is None or not aliases.is_environ(value) or _shadowed(subscript, value):
        return None
    key = subscript.child_by_field_name("subscript")
    if key is None:
        return None
    return _read(key, _fallback_default(subscript), aliases.constants)


def env_from_whole(node: Node, aliases: EnvAliases) -> EnvVar | None:
    """``os.environ`` itself used as a value (also ``_os.environ`` through a module alias, and ``environ``
    imported from ``os`` under that name, unless a parameter shadows it): passed,
    copied, iterated or bound (``Config(environ=os.environ)``, ``dict(os.environ)``,
    ``os.environ.copy()``, ``for k in os.environ``): a read of every variable, a dynamic read named ``*``
    with ``expression`` the name as written. ``None`` for the reads recorded with their key (a
    subscript, ``get``/``setdefault``/``pop``/``update``, ``in``) and for test setup patching it."""
    name = dotted_name(node)
    parent = node.parent
    if name is None or parent is None or not aliases.is_environ(name) or _shadowed(node, name):
        return None
    if parent.type in ("dotted_name", "aliased_import", "import_from_statement", "import_statement") \
            or parent.child_by_field_name("name") == node \
            or (parent.type in ("assignment", "augmented_assignment") and parent.child_by_field_name("left") == node):
        return None  # imported, a keyword or parameter name, or assigned: not read here
    if parent.type == "attribute":
        if parent.child_by_field_name("object") != node:
            return None  # the `environ` of `os.environ`: the attribute is the read
        method = parent.child_by_field_name("attribute")
        if method is not None and text_of(method) in (*_ENVIRON_METHODS, "update", "clear"):
            return None  # a named read or write (env_from_call), or emptying it
    elif parent.type == "subscript" and parent.child_by_field_name("value") == node:
        return None
    elif parent.type == "comparison_operator":  # "X" in os.environ: env_from_compare
        return None
    elif parent.type == "argument_list" and parent.parent is not None and parent.parent.type == "call":
        if _patches_mapping(dotted_name(parent.parent.child_by_field_name("function")) or ""):
            return None
    return EnvVar(name="*", line=line_of(node), dynamic=True, expression=name)


def env_from_compare(compare: Node, aliases: EnvAliases) -> EnvVar | None:
    """``"X" in os.environ`` / ``"X" not in os.environ`` (a computed key: a dynamic read), else ``None``."""
    children = compare.named_children
    operators = compare.children_by_field_name("operators")
    if len(children) != 2 or len(operators) != 1 or operators[0].type not in ("in", "not in"):
        return None
    key, container = children
    name = dotted_name(container)
    if name is None or not aliases.is_environ(name) or _shadowed(compare, name):
        return None
    return _read(key, None, aliases.constants)


# -- pydantic settings classes ---------------------------------------------------------------------

@dataclass(slots=True)
class _SettingsConfig:
    prefix: str | None = None
    case_sensitive: bool | None = None


def _config_from_pairs(config: _SettingsConfig, pairs: Iterable[tuple[str, Node | None]]) -> None:
    for key, value in pairs:
        if value is None:
            continue
        if key == "env_prefix":
            prefix = string_value(value)
            if prefix is not None:
                config.prefix = prefix
        elif key == "case_sensitive" and value.type in ("true", "false"):
            config.case_sensitive = value.type == "true"


def _class_config(class_node: Node) -> _SettingsConfig:
    """``env_prefix`` / ``case_sensitive`` set on a settings class, ``None`` where unset."""
    config = _SettingsConfig()
    bases = class_node.child_by_field_name("superclasses")
    if bases is not None:
        keywords = [k for k in bases.named_children if k.type == "keyword_argument"]
        _config_from_pairs(config, ((text_of(name), k.child_by_field_name("value")) for k in keywords
                                    if (name := k.child_by_field_name("name")) is not None))
    body = class_node.child_by_field_name("body")
    for statement in body.named_children if body is not None else ():
        name = statement.child_by_field_name("name") if statement.type == "class_definition" else None
        if name is not None and text_of(name) == "Config":
            inner = statement.child_by_field_name("body")
            for assignment in _assignments(inner):
                left = assignment.child_by_field_name("left")
                right = assignment.child_by_field_name("right")
                if left is not None and right is not None:
                    _config_from_pairs(config, [(text_of(left), right)])
            continue
        for assignment in _assignments_of(statement):
            left = assignment.child_by_field_name("left")
            right = assignment.child_by_field_name("right")
            if left is None or right is None or text_of(left) != "model_config":
                continue
            if right.type == "call":
                _config_from_pairs(config, call_arguments(right)[1].items())
            elif right.type == "dictionary":
                pairs = [p for p in right.named_children if p.type == "pair"]
                _config_from_pairs(config, ((string_value(p.child_by_field_name("key")) or "",
                                             p.child_by_field_name("value")) for p in pairs))
    return config


def _assignments_of(statement: Node) -> list[Node]:
    if statement.type == "expression_statement":
        return [child for child in statement.named_children if child.type == "assignment"]
    return []


def _assignments(block: Node | None) -> list[Node]:
    found: list[Node] = []
    for statement in block.named_children if block is not None else ():
        found.extend(_assignments_of(statement))
    return found


def _field_names(value: Node | None) -> tuple[list[Node], Node | None]:
    """``(nodes naming the variable exactly, default node)`` of a settings field's value."""
    if value is None or value.type != "call" or dotted_name(value.child_by_field_name("function")) not in (
            "Field", "pydantic.Field"):
        return [], value
    positional, keywords = call_arguments(value)
    default = keywords.get("default", positional[0] if positional else None)
    for key in ("env", "validation_alias", "alias"):
        named = keywords.get(key)
        if named is None:
            continue
        if named.type == "call" and dotted_name(named.child_by_field_name("function")) in (
                "AliasChoices", "pydantic.AliasChoices"):
            return [a for a in call_arguments(named)[0] if string_value(a)], default
        if strings_of(named):
            nodes = [named] if named.type == "string" else [c for c in named.named_children if string_value(c)]
            return nodes, default
    return [], default


def settings_env_vars(classes: list[tuple[Node, str, list[str]]]) -> list[EnvVar]:
    """Env vars read by the pydantic settings classes among ``classes``.

    Args:
        classes: ``(class_definition node, name, bases as written)`` of every class of
            the file, in source order.
    """
    settings: dict[str, _SettingsConfig] = {}
    found: list[EnvVar] = []
    for node, name, bases in classes:
        parents = [settings[b] for b in bases if b in settings]
        if not parents and not any(b.rsplit(".", 1)[-1] == _SETTINGS_BASE for b in bases):
            continue
        config = _class_config(node)
        for parent in parents:
            config.prefix = config.prefix if config.prefix is not None else parent.prefix
            config.case_sensitive = config.case_sensitive if config.case_sensitive is not None else parent.case_sensitive
        settings[name] = config
        prefix = config.prefix or ""
        for assignment in _assignments(node.child_by_field_name("body")):
            left = assignment.child_by_field_name("left")
            annotation = assignment.child_by_field_name("type")
            if left is None or left.type != "identifier" or annotation is None:
                continue
            field_name = text_of(left)
            if field_name.startswith("_") or field_name == "model_config" or text_of(annotation).startswith(
                    ("ClassVar", "typing.ClassVar")):
                continue
            exact, default_node = _field_names(assignment.child_by_field_name("right"))
            default = literal_text(default_node)
            if exact:
                found.extend(EnvVar(name=string_value(n) or "", line=line_of(n), default=default) for n in exact)
                continue
            env_name = prefix + field_name
            found.append(EnvVar(name=env_name if config.case_sensitive else env_name.upper(), line=line_of(left),
                                default=default))
    return found
