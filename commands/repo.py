"""``/sz-repo [set NAME]``: the channel's repository and the list; ``set`` binds the channel (admins only).

The repositories and bindings come from ``CommandServices.repos`` (the bot's
``bot.scoping.Scoping``, see :class:`commands.registry.RepoScoping`); this module
checks the arguments and the caller's rights and formats the answer.
``/sz-repo set default`` removes the channel's binding (the default repository answers again).
"""
from __future__ import annotations

from typing import Callable

from commands.registry import SLASH_PREFIX, CommandError, CommandRequest, CommandResult, CommandSpec

NOT_CONFIGURED = "Repositories are not available: the bot did not provide them."
SOURCES = {"channel": "bound to this channel", "default": "the default repository", "thread": "this thread's"}


def _listing(info: dict) -> list[tuple[str, str]]:
    rows = []
    for repo in info.get("repositories", []):
        state = "serving" if repo.get("ok") else f"unavailable: {repo.get('error')}"
        extra = " (default)" if repo.get("default") else ""
        rows.append((f"{repo['name']}{extra}", state + (f" · {repo['web_url']}" if repo.get("web_url") else "")))
    return rows


async def handle(request: CommandRequest) -> CommandResult:
    """No text: show the channel's repository and the list. ``set NAME``: bind the channel (admins)."""
    scoping = request.services.repos
    if scoping is None:
        return CommandResult(text=NOT_CONFIGURED, ok=False, data={"error": "not_configured"})
    words = request.text.split()
    if not words:
        info = await scoping.describe(request.channel_id)
        why = SOURCES.get(info.get("source"), info.get("source"))
        text = (f"This channel asks about *{info['current']}* ({why}). Ask one question about another with "
                f"`{SLASH_PREFIX}ask in:NAME …`, or about every repository with `in:all`.")
        return CommandResult(text=text, title="Repositories", fields=_listing(info), data=info)
    if words[0].lower() != "set" or len(words) != 2:
        raise CommandError(f"Unknown arguments {request.text[:80]!r}: use `{SLASH_PREFIX}repo` or "
                           f"`{SLASH_PREFIX}repo set NAME`.")
    if not request.is_admin:
        return CommandResult(text=f"{SLASH_PREFIX}repo set is restricted to admins.", ok=False,
                             data={"error": "forbidden"})
    if not request.channel_id:
        raise CommandError("Binding needs a channel: run it in the channel to bind.")
    outcome = await scoping.bind(request.channel_id, words[1], user_id=request.user_id)
    if not outcome.get("ok"):
        return CommandResult(text=outcome.get("error") or "The channel could not be bound.", ok=False, data=outcome)
    who = f" by <@{request.user_id}>" if request.user_id else ""
    if outcome.get("cleared"):
        text = f"This channel now asks about the default repository, *{outcome['repo']}*{who}."
    else:
        text = f"This channel now asks about *{outcome['repo']}* (was {outcome.get('previous')}){who}."
    return CommandResult(text=text, ephemeral=False, data=outcome)


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-repo``."""
    register(
        CommandSpec(
            id="repo",
            description="Show which repository this channel asks about and the list; `set NAME` binds the "
                        "channel (admins).",
            usage="[set NAME]",
            category="info",
            handler=handle,
        )
    )
