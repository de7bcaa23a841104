"""The message shortcut "Save to Slackzilla": a message, or its whole thread, becomes a document.

    app.shortcut(SAVE_CALLBACK_ID)(ack=ack, lazy=[save_listener(ctx)])    # bot.slack.app registers it

Who may: admins (``ADMIN_USER_IDS``) and the ``[documents] savers`` of ``slackzilla.toml``
(user ids, or user group ids whose members are read with ``usergroups.users.list``).
What is stored: the thread's messages (``conversations.replies`` from the thread's root,
every page up to :data:`MAX_THREAD_MESSAGES`; the one message when Slack refuses the
thread), one paragraph per message (``@user, time: text``), for the channel's repository
(:meth:`bot.scoping.Scoping.channel_repo`; a channel bound to ``all`` saves a global
document), with ``metadata.url`` = the thread's permalink (``chat.getPermalink``) so the
answer's source links back to it. The saver is told ephemerally (``response_url``) what
was saved, or why not. Message text is redacted like any document (:mod:`rag.documents`)
and never logged.
"""
from __future__ import annotations

import asyncio
import logging
import time

from rag.documents import TITLE_CONTROL
from rag.errors import UserError
from rag.federation import ALL

__all__ = ["SAVE_CALLBACK_ID", "MAX_THREAD_MESSAGES", "save_listener", "may_save", "thread_text"]

log = logging.getLogger(__name__)

SAVE_CALLBACK_ID = "sz_save_document"
"""The shortcut's ``callback_id`` (as in the manifest, :data:`bot.slack.manifest.SHORTCUTS`)."""
MAX_THREAD_MESSAGES = 1000
"""Messages read from one thread (``conversations.replies`` pages of 200)."""
TITLE_CHARS = 80


async def may_save(client, settings, user_id: str | None) -> bool:
    """Whether ``user_id`` is an admin or one of the ``[documents] savers`` (directly or by user group)."""
    if not user_id:
        return False
    if settings.is_admin(user_id) or user_id in settings.documents.savers:
        return True
    for group in sorted(g for g in settings.documents.savers if g.startswith("S")):
        try:
            found = await client.usergroups_users_list(usergroup=group)
        except Exception as err:  # noqa: BLE001 - an unreadable group grants nothing
            log.info("could not read user group %s (%s)", group, type(err).__name__)
            continue
        if user_id in (found.get("users") or []):
            return True
    return False


def thread_text(messages: list[dict]) -> str:
    """One paragraph per message: ``@U123, 2024-05-01 12:00 UTC: text`` (messages without text skipped)."""
    parts = []
    for message in messages:
        text = (message.get("text") or "").strip()
        if not text:
            continue
        who = message.get("user") or message.get("username") or message.get("bot_id") or "someone"
        try:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(message.get("ts") or 0)))
        except ValueError:
            when = "?"
        parts.append(f"@{who}, {when}: {text}")
    return "\n\n".join(parts)


async def _thread(client, channel: str, root: str, fallback: dict) -> list[dict]:
    messages: list[dict] = []
    cursor = None
    try:
        while len(messages) < MAX_THREAD_MESSAGES:
            page = await client.conversations_replies(channel=channel, ts=root, limit=200,
                                                      **({"cursor": cursor} if cursor else {}))
            messages += page.get("messages") or []
            cursor = ((page.get("response_metadata") or {}).get("next_cursor") or "") if page.get("has_more") else ""
            if not cursor:
                break
    except Exception as err:  # noqa: BLE001 - not in the channel, a DM …: the one message is still worth saving
        log.info("could not read the thread (%s); saving the one message", type(err).__name__)
        return [fallback]
    return messages or [fallback]


def _title(messages: list[dict], channel_name: str | None) -> str:
    first = next(((m.get("text") or "").strip() for m in messages if (m.get("text") or "").strip()), "")
    line = " ".join(TITLE_CONTROL.sub("", first.splitlines()[0]).split()) if first else "message"
    if len(line) > TITLE_CHARS:
        line = line[: TITLE_CHARS - 1].rstrip() + "…"
    where = f"#{channel_name}" if channel_name else "Slack"
    return f"{where}: {line}"


def save_listener(ctx):
    """The lazy listener: check the saver, read the thread, store the document, confirm ephemerally."""

    async def save(body: dict, client, respond) -> None:
        user_id = (body.get("user") or {}).get("id")
        channel = (body.get("channel") or {}).get("id")
        message = body.get("message") or {}
        if not await may_save(client, ctx.settings, user_id):
            await respond(response_type="ephemeral", replace_original=False,
                          text="Only admins (and the configured savers) can save messages to Slackzilla.")
            return
        if not channel or not message.get("ts") or ctx.documents is None:
            await respond(response_type="ephemeral", replace_original=False,
                          text=":warning: This message cannot be saved (no channel or message in the request).")
            return
        root = message.get("thread_ts") or message.get("ts")
        messages = await _thread(client, channel, root, message)
        link = None
        try:
            found = await client.chat_getPermalink(channel=channel, message_ts=root)
            link = found.get("permalink")
        except Exception as err:  # noqa: BLE001 - the document is still useful without its link
            log.info("no permalink for the saved thread (%s)", type(err).__name__)
        repo = await ctx.scoping.channel_repo(channel) if ctx.scoping is not None else (None, "default")
        name = None if repo[0] is None or repo[0].lower() == ALL else repo[0]
        metadata = {"source": "slack", "channel": channel, "thread_ts": root, "saved_by": user_id,
                    "messages": len(messages), **({"url": link} if link else {})}
        try:
            stored = await asyncio.to_thread(ctx.documents.add, _title(messages, (body.get("channel") or {}).get("name")),
                                             thread_text(messages), metadata=metadata, repo=name)
        except UserError as err:  # too large, empty …
            await respond(response_type="ephemeral", replace_original=False, text=f":warning: Not saved: {err}")
            return
        log.info("saved a Slack thread as document %s (%d messages, repo %s)", stored.document.id, len(messages),
                 stored.repo or "all")
        where = f"*{stored.repo}*" if stored.repo else "every repository"
        what = f"the thread ({len(messages)} messages)" if len(messages) > 1 else "the message"
        await respond(response_type="ephemeral", replace_original=False,
                      text=f":floppy_disk: Saved {what} as `{stored.document.path}` for {where}; questions can now "
                           f"find it.")

    return save
