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
4. The final Block Kit answer (:func:`bot.slack.render.render_answer_message`): it replaces
   the streamed reply (``chat.update``) and the progress message then says
   "Answered in the thread"; without a stream it replaces the progress message
   itself. Beyond 50 blocks the rest is uploaded as a snippet (``files_upload_v2``).

Failures are always visible: an engine refusal (no index yet, bad input), a
model failure (the orchestrator's fallback answer carries the reason and the
sources), a crash (``render_failure`` with the sources found so far), and Slack
refusing a message (a plain fallback reply in the thread, then an ephemeral
note). Nothing here logs question or answer text.

Threads the bot answered are remembered (:class:`ConversationMemory`: the state
store's turns, shared by replicas and kept across restarts; :class:`ThreadMemory`
in process while the store is unavailable) so a follow-up that mentions the bot in
that thread gets the earlier questions and answers as ``history``.

Answers in flight are recorded in the store (``begin_answer`` once the progress
message is posted, ``finish_answer`` in a ``finally``); at the next start
:meth:`AskFlow.recover_interrupted` edits each one this replica left behind to
"interrupted, please ask again". While the store is unavailable the answer's
footer says that memory is off.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

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
from bot.slack.errors import error_code
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


@dataclass(frozen=True)
class AskRequest:
    """One question from Slack.

    Attributes:
        question: the text as typed (shown to the asker in Slack, never logged).
        channel_id, user_id, team_id: where and who (the stream's recipient).
        thread_ts: answer inside this thread (follow-ups and mentions); ``None`` → a new message.
        respond: the slash command's ``respond()`` (response_url), used when the bot may not post.
    """

    question: str
    channel_id: str
    user_id: str | None
    team_id: str | None = None
    thread_ts: str | None = None
    respond: Any = None


