"""The Slack experience of one question: visible progress, a streamed answer, a safe final message.

    flow = AskFlow(ctx, asker)                            # one per app (bot.compose builds it)
    outcome = await flow.run(client, AskRequest(question, channel_id=…, user_id=…, team_id=…))

What the asker sees, in Web API calls:

1. ``chat.postMessage``: a visible progress message in the channel (or in the
   thread, for a follow-up): ``<@asker> asked: _question_`` and
   ``:mag: Searching *repo* for your question…``.
2. ``chat.update`` of that message from the orchestrator's activity stream —
   sources found, context packed, model rounds, each live tool call with its
   duration — coalesced to at most one update per ``update_interval_s``.
3. ``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream``: the answer
   streamed into the message's thread as the model writes it (recipient user and
   team set). When Slack refuses the stream, or it is off, the answer so far is
   shown in the progress message instead (same coalesced ``chat.update``).
4. The final Block Kit answer (:func:`bot.slack.render.render_answer_message`), paginated
   within Slack's limits: its first page replaces the streamed reply (``chat.update``)
   and the progress message then says "Answered in the thread"; without a stream it
   replaces the progress message itself. Further pages follow in the thread; past
   ``MAX_PAGES`` the rest is uploaded as a snippet (``files_upload_v2``).

Every Slack call goes through the app's :class:`bot.slack.budget.SlackBudget` (progress
edits and stream appends are shed first, the answer always goes) and slack-sdk's retry
handlers (429 after Retry-After, 5xx, connection resets: :mod:`bot.slack.delivery`), so a
transient 429 or 500 on the progress message is retried, not taken for "may not post".
The answer is delivered once, checked at every step, down an ordered list of fallbacks
(:class:`bot.slack.delivery.AnswerDelivery`: the message being edited → a thread reply
→ ``response_url`` → an ephemeral message → a DM); when all refuse, that is logged as
an error and counted, never reported as delivered.

Failures are always visible: an engine refusal (no index yet, bad input), a
model failure (the orchestrator's fallback answer carries the reason and the
sources), a crash (``render_failure`` with the sources found so far), and Slack
refusing a message (the fallbacks above). Nothing here logs question or answer text.

Threads the bot answered are remembered (:class:`ConversationMemory`: the state
store's turns, shared by replicas and kept across restarts; :class:`ThreadMemory`
in process while the store is unavailable) so a follow-up that mentions the bot in
that thread gets the earlier questions and answers as ``history``.

Answers in flight are recorded in the store (``begin_answer`` once the progress
message is posted, again for the streamed reply once it exists; ``finish_answer`` in a
``finally``); at the next start :meth:`AskFlow.recover_interrupted` edits each message
this replica left behind (after a crash or ``kill -9``) to "interrupted, please ask
again"; a record whose edit failed transiently (429, 5xx, Slack unreachable) is kept
for the next start. While the store is unavailable the answer's footer says that
memory is off.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import time
import uuid
from dataclasses import dataclass, field

from bot.answer_loop import drain_answers
from bot.asker import Asker
from bot.slack import messages
from bot.slack.render import (
    DEFAULT_MAX_PROGRESS_LINES,
    AnswerMessage,
    ProgressView,
    render_answer_message,
    render_failure,
)
from bot.identity import Identity
from bot.scoping import Choice
from bot.slack.budget import DEFAULT_LIMITS, SlackBudget, SlackLimits, sheddable_call
from bot.slack.delivery import AnswerDelivery, Delivered, attach_retry_handlers, retry_handlers
from bot.slack.errors import error_code, is_refusal
from bot.source_links import SourceLinks
from bot.slack.text import escape
from bot.slack.stream import Coalescer, ThreadStream
from bot.state.resilient import ResilientState
from bot.state.store import InFlightAnswer
from rag.errors import ProviderError, UserError
from rag.tools.command_names import slash_name

__all__ = [
    "AnswerRecord",
    "AskFlow",
    "AskOptions",
    "AskOutcome",
    "AskRequest",
    "ConversationMemory",
    "ThreadMemory",
    "DEFAULT_UPDATE_INTERVAL_S",
    "DEFAULT_STREAM_INTERVAL_S",
]

log = logging.getLogger(__name__)

#: "At most about one update per second per message" (issue 8); chat.update is Tier 3.
DEFAULT_UPDATE_INTERVAL_S = 1.0
#: Between two chat.appendStream calls (Tier 4, 100+ per minute).
DEFAULT_STREAM_INTERVAL_S = 1.0
#: Answer threads remembered for follow-ups (oldest forgotten first).
DEFAULT_MAX_THREADS = 500
#: Earlier question/answer pairs passed to a follow-up (rag keeps at most 6 turns).
DEFAULT_HISTORY_PAIRS = 3
#: Outcomes kept in ``AskFlow.completed``.
DEFAULT_OUTCOMES_KEPT = 100
RESTART_NOTICE_TIMEOUT_S = 2.0
"""How long a cancelled answer may take to tell its asker that the bot is restarting."""


@dataclass(frozen=True)
class AskOptions:
    """Tuning of the flow; the defaults suit Slack's rate limits, tests use shorter intervals."""

    update_interval_s: float = DEFAULT_UPDATE_INTERVAL_S
    stream_interval_s: float = DEFAULT_STREAM_INTERVAL_S
    stream: bool = True
    max_threads: int = DEFAULT_MAX_THREADS
    history_pairs: int = DEFAULT_HISTORY_PAIRS
    max_progress_lines: int = DEFAULT_MAX_PROGRESS_LINES
    #: the app-wide Web API budget (bot.slack.budget); Slack's tiers by default
    limits: SlackLimits = DEFAULT_LIMITS


