"""The Bolt app factory: every ``/sz-*`` command from the registry, acked at once, worked lazily.

    app = create_app(settings, engine=engine, registry=registry, runtime=runtime)
    web_app = app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)   # /slack/events + /api/*

Each command is registered by looping over the registry with Bolt's
decorator-or-method form, ``app.command(spec.slash)(ack=…, lazy=[…])``: the ack
function answers Slack immediately (well inside its 3 s limit, whatever the
model or the index is doing) and the lazy function does the work afterwards
(as in slack_bolt tests/scenario_tests/test_lazy.py).

* Ordinary commands run through ``Registry.run`` (validation, admin checks) and
  their :class:`CommandResult` goes back through ``respond()`` as Block Kit,
  ephemeral or in the channel as the result says.
* ``/sz-ask`` posts its answer in the channel with ``chat.postMessage`` (falling
  back to an in-channel ``respond()`` when the bot may not post there), with the
  sources as ``path:Lx-Ly`` or ``REPO_WEB_URL`` links.
* ``/sz-reindex`` announces itself with a progress message, then posts a summary;
  a second request while one runs is told so.

Whatever fails, the user gets a message with the reason; crashes are recorded
in the runtime's captured errors.
"""
from __future__ import annotations

import logging
import secrets
import time

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import messages
from bot.api import install_api
from bot.render import escape, render_answer, render_result
from bot.runtime import Runtime
from bot.services import BotContext, Identity
from bot.settings import Settings
from commands.registry import CommandSpec, Registry

__all__ = ["create_app", "SLACK_EVENTS_PATH"]

log = logging.getLogger(__name__)

SLACK_EVENTS_PATH = "/slack/events"


def create_app(
    settings: Settings,
    *,
    engine,
    registry: Registry,
    runtime: Runtime,
    client: AsyncWebClient | None = None,
) -> AsyncApp:
    """Build the Bolt app with every registry command and the HTTP API on its aiohttp app.

    Args:
        settings: validated settings (``SLACK_BOT_TOKEN`` is needed unless ``client`` has a token).
        engine: an opened :class:`rag.engine.Engine`.
        registry: the command registry; build it with
            ``build_registry(on_error=runtime.capture_command_error)`` so command
            crashes land in the captured errors.
        runtime: the process's runtime state.
        client: the Web API client; default ``AsyncWebClient(token, base_url=SLACK_API_URL)``.

    Returns:
        The ``AsyncApp``; ``app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)``
        is the aiohttp application serving ``/slack/events`` and ``/api/*``.
    """
    ctx = BotContext(settings, engine=engine, registry=registry, runtime=runtime)
    if client is None:
        client = AsyncWebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url)
    # In Socket Mode there is no signing secret; a random one makes /slack/events refuse
    # every HTTP request instead of accepting signatures made with an empty key.
    signing_secret = settings.slack_signing_secret or secrets.token_hex(32)
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        name="slackzilla",
        logger=logging.getLogger("slackzilla.bolt"),
    )
    for spec in registry.all():
        work = _ask_listener(ctx, spec) if spec.id == "ask" else _command_listener(ctx, spec)
        app.command(spec.slash)(ack=_acknowledge(spec), lazy=[work])
    install_api(app.web_app(path=SLACK_EVENTS_PATH, port=settings.port), ctx)
    return app


def _acknowledge(spec: CommandSpec):
    text = messages.working(spec.slash) if spec.id == "ask" else None

    async def ack_command(ack) -> None:
        if text:
            await ack(text=text)
        else:
            await ack()

    return ack_command


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
            result = await ctx.run_command(spec.id, command.get("text") or "", identity=identity, notify=notify)
            await respond(**render_result(result, slash=spec.slash))
        except Exception as err:  # noqa: BLE001 - the user must hear about it
            await _report_crash(ctx, spec, err, respond)

    return run_command


def _ask_listener(ctx: BotContext, spec: CommandSpec):
    async def run_ask(command: dict, respond, client: AsyncWebClient) -> None:
        identity = _identity(ctx, command)
        question = command.get("text") or ""
        started = time.perf_counter()
        try:
            answers: list = []
            result = await ctx.run_command(spec.id, question, identity=identity, answers=answers)
            if not result.ok or not answers:
                await respond(**render_result(result, slash=spec.slash))
                return
            payload = _answer_payload(ctx, answers[0], question=question, user_id=identity.user_id,
                                      seconds=time.perf_counter() - started)
            try:
                await client.chat_postMessage(channel=command["channel_id"], **payload)
            except SlackApiError as err:
                log.info("chat.postMessage refused (%s); answering through response_url",
                         err.response.get("error"))
                await respond(response_type="in_channel", **payload)
        except Exception as err:  # noqa: BLE001 - never leave the asker in silence
            await _report_crash(ctx, spec, err, respond)

    return run_ask


def _answer_payload(ctx: BotContext, answer, *, question: str, user_id: str | None, seconds: float) -> dict:
    """Render an :class:`rag.answer.AnswerResult` (its ``error`` is shown as a warning line)."""
    return render_answer(
        answer.answer,
        sources=answer.sources,
        question=question,
        user_id=user_id,
        web_url=ctx.settings.repo_web_url,
        commit=ctx.commit,
        model=answer.model,
        tokens=answer.usage.total_tokens or None,
        seconds=seconds,
        notice=messages.failure(escape(answer.error)) if answer.error else None,
        notes=answer.notes,
    )


async def _report_crash(ctx: BotContext, spec: CommandSpec, err: Exception, respond) -> None:
    ctx.runtime.errors.capture(err, command=spec.id, keep_message=False)
    log.error("%s failed with %s", spec.slash, type(err).__name__, exc_info=True)
    reason = err.response.get("error", "Slack refused the message") if isinstance(err, SlackApiError) \
        else "an internal error (it has been logged)"
    try:
        await respond(text=messages.command_failed(spec.slash, reason), response_type="ephemeral")
    except Exception:  # noqa: BLE001 - nothing left to tell the user with
        log.warning("could not report the failure of %s to the user", spec.slash, exc_info=True)
