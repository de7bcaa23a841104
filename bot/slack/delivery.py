"""Checked Slack delivery: retries through slack-sdk's retry handlers, then fallbacks in order.

Every call that carries an answer is checked: an ``ok: false`` or a non-2xx answer raises
(the Web API client's own ``SlackApiError``; :class:`ResponseUrlError` for ``response_url``,
whose client returns the status instead of raising), and nothing counts as delivered
until Slack said yes.

**Retries** are slack-sdk's (:mod:`slack_sdk.http_retry`), attached to the app's
``AsyncWebClient`` (:func:`attach_retry_handlers`; Bolt copies them into every request's
client) and to each ``response_url`` ``AsyncWebhookClient``:

* 429: ``AsyncRateLimitErrorRetryHandler`` sleeps ``Retry-After`` (+ up to 1 s of jitter) and
  retries; ours first pauses the method app-wide in the :class:`bot.slack.budget.SlackBudget`,
  so no other answer calls it before Retry-After either.
* 500/503: ``AsyncServerErrorRetryHandler``; connection resets: ``AsyncConnectionErrorRetryHandler``
  (both with slack-sdk's exponential backoff and jitter).
* A *sheddable* call (a progress edit, a stream append: :func:`bot.slack.budget.sheddable_call`)
  is not retried: a later state replaces it, and waiting would only delay the answer.

**Fallbacks** (:class:`AnswerDelivery`), decided here and in the README: the answer's first
page goes to the first of these that Slack accepts, each tried with Block Kit and, if Slack
refuses the blocks (``invalid_blocks``, ``msg_blocks_too_long`` …), as plain text carrying
the same answer text:

1. ``edit``: the message the asker is watching (the streamed reply, or the progress message);
2. ``reply``: a new post in the answer's thread (the channel when there is no thread);
3. ``response_url``: the slash command's response URL (slash commands only);
4. ``ephemeral``: an ephemeral message to the asker in the channel;
5. ``dm``: a direct message to the asker.

When the streamed reply already holds the whole answer and only its final edit fails, the
answer is not posted again (one copy per thread): only its sources and feedback buttons
follow as a small reply. Later pages of a long answer go to the same place (a thread reply
after an edit), with the same fallbacks after it. The progress message never stays at
"Searching…": it is edited to say where the answer is, or to a plain pointer, or deleted.
When every path fails the answer is lost: logged as an error with each step's reason
(never ``ok=True``) and counted (``slackzilla_slack_answers_lost_total{reason}``); every
refused step is counted in ``slackzilla_slack_delivery_failures_total{step, reason}``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence
from urllib.parse import urlsplit

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.slack import messages
from bot.slack.budget import SlackBudget, is_sheddable_call
from bot.slack.errors import ResponseUrlError, error_code
from bot.slack.render import plain_payload

__all__ = [
    "AnswerDelivery",
    "DEFAULT_MAX_RETRIES",
    "Delivered",
    "REFUSED_BLOCK_ERRORS",
    "ResponseUrlError",
    "attach_retry_handlers",
    "method_of",
    "post_response_url",
    "retry_handlers",
]

log = logging.getLogger(__name__)

#: Retries per call after a 429, a 500/503 or a connection reset (slack-sdk's handlers count
#: attempts per call, shared between them).
DEFAULT_MAX_RETRIES = 2
#: Errors that refuse a message's blocks or size, not the message: retried as plain text.
REFUSED_BLOCK_ERRORS = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long", "msg_too_long",
                                  "invalid_attachments", "too_many_attachments"})


def method_of(url: str) -> str:
    """The Web API method of a request URL (``…/api/chat.update`` → ``chat.update``), else ``response_url``."""
    path = urlsplit(url).path
    return path.rsplit("/api/", 1)[1] if "/api/" in path else "response_url"


def _retry_after_s(response) -> float:
    for name, values in (response.headers or {}).items():
        if name.lower() == "retry-after":
            value = values[0] if isinstance(values, list) else values
            try:
                return float(value)
            except (TypeError, ValueError):
                return 1.0
    return 1.0


class _Shared:
    """Bolt deep-copies each request (its client and the client's retry handlers) for lazy
    listeners; a copy of a handler would carry a copy of the budget, so copies are the handler itself."""

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class BudgetRateLimitRetryHandler(_Shared, AsyncRateLimitErrorRetryHandler):
    """slack-sdk's 429 handler (sleep ``Retry-After`` + jitter, retry), pausing the method in the
    budget first; a sheddable call is not retried (it fails at once, the pause stays)."""

    def __init__(self, budget: SlackBudget, *, max_retry_count: int = DEFAULT_MAX_RETRIES, metrics=None) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self._budget = budget
        self._metrics = metrics

    async def can_retry_async(self, *, state, request, response=None, error=None) -> bool:
        if response is None or response.status_code != 429:
            return False
        method = method_of(request.url)
        self._budget.pause(method, _retry_after_s(response))
        retry = not is_sheddable_call() and await super().can_retry_async(state=state, request=request,
                                                                         response=response, error=error)
        if retry and self._metrics is not None:
            self._metrics.record_slack_retry(method, "http_429")
        return retry


class _UnlessSheddable(_Shared):
    """A slack-sdk retry handler that never retries a sheddable call (a later state replaces it)
    and counts each retry it grants (``slackzilla_slack_retries_total{method,reason}``)."""

    def __init__(self, *, max_retry_count: int = DEFAULT_MAX_RETRIES, metrics=None) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self._metrics = metrics

    def _reason(self, response, error) -> str:  # pragma: no cover - each handler names its own
        raise NotImplementedError

    async def _can_retry_async(self, *, state, request, response=None, error=None) -> bool:
        retry = not is_sheddable_call() and await super()._can_retry_async(state=state, request=request,
                                                                          response=response, error=error)
        if retry and self._metrics is not None:
            self._metrics.record_slack_retry(method_of(request.url), self._reason(response, error))
        return retry


class BudgetServerErrorRetryHandler(_UnlessSheddable, AsyncServerErrorRetryHandler):
    """slack-sdk's 500/503 handler, except for sheddable calls."""

    def _reason(self, response, error) -> str:
        return f"http_{response.status_code}"


class BudgetConnectionErrorRetryHandler(_UnlessSheddable, AsyncConnectionErrorRetryHandler):
    """slack-sdk's connection-reset handler, except for sheddable calls."""

    def _reason(self, response, error) -> str:
        return type(error).__name__


def retry_handlers(budget: SlackBudget, *, metrics=None, max_retry_count: int = DEFAULT_MAX_RETRIES) -> list:
    """The handlers (connection, 429, 500/503) for an ``AsyncWebClient`` or ``AsyncWebhookClient``."""
    return [BudgetConnectionErrorRetryHandler(max_retry_count=max_retry_count, metrics=metrics),
            BudgetRateLimitRetryHandler(budget, max_retry_count=max_retry_count, metrics=metrics),
            BudgetServerErrorRetryHandler(max_retry_count=max_retry_count, metrics=metrics)]


def attach_retry_handlers(client, handlers: list) -> None:
    """Make ``client`` (an ``AsyncWebClient``) retry with ``handlers``, replacing slack-sdk's
    default (connection errors only); idempotent. Bolt copies the list into each request's client."""
    if client.retry_handlers is handlers or any(h in handlers for h in client.retry_handlers or []):
        return
    client.retry_handlers = list(handlers)


async def post_response_url(url: str, payload: dict, *, handlers: list) -> None:
    """POST ``payload`` to a ``response_url``, retried by ``handlers``; raises :class:`ResponseUrlError`
    unless Slack answered 2xx (and not ``{"ok": false}``)."""
    response = await AsyncWebhookClient(url=url, retry_handlers=handlers).send_dict(payload)
    body = (response.body or "").strip()
    if not 200 <= response.status_code < 300 or body.startswith("{") and '"ok":false' in body.replace(" ", ""):
        raise ResponseUrlError(response.status_code, body)


@dataclass
class Delivered:
    """Where an answer went: ``mode`` is ``stream``/``in_place`` (an edit), ``reply``, ``respond``
    (response_url), ``ephemeral``, ``dm`` or ``lost``; ``ts`` the message holding the first page;
    ``failures`` each refused step as ``"step: reason"``; ``pages`` the pages delivered."""

    mode: str = "lost"
    ts: str | None = None
    pages: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def delivered(self) -> bool:
        return self.mode != "lost"


class AnswerDelivery:
    """Delivers one answer (see the module docstring). Built by the ask flow per question.

    Args:
        client: the ``AsyncWebClient`` (retry handlers attached).
        budget: the app's :class:`SlackBudget` (every call here must go: :meth:`SlackBudget.spend`).
        handlers: retry handlers for ``response_url`` posts.
        channel, user_id: where and who asked.
        thread_ts: the answer's thread (a follow-up's thread, or the progress message), if any.
        response_url: the slash command's, if any.
        metrics: a :class:`bot.observability.metrics.Metrics`, optional.
    """

    def __init__(self, client, budget: SlackBudget, *, handlers: list, channel: str, user_id: str | None,
                 thread_ts: str | None, response_url: str | None, metrics=None) -> None:
        self.client = client
        self.budget = budget
        self.handlers = handlers
        self.channel = channel
        self.user_id = user_id
        self.thread_ts = thread_ts
        self.response_url = response_url
        self.metrics = metrics

    # -- one call each ---------------------------------------------------------------------------
    async def _call(self, method: str, **kwargs) -> Any:
        await self.budget.spend(method, channel=kwargs.get("channel"))
        api = {"chat.update": self.client.chat_update, "chat.postMessage": self.client.chat_postMessage,
               "chat.postEphemeral": self.client.chat_postEphemeral, "chat.delete": self.client.chat_delete}[method]
        return await api(**kwargs)

    async def _blocks_or_plain(self, step: str, send, payload: dict, failures: list[str]) -> Any:
        """``send(payload)``; when Slack refuses the blocks, ``send`` of the plain version. Returns
        the response, or ``None`` with the reason appended to ``failures`` (and counted)."""
        try:
            return await send(payload)
        except Exception as err:  # noqa: BLE001 - every refusal is a reason to try the next way
            code = error_code(err)
            if code not in REFUSED_BLOCK_ERRORS or "blocks" not in payload:
                self._failed(step, code, failures)
                return None
            self._failed(step, code, failures)
        try:
            return await send(plain_payload(payload))
        except Exception as err:  # noqa: BLE001
            self._failed(f"{step}_plain", error_code(err), failures)
            return None

    def _failed(self, step: str, code: str, failures: list[str]) -> None:
        failures.append(f"{step}: {code}")
        log.info("Slack refused the answer's %s (%s); trying the next way", step, code)
        if self.metrics is not None:
            self.metrics.record_slack_delivery_failure(step, code)

    async def post_progress(self, payload: dict) -> str | None:
        """Post the progress message (retried; as plain text if its blocks are refused); its ``ts`` or ``None``."""
        failures: list[str] = []

        async def send(p: dict):
            return await self._call("chat.postMessage", channel=self.channel, thread_ts=self.thread_ts, **p)

        response = await self._blocks_or_plain("progress", send, payload, failures)
        return response.get("ts") if response is not None else None

    # -- the answer --------------------------------------------------------------------------------
    async def deliver(self, pages: Sequence[dict], *, edit_ts: str | None, edit_mode: str = "in_place",
                      shown_whole: bool = False, supplement: dict | None = None,
                      ephemeral_response: bool = False) -> Delivered:
        """Deliver ``pages`` (Block Kit payloads; the first replaces ``edit_ts`` when given).

        Args:
            edit_mode: the mode an edit of ``edit_ts`` counts as (``stream`` or ``in_place``).
            shown_whole: ``edit_ts`` already shows the whole answer (a completed stream): if the
                edit fails, only ``supplement`` (sources, feedback) is posted, never a second copy.
            ephemeral_response: a ``response_url`` post is ephemeral (a refusal, a failure).
        """
        result = Delivered()
        steps = ["edit", "reply", "response_url", "ephemeral", "dm"]
        start = 0 if edit_ts else 1
        for number, page in enumerate(pages):
            first = number == 0
            for index in range(start, len(steps)):
                step = steps[index]
                ts = await self._send(step, page, edit_ts=edit_ts, ephemeral=ephemeral_response,
                                      failures=result.failures)
                if ts is False:  # not applicable here (no response_url, no user)
                    continue
                if ts is not None:
                    if first:
                        result.mode = {"edit": edit_mode, "response_url": "respond"}.get(step, step)
                        result.ts = ts or None
                        start = max(index, 1)  # later pages: a reply after an edit, else the same way
                    result.pages += 1
                    break
                if first and step == "edit" and shown_whole:
                    result.mode, result.ts = edit_mode, edit_ts
                    result.pages = len(pages)
                    if supplement is not None:
                        await self._send("reply", supplement, edit_ts=None, ephemeral=False, failures=result.failures)
                    return result
            else:
                if first:
                    return result  # lost
                log.warning("page %d of %d of an answer could not be posted", number + 1, len(pages))
        return result

    async def _send(self, step: str, payload: dict, *, edit_ts: str | None, ephemeral: bool,
                    failures: list[str]) -> str | None | bool:
        """One step: the message ``ts`` ("" when Slack gives none), ``None`` when refused, ``False`` when
        the step does not apply."""
        if step == "edit":
            async def send(p: dict):
                return await self._call("chat.update", channel=self.channel, ts=edit_ts, **p)
        elif step == "reply":
            async def send(p: dict):
                return await self._call("chat.postMessage", channel=self.channel, thread_ts=self.thread_ts, **p)
        elif step == "response_url":
            if not self.response_url:
                return False

            async def send(p: dict):
                await post_response_url(self.response_url, {
                    **p, "response_type": "ephemeral" if ephemeral else "in_channel", "replace_original": False},
                    handlers=self.handlers)
                return {"ts": ""}
        elif step == "ephemeral":
            if not self.user_id:
                return False

            async def send(p: dict):
                await self._call("chat.postEphemeral", channel=self.channel, user=self.user_id,
                                 thread_ts=self.thread_ts, **p)
                return {"ts": ""}
        else:  # dm: plain text with a line saying why it came here
            if not self.user_id:
                return False
            plain = plain_payload(payload)
            payload = {**plain, "text": messages.answer_sent_privately(self.channel) + "\n" + plain["text"]}

            async def send(p: dict):
                return await self._call("chat.postMessage", channel=self.user_id, **p)
        response = await self._blocks_or_plain(step, send, payload, failures)
        if response is None:
            return None
        return str(response.get("ts") or "")

    # -- the progress message -----------------------------------------------------------------------
    async def settle_progress(self, anchor: str, done: dict, *, failures: list[str]) -> str:
        """Leave the progress message saying where the answer is: ``done`` (blocks, then plain),
        else delete it. Returns ``edited``, ``deleted`` or ``stale`` (every way refused, logged)."""
        async def send(p: dict):
            return await self._call("chat.update", channel=self.channel, ts=anchor, **p)

        try:
            await send(done)
            return "edited"
        except Exception as err:  # noqa: BLE001
            code = error_code(err)
            self._failed("progress_edit", code, failures)
        if code in REFUSED_BLOCK_ERRORS:
            try:
                await send(plain_payload(done))
                return "edited"
            except Exception as err:  # noqa: BLE001
                self._failed("progress_edit_plain", error_code(err), failures)
        try:
            await self._call("chat.delete", channel=self.channel, ts=anchor)
            return "deleted"
        except Exception as err:  # noqa: BLE001
            self._failed("progress_delete", error_code(err), failures)
            log.warning("the progress message could be neither edited nor deleted (%s)", "; ".join(failures[-3:]))
            return "stale"

    async def delete(self, ts: str, *, failures: list[str]) -> bool:
        """Delete a message this answer made (a partial streamed reply replaced by a new post)."""
        try:
            await self._call("chat.delete", channel=self.channel, ts=ts)
            return True
        except Exception as err:  # noqa: BLE001
            self._failed("delete_partial", error_code(err), failures)
            return False

