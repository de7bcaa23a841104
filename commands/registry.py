"""The command registry: one place that knows every ``/sz-*`` command.

Contract
--------
* A command is a :class:`CommandSpec` (id, description, usage hint, category,
  ``admin_only``, ``ai_safe`` and a handler). Its Slack name is ``/sz-<id>``.
* A handler takes a :class:`CommandRequest` and returns a :class:`CommandResult`
  (or an awaitable of one). It never builds Slack payloads: ``bot/`` renders
  the result, the HTTP API serialises it with :meth:`CommandResult.to_json`,
  the model's ``runCommand`` tool reads the same object.
* Bad input is raised as :class:`CommandError`; the registry turns it into an
  ephemeral result that repeats the command's usage.
* :meth:`Registry.run` is the only entry point and never raises: unknown
  commands, admin refusals, refusals for the model (``source="tool"`` on a
  command that is not ``ai_safe``), bad input and crashes all come back as
  ``CommandResult(ok=False)``. Crashes are logged with the command id and the
  traceback, never with the input text (it may hold a password or a token).

Why a function-built registry
-----------------------------
The collection is owned by :func:`build_registry`, which imports an explicit
list of modules and hands each one a ``register`` callback, as llm does with
``register_models(register)`` and its ``DEFAULT_PLUGINS`` list. No module
appends to a global, so tests can build as many independent registries as
they like, with or without extra modules.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import logging
import re
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Iterable, Mapping, Protocol

from rag.answer.intent import QuestionParser
from rag.tools.command_names import SLASH_PREFIX, normalize_command_id

logger = logging.getLogger(__name__)

__all__ = [
    "CATEGORIES",
    "CommandError",
    "CommandRequest",
    "CommandResult",
    "CommandServices",
    "CommandSpec",
    "DEFAULT_COMMAND_MODULES",
    "KINDS",
    "DEFAULT_MAX_TEXT_CHARS",
    "Registry",
    "SLASH_PREFIX",
    "build_registry",
]


CATEGORIES: tuple[str, ...] = ("info", "ai", "utility", "fun", "admin")
"""Allowed ``CommandSpec.category`` values, in the order ``help`` lists them."""

KINDS: tuple[str, ...] = ("command", "ask")
"""Allowed ``CommandSpec.kind`` values: ``command`` runs through :meth:`Registry.run`;
``ask`` is answered by the bot's answer path (``/sz-ask``). Its text follows the
question policy of :mod:`rag.answer.question`, not :data:`DEFAULT_MAX_TEXT_CHARS`."""
DEFAULT_MAX_TEXT_CHARS = 8_000
"""Longest command text the registry passes to a handler. Slack caps slash
command text well below this; the limit guards the HTTP API and the model."""

DEFAULT_COMMAND_MODULES: tuple[str, ...] = (
    "commands.ask",
    "commands.help",
    "commands.ping",
    "commands.status",
    "commands.hash",
    "commands.base64_cmd",
    "commands.uuid_cmd",
    "commands.token_cmd",
    "commands.calc",
    "commands.unix",
    "commands.case",
    "commands.count",
    "commands.roll",
    "commands.random_cmd",
    "commands.eightball",
    "commands.rps",
    "commands.reindex",
    "commands.repo",
)
"""The built-in command modules, listed explicitly (no discovery)."""

# Slack's manifest schema (slackapi/manifest-schema, features.slash_commands):
# command 2..32 characters including the "/", description 1..2000, usage_hint ≤ 1000.
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_MAX_SLASH_CHARS = 32
_MAX_DESCRIPTION_CHARS = 2000
_MAX_USAGE_CHARS = 1000


class CommandError(Exception):
    """Bad input to a command; ``str(err)`` is a sentence for the user.

    The registry answers it with ``CommandResult(ok=False, ephemeral=True)``
    whose text is the message followed by ``Usage: /sz-<id> <usage>``.
    """


@dataclass
class CommandResult:
    """What a command answers. ``bot/`` renders it; it holds no Slack payloads.

    Attributes:
        text: the main message (Slack mrkdwn-friendly plain text).
        ok: False for refusals, bad input and failures.
        ephemeral: True → only the caller sees it; False → posted in channel.
        title: optional heading.
        fields: ``(label, value)`` pairs shown as a small table.
        code: optional monospace block (a hash, a token, a result).
        data: structured payload for the model and the HTTP API.
    """

    text: str
    ok: bool = True
    ephemeral: bool = True
    title: str | None = None
    fields: list[tuple[str, str]] = field(default_factory=list)
    code: str | None = None
    data: dict | None = None

    def to_json(self) -> dict:
        """Return a JSON-ready dict.

        Shape: ``{"ok", "text", "ephemeral", "title", "fields": [{"name", "value"}],
        "code", "data"}`` (``title``, ``code`` and ``data`` may be null).
        """
        return {
            "ok": self.ok,
            "text": self.text,
            "ephemeral": self.ephemeral,
            "title": self.title,
            "fields": [{"name": name, "value": value} for name, value in self.fields],
            "code": self.code,
            "data": self.data,
        }


@dataclass
class CommandServices:
    """Runtime services injected by ``bot/``; every one is optional.

    A command whose service is missing answers with a clear "not configured"
    result instead of failing. ``registry`` is filled in by :meth:`Registry.run`
    when the caller leaves it empty.

    Attributes:
        ask: ``await ask(question) -> CommandResult`` for hosts that answer ``/sz-ask``
            through the registry (the bot answers it with its ask flow instead).
        reindexer: a :class:`rag.ingest.reindexer.Reindexer` (``run_async``, ``clock``) for ``/sz-reindex``:
            the default repository's.
        reindexers: with several repositories, each serving repository's reindexer by its configured
            name (``/sz-reindex NAME``, and the channel's repository by default); ``None`` or one
            entry: ``reindexer`` alone.
        notify: ``await notify(text)`` posts a progress line to the caller (the reindex announces itself).
        status: ``await status() -> dict``, the bot's status (``/sz-status``).
        registry: the registry running the command (``/sz-help``).
        repos: the channel's repository and the bindings (``/sz-repo``; see :class:`RepoScoping`).
    """

    ask: Callable[[str], Awaitable[CommandResult]] | None = None
    reindexer: "Reindexing | None" = None
    reindexers: "Mapping[str, Reindexing] | None" = None
    notify: Callable[[str], Awaitable[None]] | None = None
    status: Callable[[], Awaitable[dict]] | None = None
    registry: "Registry | None" = None
    repos: "RepoScoping | None" = None


class RepoScoping(Protocol):
    """What ``/sz-repo`` needs of the bot's repositories (``bot.scoping.Scoping``)."""

    async def describe(self, channel_id: str | None) -> dict: ...

    async def bind(self, channel_id: str, name: str, *, user_id: str | None) -> dict: ...


class Reindexing(Protocol):
    """What ``/sz-reindex`` needs of :class:`rag.ingest.reindexer.Reindexer`."""

    clock: Callable[[], float]

    async def run_async(self, *, full: bool = False, trigger: str, user: str | None = None,
                        on_start: Callable[[Any], Awaitable[None]] | None = None) -> Any: ...


@dataclass
class CommandRequest:
    """One invocation of a command.

    ``text`` is what followed the command name (the registry strips surrounding
    white space before the handler sees it). ``source`` is one of
    ``"slack" | "tool" | "cli" | "api"``; ``"tool"`` means the model asked.
    """

    command_id: str
    text: str
    user_id: str | None = None
    channel_id: str | None = None
    is_admin: bool = False
    source: str = "slack"
    services: CommandServices = field(default_factory=CommandServices)


Handler = Callable[[CommandRequest], "CommandResult | Awaitable[CommandResult]"]


@dataclass(frozen=True)
class CommandSpec:
    """A command's description and handler.

    ``kind`` is ``"command"`` (the default) or ``"ask"`` (see :data:`KINDS`): the Slack
    app answers an ``ask`` spec with its question flow instead of :meth:`Registry.run`.
    ``from_question(question) -> str | None`` optionally reads the command's argument text
    from a whole question (``commands.hash.from_question``); the engine's command inference
    gets every hook through :meth:`Registry.question_parsers`.

    Raises:
        ValueError: on an id that is not lower-case ``[a-z0-9-]`` or makes a
            slash name longer than Slack's 32 characters, an empty or too long
            description (> 2000) or usage hint (> 1000), an unknown category or kind.
    """

    id: str
    description: str
    usage: str
    category: str
    handler: Handler
    admin_only: bool = False
    ai_safe: bool = False
    kind: str = "command"
    from_question: "QuestionParser | None" = None

    def __post_init__(self) -> None:
        if not _ID_RE.match(self.id) or len(self.slash) > _MAX_SLASH_CHARS:
            raise ValueError(f"invalid command id {self.id!r}: use lower-case letters, digits and '-'")
        if not self.description.strip() or len(self.description) > _MAX_DESCRIPTION_CHARS:
            raise ValueError(f"command {self.id!r} needs a description of 1 to {_MAX_DESCRIPTION_CHARS} characters")
        if len(self.usage) > _MAX_USAGE_CHARS:
            raise ValueError(f"usage hint of {self.id!r} is longer than {_MAX_USAGE_CHARS} characters")
        if self.category not in CATEGORIES:
            raise ValueError(f"invalid category {self.category!r} for {self.id!r}; expected one of {CATEGORIES}")
        if self.kind not in KINDS:
            raise ValueError(f"invalid kind {self.kind!r} for {self.id!r}; expected one of {KINDS}")

    @property
    def is_ask(self) -> bool:
        """Whether this is the question command (``kind == "ask"``), answered by the bot's ask path."""
        return self.kind == "ask"

    @property
    def slash(self) -> str:
        """The Slack slash command name, e.g. ``"/sz-hash"``."""
        return SLASH_PREFIX + self.id

    def usage_line(self) -> str:
        """``"/sz-hash <algorithm> <text>"`` (no trailing space when usage is empty)."""
        return f"{self.slash} {self.usage}".rstrip()


ErrorHook = Callable[[str, Exception], None]


class Registry:
    """The set of commands and the single way to run one.

    Example::

        registry = build_registry()
        result = await registry.run(CommandRequest(command_id="hash", text="sha256 abc"))
        result.code  # 'ba7816bf...'

    Args:
        on_error: optional ``(command_id, exception)`` callback called when a
            handler crashes (``bot/`` records captured errors with it). It must
            not raise; if it does, that is logged and ignored.
        max_text_chars: longest accepted command text.
    """

    def __init__(self, *, on_error: ErrorHook | None = None, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS) -> None:
        self._specs: dict[str, CommandSpec] = {}
        self._on_error = on_error
        self._max_text_chars = max_text_chars

    def add(self, spec: CommandSpec) -> None:
        """Add ``spec``. Raises ``ValueError`` when its id is already taken."""
        if not isinstance(spec, CommandSpec):
            raise TypeError(f"register() expects a CommandSpec, got {type(spec).__name__}")
        if spec.id in self._specs:
            raise ValueError(f"duplicate command id {spec.id!r}")
        self._specs[spec.id] = spec

    def __len__(self) -> int:
        return len(self._specs)

    def get(self, command_id: str) -> CommandSpec | None:
        """Find a command by ``"hash"``, ``"sz-hash"`` or ``"/sz-hash"`` (any case)."""
        return self._specs.get(normalize_command_id(command_id))

    def all(self) -> list[CommandSpec]:
        """Every command, sorted by id."""
        return [self._specs[key] for key in sorted(self._specs)]

    def ask_spec(self) -> CommandSpec | None:
        """The question command (the first spec, by id, whose ``kind`` is ``"ask"``), or ``None``."""
        return next((spec for spec in self.all() if spec.is_ask), None)

    def question_parsers(self) -> dict[str, "QuestionParser"]:
        """Command id → ``from_question`` hook, for the commands that have one."""
        return {spec.id: spec.from_question for spec in self.all() if spec.from_question is not None}

    def visible_to(self, *, is_admin: bool) -> list[CommandSpec]:
        """The commands a caller may run, sorted by id (admins see everything)."""
        return [spec for spec in self.all() if is_admin or not spec.admin_only]

    def suggest(self, command_id: str, *, is_admin: bool, limit: int = 3) -> list[str]:
        """Slash names close to ``command_id`` among those the caller may run (difflib ratio ≥ 0.6)."""
        ids = [spec.id for spec in self.visible_to(is_admin=is_admin)]
        matches = difflib.get_close_matches(normalize_command_id(command_id), ids, n=limit, cutoff=0.6)
        return [SLASH_PREFIX + match for match in matches]

    def markdown_table(self) -> str:
        """A Markdown table of every command: ``| command | usage | description |``.

        Admin-only rows carry ``(admin only)`` after the description. Pipes in
        cells are escaped (GitHub renders ``\\|`` inside code spans in tables).
        """
        lines = ["| command | usage | description |", "|---|---|---|"]
        for spec in self.all():
            usage = f"`{_cell(spec.usage)}`" if spec.usage else ""
            description = _cell(spec.description) + (" (admin only)" if spec.admin_only else "")
            lines.append(f"| `{spec.slash}` | {usage} | {description} |")
        return "\n".join(lines) + "\n"

    async def run(self, request: CommandRequest) -> CommandResult:
        """Run one command and return its result; never raises (except cancellation).

        Order of checks: unknown id → error listing close matches; admin-only
        and not ``is_admin`` → refusal; ``source == "tool"`` and not
        ``ai_safe`` → refusal; text longer than ``max_text_chars`` → error (a
        command's text; a question, ``kind="ask"``, follows the question policy);
        then the handler. :class:`CommandError` → usage result; any other
        exception → logged (id and traceback, no input) and a generic result.
        """
        started = time.perf_counter()
        spec = self.get(request.command_id)
        result = await self._run(spec, request)
        logger.info(
            "command id=%s source=%s ok=%s ms=%.1f",
            spec.id if spec else "unknown",
            request.source,
            result.ok,
            (time.perf_counter() - started) * 1000,
        )
        return result

    async def _run(self, spec: CommandSpec | None, request: CommandRequest) -> CommandResult:
        if spec is None:
            return self._unknown(request)
        if spec.admin_only and not request.is_admin:
            return CommandResult(text=f"{spec.slash} is restricted to admins.", ok=False, data={"error": "forbidden"})
        if request.source == "tool" and not spec.ai_safe:
            return CommandResult(
                text=f"{spec.slash} cannot be run by the assistant; a person has to run it in Slack.",
                ok=False,
                data={"error": "not_ai_safe"},
            )
        text = (request.text or "").strip()
        if not spec.is_ask and len(text) > self._max_text_chars:
            return CommandResult(
                text=f"The input is too long ({len(text):,} characters; the limit is {self._max_text_chars:,}).",
                ok=False,
                data={"error": "too_long"},
            )
        services = request.services if request.services.registry is not None else replace(request.services, registry=self)
        prepared = replace(request, command_id=spec.id, text=text, services=services)
        try:
            result = spec.handler(prepared)
            if inspect.isawaitable(result):
                result = await result
            if not isinstance(result, CommandResult):
                raise TypeError(f"handler returned {type(result).__name__}, not CommandResult")
            return result
        except CommandError as err:
            return CommandResult(
                text=f"{err}\nUsage: {spec.usage_line()}",
                ok=False,
                data={"error": "usage", "usage": spec.usage_line()},
            )
        except Exception as err:  # noqa: BLE001 - run() must never raise
            self._report_crash(spec.id, err)
            return CommandResult(
                text=f"Sorry, {spec.slash} failed unexpectedly. The error has been logged.",
                ok=False,
                data={"error": "internal", "type": type(err).__name__},
            )

    def _unknown(self, request: CommandRequest) -> CommandResult:
        name = normalize_command_id(request.command_id)
        suggestions = self.suggest(name, is_admin=request.is_admin)
        hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
        return CommandResult(
            text=f"Unknown command {SLASH_PREFIX}{name}.{hint} Type {SLASH_PREFIX}help for the list.",
            ok=False,
            data={"error": "unknown_command", "suggestions": suggestions},
        )

    def _report_crash(self, command_id: str, err: Exception) -> None:
        # The message of an exception may quote the input; log type and frames only.
        frames = "".join(traceback.format_tb(err.__traceback__))
        logger.error("command %s crashed with %s\n%s", command_id, type(err).__name__, frames)
        if self._on_error is not None:
            try:
                self._on_error(command_id, err)
            except Exception:  # noqa: BLE001
                logger.exception("on_error hook failed for command %s", command_id)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def build_registry(
    modules: Iterable[str] = DEFAULT_COMMAND_MODULES,
    *,
    on_error: ErrorHook | None = None,
) -> Registry:
    """Build a registry from command modules.

    Each module is imported and its ``register(register)`` hook is called with
    a callback that adds one :class:`CommandSpec`.

    Args:
        modules: dotted module names, default :data:`DEFAULT_COMMAND_MODULES`.
        on_error: passed to :class:`Registry`.

    Raises:
        ModuleNotFoundError: a module cannot be imported.
        TypeError: a module has no callable ``register``.
        ValueError: two commands share an id.
    """
    registry = Registry(on_error=on_error)
    for name in modules:
        module = importlib.import_module(name)
        hook = getattr(module, "register", None)
        if not callable(hook):
            raise TypeError(f"command module {name!r} has no register(register) function")
        hook(registry.add)
    return registry