@dataclass(frozen=True)
class AskRequest:
    """One question from Slack.

    Attributes:
        question: the text as typed (shown to the asker in Slack, never logged).
        channel_id, user_id, team_id: where and who (the stream's recipient).
        thread_ts: answer inside this thread (follow-ups and mentions); ``None`` → a new message.
        response_url: the slash command's ``response_url``, a fallback when the bot may not post.
    """

    question: str
    channel_id: str
    user_id: str | None
    team_id: str | None = None
    thread_ts: str | None = None
    response_url: str | None = None


@dataclass
class AskOutcome:
    """What one run did (for logs and tests); ``mode`` is where the final message went:
    ``stream`` (the streamed reply), ``in_place`` (the progress message), ``reply`` (a new
    post in the thread after Slack refused an edit), ``respond`` (response_url),
    ``ephemeral``, ``dm`` or ``lost``. ``ok`` is the answer's (no engine or model error);
    ``delivered`` whether Slack took it; ``failures`` each refused step, ``"step: reason"``."""

    answer_id: str | None = None
    ok: bool = False
    mode: str = "lost"
    anchor_ts: str | None = None
    thread_ts: str | None = None
    final_ts: str | None = None
    streamed: bool = False
    progress_updates: int = 0
    error: str | None = None
    delivered: bool = False
    pages: int = 0
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AnswerRecord:
    """An answer the bot posted: the feedback buttons carry ``answer_id``."""

    answer_id: str
    channel_id: str
    thread_ts: str | None
    message_ts: str | None
    user_id: str | None
    mode: str
    question_chars: int = 0
    sources: tuple[str, ...] = ()
    model: str | None = None


