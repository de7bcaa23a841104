"""The Bolt app factory: every ``/sz-*`` command from the registry, acked at once, worked lazily.

    app = build_app(ctx, asker=asker, ask_flow=flow, client=client)   # bot.compose.create_app builds them
    web_app = app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)  # /slack/events + /api/*

Each command is registered by looping over the registry with Bolt's
decorator-or-method form, ``app.command(spec.slash)(ack=…, lazy=[…])``: the ack
function answers Slack immediately (well inside its 3 s limit, whatever the
model or the index is doing) and the lazy function does the work afterwards
(as in slack_bolt tests/scenario_tests/test_lazy.py).

* Ordinary commands run through ``Registry.run`` (validation, admin checks) and
  their :class:`CommandResult` goes back through ``respond()`` as Block Kit,
  ephemeral or in the channel as the result says.
* ``/sz-ask`` (the spec of ``kind="ask"``) runs :class:`bot.slack.ask_flow.AskFlow`: a visible progress message, the
  answer streamed into its thread, a safe Block Kit final message with source
  links and 👍/👎 buttons (whose clicks land in the state store's votes and
  ``/api/metrics``). A mention of the bot in an answer's thread (``app_mention``)
  is a follow-up, answered in that thread with the earlier turns as history.
* Guards (bot.slack.guards): every request's delivery identities (event id, client
  message id, a mention's message ts, trigger id, signature) are claimed in the state
  store, so each delivery is processed once, by one replica, also after a restart; a
  retry is processed only when no earlier delivery of it was seen (the retry header
  decides nothing). Questions then go through repeat detection and the per-user
  ``ASK_RATE_PER_MIN`` limit (counted in the store, across replicas) before they are
  acked; in process while the store is unavailable.
* Slack's request signature is checked at the HTTP edge (bot.slack.verification) before
  Bolt: malformed headers get a 4xx and one log line, never an HTTP 500.
* ``/healthz`` reports the :class:`bot.slack.health.SlackHealth` built here (the server
  watches the connection and fills it in).
* At start-up (aiohttp ``on_startup``) the answers this replica left in flight are
  edited to "interrupted, please ask again" (:meth:`AskFlow.recover_interrupted`).
* The message shortcut "Save to Slackzilla" stores a message or its thread as a document
  (:mod:`bot.slack.shortcuts`).
* ``/sz-reindex`` announces itself with a progress message, then posts a summary;
  a second request while one runs is told so.

Whatever fails, the user gets a message with the reason; crashes are recorded
in the runtime's captured errors.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets

from slack_bolt.async_app import AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk.web.async_client import AsyncWebClient

from bot.api.routes import install_api
from bot.asker import Asker
from bot.context import BotContext
from bot.identity import Identity
from bot.repos import ALL
from bot.scoping import parse_scope
from bot.slack import messages
from bot.slack.ask_flow import AskFlow, AskRequest
from bot.slack.errors import slack_error
from bot.slack.guards import DuplicateFilter, RateLimiter, ask_guards, deliver_once
from bot.slack.health import SlackHealth
from bot.slack.render import FEEDBACK_ACTIONS, render_result
from bot.slack.text import escape
from bot.slack.verification import slack_signature_edge
from bot.slack.shortcuts import SAVE_CALLBACK_ID, save_listener
from commands.registry import CommandSpec
from rag.answer.question import require_question
from rag.errors import EmptyQuestionError, UserError

__all__ = ["build_app", "slack_unescape", "SLACK_EVENTS_PATH"]

log = logging.getLogger(__name__)

SLACK_EVENTS_PATH = "/slack/events"
_FEEDBACK_ACTION = re.compile(r"^sz_feedback_(up|down)$")
_ANSWER_ID = re.compile(r"^[0-9a-f]{8,64}$")


class _SameTokenNotice(logging.Filter):
    """Drops Bolt's "As you gave `client` as well, `token` will be unused." warning when the
    ``SLACK_BOT_TOKEN`` Bolt read from the environment is the client's own token: the app passes its
    configured client, so nothing is unused and the warning would only alarm an operator. Any
    other record passes."""

    def __init__(self, client_token: str | None) -> None:
        super().__init__()
        self._message = warning_client_prioritized_and_token_skipped()
        self._token = client_token

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() != self._message:
            return True
        return os.environ.get("SLACK_BOT_TOKEN") != self._token


def build_app(ctx: BotContext, *, asker: Asker, ask_flow: AskFlow, client: AsyncWebClient) -> AsyncApp:
    """The Bolt app with every registry command and the HTTP API on its aiohttp app.

    Built by the composition root (:func:`bot.compose.create_app`), which hands in every object.

    Args:
        ctx: the bot's context (settings, registry, runtime …).
        asker: the one answer entry point, also behind ``POST /api/ask``.
        ask_flow: the Slack ``/sz-ask`` flow (progress, streaming, final message).
        client: the Web API client.

    Returns:
        The ``AsyncApp``; ``app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)``
        is the aiohttp application serving ``/slack/events`` and ``/api/*``.
    """
    settings = ctx.settings
    # In Socket Mode there is no signing secret; a random one makes /slack/events refuse
    # every HTTP request instead of accepting signatures made with an empty key.
    signing_secret = settings.slack_signing_secret or secrets.token_hex(32)
    bolt_log = logging.getLogger("slackzilla.bolt")
    notice = _SameTokenNotice(client.token)
    bolt_log.addFilter(notice)
    try:
        app = AsyncApp(
            client=client,
            signing_secret=signing_secret,
            name="slackzilla",
            logger=bolt_log,
        )
    finally:
        bolt_log.removeFilter(notice)
    guard = ask_guards(duplicates=DuplicateFilter(), limiter=RateLimiter(settings.ask_rate_per_min),
                       state=ctx.state)
    app.middleware(deliver_once(state=ctx.state))
    for spec in ctx.registry.all():
        if spec.is_ask:
            app.command(spec.slash, middleware=[guard])(ack=_acknowledge(spec),
                                                        lazy=[_ask_listener(ctx, spec, ask_flow)])
        else:
            app.command(spec.slash)(ack=_acknowledge(spec), lazy=[_command_listener(ctx, spec)])
    app.event("app_mention", middleware=[guard])(ack=_ack_event, lazy=[_mention_listener(ctx, ask_flow)])
    app.action(_FEEDBACK_ACTION)(_feedback_listener(ctx, ask_flow))
    ask_flow.attach(client)  # slack-sdk retry handlers (429 after Retry-After, 5xx), copied into each request's client
    app.shortcut(SAVE_CALLBACK_ID)(ack=_ack_event, lazy=[save_listener(ctx)])
    web_app = app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)
    # the signature is checked at the edge first: malformed headers get a 4xx and one log line
    web_app.middlewares.append(slack_signature_edge(signing_secret, path=SLACK_EVENTS_PATH))
    install_api(web_app, ctx, asker, health=SlackHealth(socket_mode=settings.socket_mode,
                                                        exit_after_s=settings.slack_unreachable_exit_s))
    recover, cancel = _recover_on_startup(ask_flow, client)
    web_app.on_startup.append(recover)
    web_app.on_cleanup.append(cancel)
    return app


def _recover_on_startup(flow: AskFlow, client: AsyncWebClient):
    """aiohttp start-up hook: finish the answers the previous run of this replica left in flight
    (in the background: serving does not wait for Slack)."""
    tasks: set = set()

    async def recover(_web_app) -> None:
        async def run() -> None:
            try:
                await flow.recover_interrupted(client)
            except Exception as err:  # noqa: BLE001 - best effort, never fatal
                log.warning("could not finish interrupted answers (%s)", type(err).__name__)

        task = asyncio.get_running_loop().create_task(run(), name="recover-interrupted")
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def cancel(_web_app) -> None:
        for task in list(tasks):
            task.cancel()
        if tasks:
            await asyncio.wait(list(tasks), timeout=2)

    return recover, cancel


def _acknowledge(spec: CommandSpec):
    text = messages.working(spec.slash) if spec.is_ask else None

    async def ack_command(ack) -> None:
        if text:
            await ack(text=text)
        else:
            await ack()

    return ack_command


def slack_unescape(text: str) -> str:
    """Undo Slack's encoding of ``&``, ``<`` and ``>`` in message and command text.

    Slack sends user-typed ``&``, ``<``, ``>`` as ``&amp;``, ``&lt;``, ``&gt;``
    (api.slack.com, "Formatting text for app surfaces"); commands must see what
    the user typed. ``&amp;`` is decoded last so ``&amp;lt;`` stays ``&lt;``.
    """
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _identity(ctx: BotContext, command: dict) -> Identity:
    user_id = command.get("user_id")
    return Identity(
        user_id=user_id,
        is_admin=ctx.settings.is_admin(user_id),
        channel_id=command.get("channel_id"),
        team_id=command.get("team_id"),
    )


def _command_listener(ctx: BotContext, spec: CommandSpec):
    async def run_command(command: dict, respond) -> None:
        identity = _identity(ctx, command)

        async def notify(text: str) -> None:
            await respond(text=text, response_type="in_channel")

        try:
            result = await ctx.run_command(spec.id, slack_unescape(command.get("text") or ""), identity=identity,
                                           notify=notify)
            await respond(**render_result(result, slash=spec.slash))
        except Exception as err:  # noqa: BLE001 - the user must hear about it
            await _report_crash(ctx, spec, err, respond)

    return run_command


def _ask_listener(ctx: BotContext, spec: CommandSpec, flow: AskFlow):
    async def run_ask(command: dict, respond, client: AsyncWebClient) -> None:
        question = slack_unescape(command.get("text") or "")
        try:
            if not _has_question(question):  # the registry answers with the usage, only to the asker
                result = await ctx.run_command(spec.id, parse_scope(question)[1], identity=_identity(ctx, command))
                await respond(**render_result(result, slash=spec.slash))
                return
            if (unknown := _unknown_scope(ctx, question)) is not None:  # only to the asker, nothing posted
                await respond(response_type="ephemeral", text=unknown)
                return
            await flow.run(client, AskRequest(question=question, channel_id=command["channel_id"],
                                              user_id=command.get("user_id"), team_id=command.get("team_id"),
                                              response_url=command.get("response_url")))
        except Exception as err:  # noqa: BLE001 - never leave the asker in silence
            await _report_crash(ctx, spec, err, respond)

    return run_ask


def _has_question(text: str) -> bool:
    """Whether ``text`` holds a question once a leading ``in:NAME`` is taken off (``in:api`` alone holds none)."""
    try:
        require_question(parse_scope(text)[1])
    except EmptyQuestionError:
        return False
    return True


def _unknown_scope(ctx: BotContext, text: str) -> str | None:
    """The sentence for a leading ``in:NAME`` naming no served repository, else ``None``."""
    named, _ = parse_scope(text)
    if named is None or ctx.repos is None or named.lower() == ALL:
        return None
    try:
        ctx.repos.get(named)
    except UserError as err:  # unknown, or configured but unable to serve: the message says which
        return f":warning: {escape(str(err), keep_user_mentions=False)}"
    return None


async def _ack_event(ack) -> None:
    await ack()


def _mention_listener(ctx: BotContext, flow: AskFlow):
    """``app_mention``: a follow-up in an answer's thread (with history), else a question in a new thread."""

    async def answer_mention(event: dict, body: dict, client: AsyncWebClient, context) -> None:
        if event.get("bot_id") or event.get("subtype") == "bot_message" or not event.get("user"):
            # another bot's message (Bolt ignores only this app's own): answering could loop two bots
            log.info("ignored a mention by a bot (bot_id=%s)", event.get("bot_id"))
            return
        bot_user = context.get("bot_user_id")
        text = slack_unescape(event.get("text") or "")
        if bot_user:
            text = text.replace(f"<@{bot_user}>", " ")
        question = " ".join(text.split())
        channel, user = event.get("channel"), event.get("user")
        thread_ts = event.get("thread_ts") or event.get("ts")
        if not channel:
            return
        try:
            if not _has_question(question):
                await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts,
                                                text=messages.mention_usage())
                return
            if (unknown := _unknown_scope(ctx, question)) is not None:
                await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=unknown)
                return
            await flow.run(client, AskRequest(question=question, channel_id=channel, user_id=user,
                                              team_id=body.get("team_id") or event.get("team"), thread_ts=thread_ts))
        except Exception as err:  # noqa: BLE001 - the flow reports its own failures; this is a last resort
            ctx.runtime.errors.capture(err, command="ask", keep_message=False)
            log.error("follow-up failed with %s", type(err).__name__, exc_info=True)

    return answer_mention


def _feedback_listener(ctx: BotContext, flow: AskFlow):
    """👍/👎 on an answer: ack, record (who, which answer, vote, and the answer's question length,
    sources and model when this process wrote it), thank the voter privately."""

    async def record_feedback(ack, body: dict, action: dict, respond) -> None:
        await ack()
        vote = FEEDBACK_ACTIONS.get(action.get("action_id", ""))
        answer_id = str(action.get("value") or "")
        if vote is None or not _ANSWER_ID.match(answer_id):
            log.info("ignored a malformed feedback action")
            return
        user_id = (body.get("user") or {}).get("id")
        record = flow.memory.answer(answer_id)
        await ctx.feedback.arecord(user_id=user_id, answer_id=answer_id, vote=vote,
                                   question_chars=record.question_chars if record else 0,
                                   sources=record.sources if record else (), model=record.model if record else None)
        log.info("feedback %s on answer %s", vote, answer_id)
        try:
            await respond(response_type="ephemeral", replace_original=False, text=messages.feedback_thanks(vote))
        except Exception as err:  # noqa: BLE001 - the vote is recorded either way
            log.info("could not thank the voter (%s)", type(err).__name__)

    return record_feedback


async def _report_crash(ctx: BotContext, spec: CommandSpec, err: Exception, respond) -> None:
    ctx.runtime.errors.capture(err, command=spec.id, keep_message=False)
    log.error("%s failed with %s", spec.slash, type(err).__name__, exc_info=True)
    reason = slack_error(err, "Slack refused the message") or "an internal error (it has been logged)"
    try:
        await respond(text=messages.command_failed(spec.slash, reason), response_type="ephemeral")
    except Exception:  # noqa: BLE001 - nothing left to tell the user with
        log.warning("could not report the failure of %s to the user", spec.slash, exc_info=True)
