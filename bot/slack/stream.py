"""Rate-friendly Slack output: a latest-state coalescer and a coalesced thread stream.

Slack rate-limits message edits (``chat.update`` is Tier 3, about 50 per minute
per app and method; issue 8 asks for at most about one update per second per
message) and ``chat.appendStream`` (Tier 4, 100+ per minute). The orchestrator,
on the other hand, reports an activity or a token every few milliseconds. Two
small pieces sit in between:

* :class:`Coalescer` keeps only the latest state and sends it at most once per
  interval (measured from the end of the previous send, so two sends never
  reach Slack closer than the interval), plus a final flush on close.
* :class:`ThreadStream` streams answer text into a thread with slack-sdk's
  ``AsyncWebClient.chat_stream`` helper (``chat.startStream`` /
  ``chat.appendStream`` / ``chat.stopStream``, recipient user and team set, as
  Slack requires for channels), coalesced by a :class:`Coalescer`. Mention
  syntax is neutralised before it leaves (:func:`bot.slack.text.neutralise_markdown`)
  and a trailing half-written ``<…`` or ``@word`` is held back until it is complete.
  If Slack refuses the stream (an ``ok: false`` on the first call: ``not_allowed``,
  ``method_not_supported_for_channel_type`` …) or it breaks later, ``on_refused``
  is called once and the caller falls back to updating a message in place.

With a :class:`bot.slack.budget.SlackBudget`, starting the stream and each append are
sheddable (skipped while the budget keeps room for answers; the text waits for the next
append) and not retried; a 429, 5xx or connection failure of one of them is transient:
slack-sdk's ``AsyncChatStream`` keeps the unsent text in its buffer and the next append
carries it, so one failed append never switches the answer away from the stream. The
last append and ``chat.stopStream`` must go (waited for, retried).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Awaitable, Callable, Generic, TypeVar

from bot.slack.budget import sheddable_call
from bot.slack.errors import error_code, is_refusal
from bot.slack.text import neutralise_markdown, stream_safe_length

__all__ = ["Coalescer", "ThreadStream", "DEFAULT_STREAM_BUFFER_CHARS", "MAX_APPEND_CHARS"]

log = logging.getLogger(__name__)

T = TypeVar("T")
_NOTHING = object()
#: ``chat.appendStream``'s ``markdown_text`` limit (Slack method reference).
MAX_APPEND_CHARS = 12_000
#: The helper's own buffer; 1 makes every coalesced append go out at once (the coalescer buffers).
DEFAULT_STREAM_BUFFER_CHARS = 1


class Coalescer(Generic[T]):
    """Send the latest submitted state, at most once per ``interval_s``.

    Example::

        updates = Coalescer(send_update, interval_s=1.0)
        updates.submit(state1); updates.submit(state2)   # state1 goes now, state2 ≥ 1 s later
        ok = await updates.aclose(final_state)           # final_state replaces anything pending

    Args:
        send: ``async send(state)``; an exception is logged (type only), counted in
            :attr:`failures` and kept in :attr:`last_error`; later states are still sent.
            Returning ``False`` means the state was skipped (counted in :attr:`skipped`).
        interval_s: minimum seconds between the end of one send and the start of the next.
        clock: monotonic seconds (injectable for tests).
        just_sent: count construction time as a send (the message was just posted), so
            the first state also waits ``interval_s``.

    Attributes:
        sent: sends attempted (not counting skipped ones).
        skipped: states ``send`` skipped (returned ``False``: shed for the rate-limit budget).
    """

    def __init__(self, send: Callable[[T], Awaitable[Any]], *, interval_s: float,
                 clock: Callable[[], float] = time.monotonic, name: str = "updates", just_sent: bool = False) -> None:
        if interval_s < 0:
            raise ValueError(f"interval_s must be >= 0, got {interval_s}")
        self._send = send
        self._interval = interval_s
        self._clock = clock
        self._name = name
        self._latest: Any = _NOTHING
        self._last_end = clock() if just_sent else float("-inf")
        self._task: asyncio.Task | None = None
        self._closed = False
        self.sent = 0
        self.skipped = 0
        self.failures = 0
        self.last_error: BaseException | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, state: T) -> None:
        """Make ``state`` the next one to send (replacing any pending state); never blocks."""
        if self._closed:
            return
        self._latest = state
        self._ensure_task()

    def _ensure_task(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"coalescer-{self._name}")

    async def _run(self) -> None:
        while self._latest is not _NOTHING:
            wait = self._last_end + self._interval - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
                if self._latest is _NOTHING:  # cancelled while waiting: nothing left to send
                    break
            state, self._latest = self._latest, _NOTHING
            try:
                if await self._send(state) is False:
                    self.skipped += 1
                else:
                    self.sent += 1
                self.last_error = None
            except Exception as err:  # noqa: BLE001 - a progress sink must not break the answer
                self.sent += 1
                self.failures += 1
                self.last_error = err
                code = error_code(err)
                log.warning("%s: a send failed (%s)", self._name, code)
            finally:
                self._last_end = self._clock()

    async def flush(self) -> None:
        """Wait until everything submitted so far has been sent."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def aclose(self, final: Any = _NOTHING) -> bool:
        """Send ``final`` (or whatever is pending) as the last state, then stop accepting states.

        Returns:
            True when the last send succeeded (or there was nothing to send).
        """
        if final is not _NOTHING:
            self._latest = final
        self._closed = True
        if self._latest is not _NOTHING:
            self._ensure_task()
        await self.flush()
        return self.last_error is None

    def cancel(self) -> None:
        """Drop pending states and stop (a send already under way finishes on its own)."""
        self._closed = True
        self._latest = _NOTHING

    async def settle(self) -> None:
        """Stop (:meth:`cancel`), wait for a send under way, then until ``interval_s`` has passed
        since the last send: the caller's own next edit of the same message keeps the spacing."""
        self.cancel()
        await self.flush()
        wait = self._last_end + self._interval - self._clock()
        if wait > 0:
            await asyncio.sleep(wait)