class ThreadMemory:
    """Bounded in-memory map: thread ts → earlier (question, answer) pairs; answer id → record."""

    def __init__(self, *, max_threads: int = DEFAULT_MAX_THREADS, max_pairs: int = DEFAULT_HISTORY_PAIRS) -> None:
        self._threads: collections.OrderedDict[str, list[tuple[str, str]]] = collections.OrderedDict()
        self._answers: collections.OrderedDict[str, AnswerRecord] = collections.OrderedDict()
        self._max_threads = max_threads
        self._max_pairs = max_pairs

    def __contains__(self, thread_ts: object) -> bool:
        return thread_ts in self._threads

    def remember(self, thread_ts: str, question: str, answer: str) -> None:
        pairs = self._threads.pop(thread_ts, [])
        pairs = (pairs + [(question, answer)])[-self._max_pairs:]
        self._threads[thread_ts] = pairs
        while len(self._threads) > self._max_threads:
            self._threads.popitem(last=False)

    def history(self, thread_ts: str | None) -> list[dict]:
        """``[{"role": "user", "content": q}, {"role": "assistant", "content": a}, …]``, oldest first."""
        turns: list[dict] = []
        for question, answer in self._threads.get(thread_ts or "", []):
            turns += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
        return turns

    def add_answer(self, record: AnswerRecord) -> None:
        self._answers[record.answer_id] = record
        while len(self._answers) > self._max_threads * 4:
            self._answers.popitem(last=False)

    def answer(self, answer_id: str) -> AnswerRecord | None:
        return self._answers.get(answer_id)


class ConversationMemory:
    """A thread's earlier turns from the state store, with :class:`ThreadMemory` as the fallback.

    Threads are keyed ``"<channel>:<thread ts>"``. Every answered turn is written to the store
    (queued while it is down, written when it returns) and to the in-process memory, which
    answers while the store is unavailable.
    """

    def __init__(self, state: ResilientState | None, *, max_threads: int = DEFAULT_MAX_THREADS,
                 max_pairs: int = DEFAULT_HISTORY_PAIRS) -> None:
        self.state = state if state is not None else ResilientState.memory_only()
        self.local = ThreadMemory(max_threads=max_threads, max_pairs=max_pairs)
        self._max_pairs = max_pairs

    @staticmethod
    def key(channel_id: str | None, thread_ts: str) -> str:
        return f"{channel_id or '-'}:{thread_ts}"

    async def history(self, channel_id: str | None, thread_ts: str | None) -> list[dict]:
        """The thread's last question/answer pairs as model messages, oldest first."""
        if not thread_ts:
            return []
        key = self.key(channel_id, thread_ts)
        ok, turns = await self.state.acall("turns", lambda s: s.turns(key, limit=2 * self._max_pairs))
        if ok:
            return [turn.to_message() for turn in turns]
        return self.local.history(thread_ts)

    async def remember(self, channel_id: str | None, thread_ts: str, question: str, answer: str) -> bool:
        """Keep one question/answer pair; ``True`` when the store has it now."""
        self.local.remember(thread_ts, question, answer)
        key = self.key(channel_id, thread_ts)
        return await self.state.awrite("turns", lambda s: s.append_turns(key, [("user", question),
                                                                               ("assistant", answer)]))

    def add_answer(self, record: AnswerRecord) -> None:
        self.local.add_answer(record)

    def answer(self, answer_id: str) -> AnswerRecord | None:
        return self.local.answer(answer_id)