@dataclass
class AskOutcome:
    """What one run did (for logs and tests); ``mode`` is where the final message went:
    ``stream`` (the streamed reply), ``in_place`` (the progress message), ``respond``,
    ``reply`` (a new thread reply after Slack refused an update) or ``lost``."""

    answer_id: str | None = None
    ok: bool = False
    mode: str = "lost"
    anchor_ts: str | None = None
    thread_ts: str | None = None
    final_ts: str | None = None
    streamed: bool = False
    progress_updates: int = 0
    error: str | None = None


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

    async def drain(self, *, timeout_s: float) -> int:
        """Let running answers finish for up to ``timeout_s``, then cancel the rest.

        A cancelled answer tells its asker that the bot is restarting (see :meth:`run`).
        Returns the number of answers that had to be cancelled.
        """
        running = {t for t in self._running if not t.done()}
        if not running:
            return 0
        _done, pending = await asyncio.wait(running, timeout=timeout_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=RESTART_NOTICE_TIMEOUT_S + 1)
        return len(pending)

    async def recover_interrupted(self, client) -> int:
        """Edit every answer this replica (or a dead process on this host) left in flight to
        "interrupted, please ask again", and finish it. Returns how many were finished.

        Run once at start-up (:func:`bot.slack.app.build_app` schedules it). An answer whose
        message cannot be edited any more is finished anyway (nothing else would).
        """
        ok, answers = await self.state.acall("in_flight", lambda s: s.unfinished())
        if not ok:
            return 0
        mine = [a for a in answers if a.replica_id == self.state.replica_id or _dead_local_process(a.replica_id)]
        text = messages.answer_interrupted_by_restart()
        for answer in mine:
            if answer.message_ts:
                try:
                    await client.chat_update(channel=answer.channel, ts=answer.message_ts, text=text,
                                             blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}])
                except Exception as err:  # noqa: BLE001 - finished anyway: the message is gone or locked
                    log.info("could not mark an interrupted answer (%s)", error_code(err))
            await self.state.awrite("in_flight", lambda s, i=answer.answer_id: s.finish_answer(i))
        if mine:
            log.warning("start-up: %d answer(s) interrupted by the previous stop were marked 'please ask again'",
                        len(mine))
        return len(mine)

    async def run(self, client, request: AskRequest) -> AskOutcome:
        """Answer ``request`` in Slack (see the module docstring). Never raises except on cancellation."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return await self._run(client, request)

    async def _run(self, client, request: AskRequest) -> AskOutcome:
        opts, ctx = self.options, self.ctx
        started = time.perf_counter()
        history = await self.memory.history(request.channel_id, request.thread_ts) if request.thread_ts else []
        choice = await _choose(ctx, request)
        view = ProgressView(repo=choice.repo, question=request.question, user_id=request.user_id,
                            follow_up=bool(history), max_lines=opts.max_progress_lines)
        anchor = await self._post_progress(client, request, view.payload())
        in_flight = None
        if anchor:
            in_flight = InFlightAnswer(answer_id=uuid.uuid4().hex[:16], channel=request.channel_id,
                                       thread_ts=request.thread_ts, message_ts=anchor,
                                       replica_id=self.state.replica_id, started_at=time.time())
            await self.state.acall("in_flight", lambda s: s.begin_answer(in_flight))
        try:
            return await self._answer(client, request, started, history, view, anchor, choice=choice)
        finally:
            if in_flight is not None:
                finish = self.state.awrite("in_flight", lambda s: s.finish_answer(in_flight.answer_id))
                with contextlib.suppress(Exception):  # cancelled too: finished before the task ends
                    await asyncio.shield(asyncio.ensure_future(finish))

    async def _answer(self, client, request: AskRequest, started: float, history: list[dict], view: ProgressView,
                      anchor: str | None, *, choice: Choice) -> AskOutcome:
        opts, ctx = self.options, self.ctx
        outcome = AskOutcome(anchor_ts=anchor, thread_ts=request.thread_ts or anchor)
        updates = None
        if anchor:
            async def send_update(render) -> None:  # rendered when sent: coalesced states cost nothing
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
                                  interval_s=opts.stream_interval_s, on_refused=stream_refused)

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
            if anchor:  # shutting down: never leave "Searching…" behind
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(client.chat_update(
                        channel=request.channel_id, ts=anchor, text=messages.ask_interrupted(),
                        blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": messages.ask_interrupted()}}],
                    )), RESTART_NOTICE_TIMEOUT_S)
            raise
        except Exception as err:  # noqa: BLE001 - the asker must hear about it
            ctx.runtime.errors.capture(err, command=self.command_id, keep_message=False)
            log.error("%s failed with %s", slash_name(self.command_id), type(err).__name__, exc_info=True)
            refusal, crashed = messages.answer_crashed(slash_name(self.command_id)), True
        ctx.runtime.metrics.record_command(self.command_id, time.perf_counter() - started, ok=answer is not None)

        streamed_ts = await stream.finish() if stream is not None else None
        outcome.streamed = streamed_ts is not None
        seconds = time.perf_counter() - started
        message, payload, reason, footer = self._final(request, answer, refusal, view, outcome, seconds,
                                                      crashed=crashed, choice=choice)
        done = view.done_payload(ok=message is not None, reason=reason, footer=footer)
        await self._deliver(client, request, payload, outcome=outcome, streamed_ts=streamed_ts, updates=updates,
                            done=done, failed=message is None)
        if updates is not None:
            outcome.progress_updates = updates.sent
        root = outcome.thread_ts or outcome.final_ts
        if message is not None:
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
        log.info("ask delivered: mode=%s streamed=%s appends=%d progress_updates=%d ok=%s seconds=%.2f",
                 outcome.mode, outcome.streamed, stream.appends if stream else 0, outcome.progress_updates,
                 outcome.ok, seconds)
        self.completed.append(outcome)
        return outcome

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

    async def _post_progress(self, client, request: AskRequest, payload: dict) -> str | None:
        """Post the progress message; ``None`` when the bot may not post there."""
        try:
            response = await client.chat_postMessage(channel=request.channel_id, thread_ts=request.thread_ts,
                                                     **payload)
            return response.get("ts")
        except Exception as err:  # noqa: BLE001 - not in the channel, a DM … → answer via response_url
            log.info("progress message refused (%s); answering without it", error_code(err))
            return None

    async def _deliver(self, client, request: AskRequest, payload: dict, *, outcome: AskOutcome,
                       streamed_ts: str | None, updates: Coalescer | None, done: dict, failed: bool) -> None:
        """Put the final message where the asker is looking, with fallbacks down to an ephemeral note."""
        error = None
        if streamed_ts:
            try:
                await client.chat_update(channel=request.channel_id, ts=streamed_ts, **payload)
                outcome.mode, outcome.final_ts = "stream", streamed_ts
            except Exception as err:  # noqa: BLE001
                error = error_code(err)
            if updates is not None:
                await updates.aclose(lambda: done)
            if error is None:
                return
        elif updates is not None:
            if await updates.aclose(lambda: payload):
                outcome.mode, outcome.final_ts = "in_place", outcome.anchor_ts
                return
            error = error_code(updates.last_error) if updates.last_error else "error"
        elif request.respond is not None:
            try:
                await request.respond(response_type="ephemeral" if failed else "in_channel", **payload)
                outcome.mode = "respond"
                return
            except Exception as err:  # noqa: BLE001
                error = error_code(err)
        log.info("final message refused (%s); replying in the thread instead", error)
        await self._reply_instead(client, request, payload, outcome=outcome, error=error or "error")

    async def _reply_instead(self, client, request: AskRequest, payload: dict, *, outcome: AskOutcome,
                             error: str) -> None:
        """Slack refused the final message: try it as a new reply, then a plain one, then an ephemeral note."""
        thread = outcome.thread_ts
        for attempt in (payload, self._plain_failure(error, payload)):
            try:
                response = await client.chat_postMessage(channel=request.channel_id, thread_ts=thread, **attempt)
                outcome.mode, outcome.final_ts = "reply", response.get("ts")
                return
            except Exception as err:  # noqa: BLE001
                log.info("reply refused too (%s)", error_code(err))
        note = self._plain_failure(error, payload)
        try:
            if request.respond is not None:
                await request.respond(response_type="ephemeral", text=note["text"])
            elif request.user_id:
                await client.chat_postEphemeral(channel=request.channel_id, user=request.user_id,
                                                thread_ts=thread, text=note["text"])
            outcome.mode = "ephemeral"
        except Exception as err:  # noqa: BLE001 - nothing left to tell the user with
            log.warning("could not tell the asker that Slack refused the answer (%s)", error_code(err))

    def _plain_failure(self, error: str, payload: dict) -> dict:
        """Text only (no blocks to refuse): the reason, and the sources line of ``payload`` if any."""
        sources = [element["text"] for block in payload.get("blocks", []) if block.get("type") == "context"
                   for element in block.get("elements", []) if messages.sources_label() in element.get("text", "")]
        text = messages.failure(messages.slack_refused(escape(error)))
        if sources:
            text += "\n" + sources[0]
        return {"text": text, "unfurl_links": False, "unfurl_media": False}

    async def _upload_overflow(self, client, request: AskRequest, thread_ts: str | None, text: str,
                               answer_id: str | None) -> None:
        """Upload the part of the answer that did not fit as a Markdown snippet in the thread."""
        try:
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