class ThreadStream:
    """Stream answer text into a thread (see the module docstring).

    Args:
        client: the ``AsyncWebClient``.
        channel: channel id.
        thread_ts: the message to reply to (streams are always thread replies).
        user_id, team_id: the recipient (the asker), required by Slack in channels.
        interval_s: minimum seconds between two Web API calls of this stream.
        on_refused: ``callback(error_code)`` called once when Slack refuses or breaks the stream.
        budget: the app's :class:`bot.slack.budget.SlackBudget` (optional).
        on_started: ``callback(ts)`` called once the streamed message exists.
    """

    def __init__(self, client, *, channel: str, thread_ts: str, user_id: str | None, team_id: str | None,
                 interval_s: float, on_refused: Callable[[str], None] | None = None, budget=None,
                 on_started: Callable[[str], None] | None = None) -> None:
        self._client = client
        self._budget = budget
        self._on_started = on_started
        self._held = False
        #: appends that failed transiently (their text went with a later call)
        self.transient_failures = 0
        self._args = {"channel": channel, "thread_ts": thread_ts, "recipient_user_id": user_id,
                      "recipient_team_id": team_id}
        self._on_refused = on_refused
        self._stream = None
        self._released = 0
        self._final = False
        self._parts: list[str] = []  # joined lazily: appending to one long str per token is quadratic
        #: ``idle`` (nothing sent), ``streaming``, ``stopped``, ``refused`` or ``broken``.
        self.state = "idle"
        self.error: str | None = None
        self.ts: str | None = None
        self.appends = 0
        self._updates: Coalescer[int] = Coalescer(self._push, interval_s=interval_s, name="thread-stream")

    @property
    def text(self) -> str:
        """Everything fed so far."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def active(self) -> bool:
        """True while text fed now will be streamed."""
        return self.state in ("idle", "streaming")

    def feed(self, text: str) -> None:
        """Queue answer text (Markdown) for the stream; ignored once the stream is refused or broken."""
        if not self.active or not text:
            return
        self._parts.append(text)
        self._updates.submit(0)

    async def _push(self, _state: int) -> None:
        text = self.text
        cut = len(text) if self._final else max(stream_safe_length(text), self._released)
        if cut <= self._released or not self.active:
            return
        if not await self._may_call(sheddable=not self._final):
            return  # shed: this text goes with a later append
        delta = text[self._released:cut]
        self._released = cut
        safe = neutralise_markdown(delta)
        for number, start in enumerate(range(0, len(safe), MAX_APPEND_CHARS)):
            if number and not await self._may_call(sheddable=False):
                return
            if not await self._append(safe[start:start + MAX_APPEND_CHARS], sheddable=not self._final):
                return

    def _method(self) -> str:
        return "chat.appendStream" if self._stream is not None and self._stream.ts else "chat.startStream"

    async def _may_call(self, *, sheddable: bool) -> bool:
        if self._budget is None:
            return True
        if sheddable:
            return await self._budget.try_spend(self._method())
        await self._budget.spend(self._method())
        return True

    async def _append(self, text: str, *, sheddable: bool) -> bool:
        started = self._stream is not None and bool(self._stream.ts)
        try:
            if self._stream is None:
                self._stream = await self._client.chat_stream(buffer_size=DEFAULT_STREAM_BUFFER_CHARS, **self._args)
            with sheddable_call() if sheddable else contextlib.nullcontext():
                await self._stream.append(markdown_text=text)
        except Exception as err:  # noqa: BLE001 - a refusal means: fall back to in-place updates
            if sheddable and not is_refusal(err):  # 429, 5xx, a reset: the SDK keeps the text buffered
                self.transient_failures += 1
                log.info("thread stream: an append failed (%s); its text goes with the next", error_code(err))
                return True
            self._fail(err)
            return False
        self.appends += 1
        self.state = "streaming"
        self.ts = self._stream.ts
        if not started and self.ts:
            if self._budget is not None and not self._held:
                self._held = True
                self._budget.reserve({"chat.appendStream": 1, "chat.stopStream": 1})
            if self._on_started is not None:
                self._on_started(self.ts)
        return True

    def _release(self) -> None:
        if self._held:
            self._held = False
            self._budget.release({"chat.appendStream": 1, "chat.stopStream": 1})

    def _fail(self, err: BaseException) -> None:
        code = error_code(err)
        self.state = "refused" if self.state == "idle" else "broken"
        self.error = str(code)
        log.info("thread stream %s (%s); falling back to in-place updates", self.state, code)
        if self._on_refused is not None:
            self._on_refused(self.error)

    async def finish(self) -> str | None:
        """Send what is held back, stop the stream and return its message ``ts``.

        Returns ``None`` when nothing was streamed or the stream was refused or broke
        (then the caller shows the answer elsewhere).
        """
        self._final = True
        if len(self.text) > self._released and self.active:
            self._updates.submit(0)
        await self._updates.aclose()
        if self.state != "streaming" or self._stream is None:
            self._release()
            return None
        try:
            if self._budget is not None:
                await self._budget.spend("chat.stopStream")
            await self._stream.stop()
        except Exception as err:  # noqa: BLE001 - the final message still goes out by chat.update
            code = error_code(err)
            log.info("chat.stopStream failed (%s)", code)
            self.state, self.error = "broken", str(code)
            return self.ts
        finally:
            self._release()
        self.state = "stopped"
        return self.ts

    @property
    def complete(self) -> bool:
        """The streamed message holds everything fed (the stream stopped cleanly)."""
        return self.state == "stopped" and self._released == len(self.text)

    def cancel(self) -> None:
        """Stop sending (pending text is dropped; a started stream is left to Slack's expiry)."""
        self._updates.cancel()
        self._release()