class AskFlow:
    """Runs questions for one app: progress, streaming, final message, memory of threads.

    Args:
        ctx: the :class:`bot.context.BotContext` (settings, repository name and commit, runtime).
        asker: the one answer entry point (:class:`bot.asker.Asker`).
        options: intervals and limits (:class:`AskOptions`).
        command_id: the ask command's id, for its metrics and captured errors (``"ask"``).
    """

    def __init__(self, ctx, asker: Asker, *, options: AskOptions | None = None, command_id: str = "ask",
                 state: ResilientState | None = None) -> None:
        self.ctx = ctx
        self.asker = asker
        self.command_id = command_id
        self.options = options or AskOptions()
        self.state = state if state is not None else ResilientState.memory_only()
        self.memory = ConversationMemory(self.state, max_threads=self.options.max_threads,
                                         max_pairs=self.options.history_pairs)
        #: The latest outcomes, newest last (for status checks and tests).
        self.completed: collections.deque[AskOutcome] = collections.deque(maxlen=DEFAULT_OUTCOMES_KEPT)
        self._running: set[asyncio.Task] = set()
        metrics = getattr(getattr(ctx, "runtime", None), "metrics", None)
        #: the app-wide Web API budget every answer shares
        self.budget = SlackBudget(self.options.limits, metrics=metrics)
        #: slack-sdk retry handlers (429 after Retry-After, 5xx, resets), for the Web API and response_url
        self.retry_handlers = retry_handlers(self.budget, metrics=metrics)
        self._metrics = metrics

    def attach(self, client) -> None:
        """Give ``client`` (the app's ``AsyncWebClient``) this flow's retry handlers; idempotent."""
        attach_retry_handlers(client, self.retry_handlers)

    async def drain(self, *, timeout_s: float) -> int:
        """Let running answers finish for up to ``timeout_s``, then cancel the rest.

        A cancelled answer tells its asker that the bot is restarting (see :meth:`run`).
        Returns the number of answers that had to be cancelled.
        """
        return await drain_answers(self._running, timeout_s=timeout_s, grace_s=RESTART_NOTICE_TIMEOUT_S + 1)

    async def recover_interrupted(self, client) -> int:
        """Edit every answer this replica (or a dead process on this host) left in flight to
        "interrupted, please ask again", and finish it. Returns how many were finished.

        Run once at start-up (:func:`bot.slack.app.build_app` schedules it). An answer whose
        message cannot be edited any more (Slack refused: gone, locked) is finished anyway
        (nothing else would); one whose edit failed transiently is kept for the next start.
        """
        self.attach(client)
        ok, answers = await self.state.acall("in_flight", lambda s: s.unfinished())
        if not ok:
            return 0
        mine = [a for a in answers if a.replica_id == self.state.replica_id or _dead_local_process(a.replica_id)]
        text = messages.answer_interrupted_by_restart()
        finished = 0
        for answer in mine:
            if answer.message_ts:
                try:
                    await self.budget.spend("chat.update")
                    await client.chat_update(channel=answer.channel, ts=answer.message_ts, text=text,
                                             blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}])
                except Exception as err:  # noqa: BLE001
                    if not is_refusal(err):  # 429/5xx/unreachable even after retries: try at the next start
                        log.warning("could not mark an interrupted answer yet (%s); kept for the next start",
                                    error_code(err))
                        continue
                    log.info("could not mark an interrupted answer (%s)", error_code(err))  # gone or locked
            await self.state.awrite("in_flight", lambda s, i=answer.answer_id: s.finish_answer(i))
            finished += 1
        if mine:
            log.warning("start-up: %d message(s) of answers interrupted by the previous stop were marked "
                        "'please ask again'", finished)
        return finished

    async def run(self, client, request: AskRequest) -> AskOutcome:
        """Answer ``request`` in Slack (see the module docstring). Never raises except on cancellation."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return await self._run(client, request)

    async def _run(self, client, request: AskRequest) -> AskOutcome:
        opts, ctx = self.options, self.ctx
        self.attach(client)
        started = time.perf_counter()
        history = await self.memory.history(request.channel_id, request.thread_ts) if request.thread_ts else []
        choice = await _choose(ctx, request)
        view = ProgressView(repo=choice.repo, question=request.question, user_id=request.user_id,
                            follow_up=bool(history), max_lines=opts.max_progress_lines)
        delivery = AnswerDelivery(client, self.budget, handlers=self.retry_handlers, channel=request.channel_id,
                                  user_id=request.user_id, thread_ts=request.thread_ts,
                                  response_url=request.response_url, metrics=self._metrics)
        records: list[InFlightAnswer] = []
        writes: list[asyncio.Future] = []
        answer_key = uuid.uuid4().hex[:16]

        def record(ts: str, suffix: str = "") -> None:
            entry = InFlightAnswer(answer_id=answer_key + suffix, channel=request.channel_id,
                                   thread_ts=request.thread_ts or anchor, message_ts=ts,
                                   replica_id=self.state.replica_id, started_at=time.time())
            records.append(entry)
            writes.append(asyncio.ensure_future(self.state.acall("in_flight", lambda s: s.begin_answer(entry))))

        async with self.budget.hold({"chat.update": 2}):  # the final edit and the progress message's last one
            anchor = await delivery.post_progress(view.payload())
            if anchor:
                delivery.thread_ts = request.thread_ts or anchor
                record(anchor)
                await writes[-1]
            try:
                return await self._answer(client, request, started, history, view, anchor, delivery,
                                          on_stream=lambda ts: record(ts, "-stream"), choice=choice)
            finally:
                if records:
                    async def finish() -> None:
                        await asyncio.gather(*writes, return_exceptions=True)
                        for entry in records:
                            await self.state.awrite("in_flight", lambda s, i=entry.answer_id: s.finish_answer(i))

                    with contextlib.suppress(Exception):  # cancelled too: finished before the task ends
                        await asyncio.shield(asyncio.ensure_future(finish()))

    async def _answer(self, client, request: AskRequest, started: float, history: list[dict], view: ProgressView,
                      anchor: str | None, delivery: AnswerDelivery, *, on_stream,
                      choice: Choice) -> AskOutcome:
        opts, ctx = self.options, self.ctx
        outcome = AskOutcome(anchor_ts=anchor, thread_ts=request.thread_ts or anchor)
        updates = None
        if anchor:
            async def send_update(render) -> bool | None:  # rendered when sent: coalesced states cost nothing
                if not await self.budget.try_spend("chat.update"):
                    return False  # shed: a later state (or the answer) replaces it
                with sheddable_call():
                    await client.chat_update(channel=request.channel_id, ts=anchor, **render())

            updates = Coalescer(send_update, interval_s=opts.update_interval_s, name="progress", just_sent=True)

        def refresh() -> None:
            if updates is not None:
                updates.submit(view.payload)

        def stream_refused(code: str) -> None:
            view.writing, view.show_partial = "in_place", True
            refresh()

        stream = None
        if anchor and opts.stream:
            stream = ThreadStream(client, channel=request.channel_id, thread_ts=outcome.thread_ts,
                                  user_id=request.user_id, team_id=request.team_id,
                                  interval_s=opts.stream_interval_s, on_refused=stream_refused,
                                  budget=self.budget, on_started=on_stream)

        async def on_activity(activity) -> None:
            view.apply(activity)
            refresh()

        async def on_token(text: str) -> None:
            view.add_text(text)
            if stream is not None and stream.active:
                if view.writing is None:
                    view.writing = "thread"
                    refresh()
                stream.feed(text)
            else:
                view.writing, view.show_partial = "in_place", True
                refresh()

        answer = refusal = None
        crashed = False
        identity = Identity(user_id=request.user_id, is_admin=ctx.settings.is_admin(request.user_id),
                            channel_id=request.channel_id, team_id=request.team_id)
        try:
            answer = await self.asker.answer(choice.question, identity=identity, on_activity=on_activity,
                                             on_token=on_token, history=history or None,
                                             repo=choice.repo if ctx.repos is not None else None)
        except (UserError, ProviderError) as err:  # no index yet, bad input: a sentence for the asker
            refusal = str(err)
        except asyncio.CancelledError:
            if updates is not None:
                updates.cancel()
            if stream is not None:
                stream.cancel()
            notice = {"text": messages.ask_interrupted(),
                      "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": messages.ask_interrupted()}}]}
            cut = [ts for ts in (anchor, stream.ts if stream is not None else None) if ts]
            if cut:  # shutting down: never leave "Searching…" (or half a streamed answer) behind
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(asyncio.gather(*[
                        client.chat_update(channel=request.channel_id, ts=ts, **notice) for ts in cut])),
                        RESTART_NOTICE_TIMEOUT_S)
            raise
        except Exception as err:  # noqa: BLE001 - the asker must hear about it
            ctx.runtime.errors.capture(err, command=self.command_id, keep_message=False)
            log.error("%s failed with %s", slash_name(self.command_id), type(err).__name__, exc_info=True)
            refusal, crashed = messages.answer_crashed(slash_name(self.command_id)), True
        ctx.runtime.metrics.record_command(self.command_id, time.perf_counter() - started, ok=answer is not None)

        streamed_ts = await stream.finish() if stream is not None else None
        outcome.streamed = streamed_ts is not None
        if updates is not None:  # no progress edit after this point may overwrite the answer
            updates.cancel()
            await updates.flush()
            outcome.progress_updates = updates.sent
            if streamed_ts is None:  # the answer edits the progress message itself: keep the spacing
                await updates.settle()
        seconds = time.perf_counter() - started
        message, payload, reason, footer = self._final(request, answer, refusal, view, outcome, seconds,
                                                      crashed=crashed, choice=choice)
        result = await self._deliver(request, delivery, message, payload, outcome=outcome, stream=stream,
                                     streamed_ts=streamed_ts)
        if anchor and result.mode != "in_place":
            if updates is not None:
                await updates.settle()
            done = view.done_payload(ok=message is not None and result.delivered, reason=reason, footer=footer,
                                     where=result.mode)
            await delivery.settle_progress(anchor, done, failures=result.failures)
        outcome.mode, outcome.final_ts, outcome.delivered = result.mode, result.ts, result.delivered
        outcome.pages, outcome.failures = result.pages, result.failures
        root = outcome.thread_ts or outcome.final_ts
        if message is not None and result.delivered:
            if message.overflow:
                await self._upload_overflow(client, request, root, message.overflow, outcome.answer_id)
            if root:
                await self.memory.remember(request.channel_id, root, answer.question, answer.answer)  # as redacted
                if ctx.scoping is not None:  # follow-ups in this thread keep its repository
                    await ctx.scoping.remember_thread(request.channel_id, root, choice.repo)
            self.memory.add_answer(AnswerRecord(outcome.answer_id, request.channel_id, root, outcome.final_ts,
                                                request.user_id, outcome.mode, question_chars=len(request.question),
                                                sources=tuple(dict.fromkeys(
                                                    str(getattr(src, "path", "")) for src in answer.shown_sources)),
                                                model=answer.model))
        if result.delivered:
            log.info("ask delivered: mode=%s pages=%d streamed=%s appends=%d progress_updates=%d answer=%s "
                     "refused_steps=%d seconds=%.2f", outcome.mode, outcome.pages, outcome.streamed,
                     stream.appends if stream else 0, outcome.progress_updates,
                     "ok" if outcome.ok else outcome.error or "error", len(result.failures), seconds)
        else:
            reason_code = result.failures[-1].split(": ", 1)[-1] if result.failures else "unknown"
            log.error("ask not delivered: Slack refused every way of posting the answer (%s); seconds=%.2f",
                      "; ".join(result.failures) or "no way to post", seconds)
            if self._metrics is not None:
                self._metrics.record_answer_lost(reason_code)
        self.completed.append(outcome)
        return outcome

    async def _deliver(self, request: AskRequest, delivery: AnswerDelivery, message: AnswerMessage | None,
                       payload: dict, *, outcome: AskOutcome, stream: ThreadStream | None,
                       streamed_ts: str | None) -> Delivered:
        """The answer (or the failure) to the first place Slack accepts (bot.slack.delivery); a partial
        streamed reply replaced by a new post is deleted, so the thread holds one copy."""
        pages = message.pages if message is not None else (payload,)
        if streamed_ts:
            edit_ts, mode = streamed_ts, "stream"
        elif outcome.anchor_ts:
            edit_ts, mode = outcome.anchor_ts, "in_place"
        else:
            edit_ts, mode = None, "in_place"
        whole = bool(streamed_ts and stream is not None and stream.complete and message is not None)
        result = await delivery.deliver(pages, edit_ts=edit_ts, edit_mode=mode, shown_whole=whole,
                                        supplement=message.supplement if message is not None else None,
                                        ephemeral_response=message is None)
        if streamed_ts and result.delivered and result.ts != streamed_ts and not whole:
            await delivery.delete(streamed_ts, failures=result.failures)  # the partial stream, now repeated
        return result

    def _final(self, request: AskRequest, answer, refusal: str | None, view: ProgressView, outcome: AskOutcome,
               seconds: float, *, crashed: bool, choice: Choice | None = None) -> tuple[AnswerMessage | None, dict,
                                                                                        str | None, str]:
        """``(answer message or None, final payload, failure reason or None, footer)``.

        ``answer`` is the :class:`rag.answer.orchestrator.AnswerResult` (``None`` when refused or crashed);
        ``refusal`` the sentence for the asker otherwise (the engine's when it refused: no index
        yet, bad input; :func:`messages.answer_crashed` when ``crashed``).
        """
        ctx = self.ctx
        memory_off = self.state.enabled and not self.state.available
        repo = choice.repo if choice is not None else None
        web_url = SourceLinks(ctx, repo=repo) if ctx.repos is not None else ctx.settings.repo_web_url
        commit = ctx.commit_of(repo) if ctx.repos is not None else ctx.commit
        if answer is not None:
            outcome.answer_id = uuid.uuid4().hex[:16]
            outcome.ok, outcome.error = answer.error is None, answer.error
            notice = messages.failure(escape(answer.error, keep_user_mentions=False)) if answer.error else None
            tokens = answer.usage.total_tokens or None
            message = render_answer_message(
                answer.answer, sources=answer.shown_sources, question=request.question, user_id=request.user_id,
                web_url=web_url, commit=commit, model=answer.model, tokens=tokens,
                seconds=seconds, notice=notice, notes=answer.notes, answer_id=outcome.answer_id,
                searched=len(answer.sources) if answer.grounding is not None and answer.grounding.declined else 0,
                memory_off=memory_off)
            footer = messages.answer_footer(model=answer.model, tokens=tokens, seconds=seconds,
                                            memory_off=memory_off)
            return message, message.payload, None, footer
        # refused by the engine (no index yet, bad input …), or crashed
        reason = escape(refusal or "").removeprefix(messages.failure(""))  # render_failure adds the warning sign
        outcome.error = "crashed" if crashed else "refused"
        payload = render_failure(reason, question=request.question, user_id=request.user_id, sources=view.sources,
                                 web_url=web_url, commit=commit, lines=view.lines(include_writing=False))
        return None, payload, reason, messages.answer_footer(model=None, tokens=None, seconds=seconds,
                                                             memory_off=memory_off)

    async def _upload_overflow(self, client, request: AskRequest, thread_ts: str | None, text: str,
                               answer_id: str | None) -> None:
        """Upload the part of the answer that did not fit as a Markdown snippet in the thread."""
        try:
            await self.budget.spend("files.getUploadURLExternal")
            await client.files_upload_v2(channel=request.channel_id, thread_ts=thread_ts, content=text,
                                         filename=f"answer-{answer_id}.md", title=messages.overflow_comment(),
                                         initial_comment=messages.overflow_comment())
        except Exception as err:  # noqa: BLE001 - say so rather than leave a promise unkept
            code = error_code(err)
            log.warning("overflow upload failed (%s)", code)
            try:
                await client.chat_postMessage(channel=request.channel_id, thread_ts=thread_ts,
                                              text=messages.failure(f"the rest of the answer could not be attached "
                                                                    f"({escape(code)})"))
            except Exception:  # noqa: BLE001
                log.warning("could not report the failed upload")



async def _choose(ctx, request: AskRequest) -> Choice:
    """The repository of ``request`` (:meth:`bot.scoping.Scoping.choose`; without scoping, the one engine's)."""
    if ctx.scoping is None:
        return Choice(ctx.engine.repo_root.name, request.question, "default")
    return await ctx.scoping.choose(request.question, channel_id=request.channel_id, thread_ts=request.thread_ts)


def _dead_local_process(replica_id: str) -> bool:
    """Whether ``replica_id`` is the default ``<this host>-<pid>`` of a process that no longer runs."""
    from bot.settings import default_replica_id

    host, _, pid = replica_id.rpartition("-")
    if not pid.isdigit() or host != default_replica_id().rpartition("-")[0] or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists (another user's)
        return False
    return False
