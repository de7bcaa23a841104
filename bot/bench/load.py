"""The load benchmark: are Slack's acks on time while the bot answers many questions and reindexes?

    report = asyncio.run(run_load(LoadOptions(asks=60, files=2000)))     # a LoadReport
    report.to_json()["probes"]["p99_ms"]

What runs, each in its own process (so that no part's CPU use is billed to another's GIL):

1. **the bot**, exactly as ``slackzilla serve`` runs it (``bot.cli`` ``serve`` in a child process: the
   Bolt HTTP server of :mod:`bot.server` and the composition of :mod:`bot.compose`), on a
   scratch index and state file, with its Web API and model pointed at
2. **the stand-ins** (:mod:`bot.bench.standins`): a recording Slack Web API and a slow
   OpenAI-compatible model that streams one word every ``token_delay_s``;
3. **the probe** (:mod:`bot.bench.client`): a signed ``/sz-help`` every ``probe_interval_s``,
   on a fixed schedule, each ack timed;
4. this process, which sends the work: an admin's ``/sz-reindex full`` of the repository
   (the synthetic :func:`bot.bench.synthrepo.write_repository` one of ``files`` files, or
   ``repo``), and, once the reindex has started, ``asks`` signed ``/sz-ask`` at once, each
   from its own user in its own channel.

It then waits until every question has its final answer on the recorder (or ``timeout_s``)
and the reindex has reported, waits :data:`SETTLE_S` more for late duplicates, and stops.

Figures (:class:`LoadReport`): ack latency of the probes sent while the load ran (from the
first ask to the last answer or the reindex's end, whichever is later) and at idle before
it, ack latency of the asks, answers per question (lost: none; duplicated: more than one
message with the feedback buttons), how many came from the model (not the local fallback),
time to the final answer, the reindex's duration, and the machine's load average.

The target of issue 13 (on the project's 2-core machine): probe ack p99 ≤ 1 s and max ≤ 2 s,
no answer lost or duplicated (:data:`TARGET_P99_MS`, :data:`TARGET_MAX_MS`).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bot.bench.client import signed_headers, slash_form
from bot.bench.synthrepo import DEFAULT_FILES, write_repository

__all__ = ["LoadOptions", "LoadReport", "run_load", "latency_stats", "TARGET_P99_MS", "TARGET_MAX_MS",
           "DEFAULT_ASKS", "GENERIC_QUESTIONS"]

log = logging.getLogger(__name__)

DEFAULT_ASKS = 60
TARGET_P99_MS = 1000.0
TARGET_MAX_MS = 2000.0
SETTLE_S = 2.0
"""Seconds to keep recording after the last answer, so that a late duplicate is counted."""
START_TIMEOUT_S = 120.0
ADMIN_USER = "UADMIN"
GENERIC_QUESTIONS = (
    "How is the configuration loaded?", "Where are errors handled?", "How are requests routed?",
    "What does the main entry point do?", "How are tests organised?", "Where is logging set up?",
    "How does the plugin system work?", "Which environment variables are read?",
)
"""Questions for a repository given with ``--repo`` (the synthetic one brings its own)."""
_BOT_ENV_PREFIXES = ("SLACK_", "AI_", "EMBEDDINGS", "RERANK_", "REPO_", "RAG_", "ADMIN_", "DATABASE_URL", "STATE_",
                     "REINDEX_", "ASK_", "SLACKZILLA_", "REPLICA_ID", "HOST", "PORT", "GITHUB_")


@dataclass(frozen=True)
class LoadOptions:
    """What the benchmark does (module docstring).

    Attributes:
        asks: ``/sz-ask`` sent at once (≥ 1).
        files: size of the synthetic repository (ignored with ``repo``).
        repo: an existing repository to index and ask about instead (only read).
        token_delay_s: the model stand-in's pause before each word.
        answer_tokens: words per model answer.
        probe_interval_s: between two probes.
        reindex: run the admin's full reindex during the asks.
        timeout_s: longest wait for the answers and the reindex.
        profile: write a py-spy profile of the bot there (``py-spy record --threads --gil``: the thread
            holding the GIL, sampled); needs py-spy.
    """

    asks: int = DEFAULT_ASKS
    files: int = DEFAULT_FILES
    repo: Path | None = None
    token_delay_s: float = 0.040
    answer_tokens: int = 120
    probe_interval_s: float = 0.100
    reindex: bool = True
    timeout_s: float = 900.0
    profile: Path | None = None


def latency_stats(values_ms: list[float]) -> dict:
    """``{"count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "over_1s", "over_3s"}`` (nearest-rank percentiles)."""
    ordered = sorted(values_ms)

    def pct(q: float) -> float:
        if not ordered:
            return 0.0
        rank = max(1, -(-round(q * 1000) * len(ordered) // 1000))  # ceil(q·n), in integers
        return round(ordered[min(len(ordered), rank) - 1], 1)

    return {"count": len(ordered), "p50_ms": pct(0.50), "p95_ms": pct(0.95), "p99_ms": pct(0.99),
            "max_ms": round(ordered[-1], 1) if ordered else 0.0,
            "over_1s": sum(1 for v in ordered if v > 1000), "over_3s": sum(1 for v in ordered if v > 3000)}


@dataclass
class LoadReport:
    """The figures of one run (module docstring); :meth:`to_json` is the ``--json`` shape."""

    options: LoadOptions
    files: int
    probes: dict
    probes_idle: dict
    probe_failures: int
    ask_acks: dict
    ask_ack_failures: int
    answers: dict
    reindex: dict
    window_s: float
    load_average: dict
    slack_calls: dict = field(default_factory=dict)
    slowest_probes: list = field(default_factory=list)

    @property
    def target_met(self) -> bool:
        """Probe p99 ≤ 1 s, max ≤ 2 s, no probe failed, every answer delivered exactly once."""
        return (self.probes["count"] > 0 and self.probes["p99_ms"] <= TARGET_P99_MS
                and self.probes["max_ms"] <= TARGET_MAX_MS and self.probe_failures == 0
                and self.answers["lost"] == 0 and self.answers["duplicated"] == 0)

    def to_json(self) -> dict:
        """``{"asks", "files", "token_delay_ms", "answer_tokens", "probe_interval_ms", "window_s",
        "probes": stats, "probes_idle": stats, "probe_failures", "ask_acks": stats, "ask_ack_failures",
        "answers": {"sent", "answered", "lost", "duplicated", "from_model", "memory_off", "p50_s", "max_s",
        "model_asked_p50_s", "model_asked_max_s"},
        "reindex": {"ran", "ok", "seconds", "overlapped_s"}, "slack_calls": {method: n},
        "slowest_probes": [[seconds after the first ask, ack ms], …] (the 5 slowest),
        "load_average": {"before", "after"}, "target": {"probe_p99_ms", "probe_max_ms", "met"}}``
        (stats: :func:`latency_stats`)."""
        o = self.options
        return {
            "asks": o.asks, "files": self.files, "token_delay_ms": round(o.token_delay_s * 1000, 1),
            "answer_tokens": o.answer_tokens, "probe_interval_ms": round(o.probe_interval_s * 1000, 1),
            "window_s": round(self.window_s, 1), "probes": self.probes, "probes_idle": self.probes_idle,
            "probe_failures": self.probe_failures, "ask_acks": self.ask_acks,
            "ask_ack_failures": self.ask_ack_failures, "answers": self.answers, "reindex": self.reindex,
            "slack_calls": self.slack_calls, "slowest_probes": self.slowest_probes,
            "load_average": self.load_average,
            "target": {"probe_p99_ms": TARGET_P99_MS, "probe_max_ms": TARGET_MAX_MS, "met": self.target_met},
        }

    def lines(self) -> list[str]:
        """The human-readable report."""
        def row(name: str, s: dict) -> str:
            return (f"{name:<16} n={s['count']:<5} p50 {s['p50_ms']:>8.1f} ms  p95 {s['p95_ms']:>8.1f} ms  "
                    f"p99 {s['p99_ms']:>8.1f} ms  max {s['max_ms']:>8.1f} ms  >1s {s['over_1s']}  >3s {s['over_3s']}")

        a, r, o = self.answers, self.reindex, self.options
        reindex = (f"full reindex of {self.files} files: {'ok' if r['ok'] else 'FAILED'} in {r['seconds']} s, "
                   f"{r['overlapped_s']} s of it during the asks") if r["ran"] else "no reindex"
        return [
            f"load: {o.asks} concurrent /sz-ask, {reindex}; model {o.answer_tokens} words, "
            f"{o.token_delay_s * 1000:g} ms apart; probe /sz-help every {o.probe_interval_s * 1000:g} ms",
            row("probe acks", self.probes) + (f"  failed {self.probe_failures}" if self.probe_failures else ""),
            row("probe acks idle", self.probes_idle),
            row("ask acks", self.ask_acks) + (f"  failed {self.ask_ack_failures}" if self.ask_ack_failures else ""),
            f"answers          {a['answered']}/{a['sent']} answered, {a['lost']} lost, {a['duplicated']} duplicated, "
            f"{a['from_model']} from the model, {a['memory_off']} saying memory off; model asked after p50 {a['model_asked_p50_s']} s, max "
            f"{a['model_asked_max_s']} s; final answer p50 {a['p50_s']} s, max {a['max_s']} s",
            f"window           {self.window_s:.1f} s; load average {self.load_average['before']} before, "
            f"{self.load_average['after']} after",
            f"target           probe p99 <= {TARGET_P99_MS:g} ms and max <= {TARGET_MAX_MS:g} ms, 0 lost, "
            f"0 duplicated: {'met' if self.target_met else 'MISSED'}",
        ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment without the caller's bot settings (tokens, URLs), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_BOT_ENV_PREFIXES)}
    env.update(extra)
    return env


async def _first_json_line(proc: asyncio.subprocess.Process, what: str, timeout_s: float) -> dict:
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout_s)
    except asyncio.TimeoutError:
        raise RuntimeError(f"the {what} did not start within {timeout_s:g} s") from None
    if not line:
        raise RuntimeError(f"the {what} exited at start (code {await proc.wait()})")
    return json.loads(line)


async def _stop(proc: asyncio.subprocess.Process | None, *, timeout_s: float = 15.0,
                sig: int = signal.SIGTERM) -> None:
    if proc is None or proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class _Run:
    """One benchmark run's processes and scratch files."""

    def __init__(self, options: LoadOptions, tmp: Path, say: Callable[[str], None]) -> None:
        self.options, self.tmp, self.say = options, tmp, say
        self.secret = secrets.token_hex(16)
        self.api_token = secrets.token_hex(16)
        self.standins: asyncio.subprocess.Process | None = None
        self.bot: asyncio.subprocess.Process | None = None
        self.probe: asyncio.subprocess.Process | None = None
        self.profiler: asyncio.subprocess.Process | None = None
        self.standins_url = ""
        self.bot_url = ""
        self.bot_log = tmp / "bot.log"

    async def summary(self, session: aiohttp.ClientSession) -> dict:
        async with session.get(f"{self.standins_url}/_bench/summary") as response:
            return await response.json()

    async def start(self, repo: Path, session: aiohttp.ClientSession) -> None:
        o = self.options
        self.standins = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.bench.standins", "--token-delay-ms", str(o.token_delay_s * 1000),
            "--answer-tokens", str(o.answer_tokens), stdout=subprocess.PIPE, env=_child_env({}), cwd=self.tmp)
        port = (await _first_json_line(self.standins, "stand-ins", 60))["port"]
        self.standins_url = f"http://127.0.0.1:{port}"
        bot_port = _free_port()
        self.bot_url = f"http://127.0.0.1:{bot_port}"
        env = _child_env({
            "SLACK_BOT_TOKEN": "xoxb-bench-token", "SLACK_SIGNING_SECRET": self.secret,
            "SLACK_API_URL": f"{self.standins_url}/api/", "HOST": "127.0.0.1", "PORT": str(bot_port),
            "REPO_PATH": str(repo), "RAG_INDEX_PATH": str(self.tmp / "index.sqlite"),
            "STATE_PATH": str(self.tmp / "state.sqlite"), "REINDEX_INTERVAL_S": "0",
            "AI_URL": f"{self.standins_url}/v1", "AI_API_KEY": "sk-bench", "AI_MODEL": "bench-model",
            "ADMIN_USER_IDS": ADMIN_USER, "ADMIN_API_TOKEN": self.api_token, "EMBEDDINGS": "off",
        })
        with open(self.bot_log, "wb") as log_file:
            self.bot = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "from bot.cli import main; main()", "serve",
                stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=self.tmp)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # serving, and the start-up update (a no-op on the prebuilt index) finished
            if self.bot.returncode is not None:
                raise RuntimeError(f"the bot exited at start (code {self.bot.returncode}):\n{_tail(self.bot_log)}")
            with contextlib.suppress(aiohttp.ClientError, ValueError):
                async with session.get(f"{self.bot_url}/api/status",
                                       headers={"Authorization": f"Bearer {self.api_token}"}) as response:
                    if response.status == 200:
                        reindex = (await response.json()).get("reindex") or {}
                        if not reindex.get("running") and reindex.get("runs", 0) >= 1:
                            break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bot did not become ready within {START_TIMEOUT_S:g} s:\n{_tail(self.bot_log)}")
            await asyncio.sleep(0.25)
        self.probe = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.bench.client", f"{self.bot_url}/slack/events",
            "--response-base", self.standins_url, "--interval-ms", str(o.probe_interval_s * 1000),
            stdout=subprocess.PIPE, env=_child_env({"SLACK_SIGNING_SECRET": self.secret}), cwd=self.tmp)
        await _first_json_line(self.probe, "probe", 60)
        if o.profile is not None:
            spy = shutil.which("py-spy")
            if spy is None:
                raise RuntimeError("--profile needs py-spy (pip install py-spy)")
            self.profiler = await asyncio.create_subprocess_exec(
                spy, "record", "--pid", str(self.bot.pid), "--threads", "--gil", "--format", _profile_format(o.profile),
                "--output", str(o.profile), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    async def command(self, session: aiohttp.ClientSession, command: str, text: str, *, user_id: str,
                      channel_id: str, name: str) -> tuple[float, int]:
        """Send one signed command; ``(ack latency ms, HTTP status or 0)``."""
        body = slash_form(command, text, user_id=user_id, channel_id=channel_id, trigger_id=f"{name}-{self.secret[:6]}",
                          response_url=f"{self.standins_url}/response_url/{name}")
        started = time.perf_counter()
        try:
            async with session.post(f"{self.bot_url}/slack/events", data=body,
                                    headers=signed_headers(self.secret, body)) as response:
                await response.read()
                status = response.status
        except (aiohttp.ClientError, asyncio.TimeoutError):
            status = 0
        return (time.perf_counter() - started) * 1000, status

    async def stop_probe(self) -> list[list]:
        if self.probe is None:
            return []
        assert self.probe.stdout is not None
        with contextlib.suppress(ProcessLookupError):
            self.probe.send_signal(signal.SIGTERM)
        out = await asyncio.wait_for(self.probe.stdout.read(), 60)
        await self.probe.wait()
        self.probe = None
        return json.loads(out.decode().strip().splitlines()[-1])["probes"] if out.strip() else []

    async def status(self, session: aiohttp.ClientSession) -> dict:
        with contextlib.suppress(aiohttp.ClientError, ValueError):
            async with session.get(f"{self.bot_url}/api/status",
                                   headers={"Authorization": f"Bearer {self.api_token}"}) as response:
                if response.status == 200:
                    return await response.json()
        return {}

    async def close(self) -> None:
        await _stop(self.profiler, sig=signal.SIGINT, timeout_s=60)
        await _stop(self.probe)
        await _stop(self.bot, timeout_s=20)
        await _stop(self.standins)


def _profile_format(path: Path) -> str:
    return {".svg": "flamegraph", ".json": "speedscope"}.get(path.suffix.lower(), "raw")


async def run_load(options: LoadOptions, *, progress: Callable[[str], None] | None = None) -> LoadReport:
    """Run the load benchmark once (module docstring) and return its :class:`LoadReport`.

    Raises:
        ValueError: ``asks`` < 1 or a ``repo`` that is not a folder.
        RuntimeError: a process did not start, or the bot exited (the end of its log is in the message).
    """
    say = progress or (lambda _message: None)
    if options.asks < 1:
        raise ValueError(f"asks must be at least 1, got {options.asks}")
    if options.repo is not None and not options.repo.is_dir():
        raise ValueError(f"{options.repo} is not a folder")
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="sz-load-") as tmp_name:
        tmp = Path(tmp_name)
        if options.repo is not None:
            repo, questions = options.repo.resolve(), list(GENERIC_QUESTIONS)
        else:
            repo = tmp / "repo"
            say(f"writing a synthetic repository of {options.files} files")
            questions = write_repository(repo, files=options.files)
        say("building its index")
        files = await asyncio.to_thread(_build_index, repo, tmp / "index.sqlite")
        run = _Run(options, tmp, say)
        timeout = aiohttp.ClientTimeout(total=60)
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            try:
                say("starting the stand-ins, the bot (slackzilla serve) and the probe")
                await run.start(repo, session)
                await asyncio.sleep(1.0)  # idle probes
                idle_until = time.time()
                reindex_sent = None
                if options.reindex:
                    say("/sz-reindex full")
                    reindex_sent = time.time()
                    _ms, status = await run.command(session, "/sz-reindex", "full", user_id=ADMIN_USER,
                                                    channel_id="CADMIN", name="reindex")
                    if status != 200:
                        raise RuntimeError(f"/sz-reindex was answered with HTTP {status}")
                    await _wait_for(lambda s: len(s["responses"].get("reindex", [])) >= 1, run, session, 120,
                                    "the reindex to start")
                say(f"{options.asks} concurrent /sz-ask")
                asks_sent = time.time()
                acks = await asyncio.gather(*(
                    run.command(session, "/sz-ask", questions[i % len(questions)], user_id=f"U{i:05d}",
                                channel_id=f"C{i:05d}", name=f"ask-{i}") for i in range(options.asks)))
                channels = [f"C{i:05d}" for i in range(options.asks)]

                def finished(s: dict) -> bool:
                    answered = all(s["finals"].get(c) for c in channels)
                    return answered and (not options.reindex or len(s["responses"].get("reindex", [])) >= 2)

                with contextlib.suppress(TimeoutError):
                    await _wait_for(finished, run, session, options.timeout_s, "the answers and the reindex")
                load_end = time.time()
                await asyncio.sleep(SETTLE_S)
                probes = await run.stop_probe()
                summary = await run.summary(session)
                status = await run.status(session)
            finally:
                await run.close()
        if run.bot is not None and run.bot.returncode not in (0, None, -signal.SIGTERM):
            log.warning("the bot exited with %s:\n%s", run.bot.returncode, _tail(run.bot_log))
    return _report(options, files=files, acks=acks, probes=probes, summary=summary, status=status,
                   asks_sent=asks_sent, load_end=load_end, idle_until=idle_until, reindex_sent=reindex_sent,
                   load_before=load_before, channels=channels)


def _build_index(repo: Path, index_path: Path) -> int:
    from rag.engine import Engine

    engine = Engine.open(repo, index_path=index_path)
    try:
        return engine.update(full=True).files
    finally:
        engine.close()


async def _wait_for(condition: Callable[[dict], bool], run: _Run, session: aiohttp.ClientSession,
                    timeout_s: float, what: str) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        if run.bot is not None and run.bot.returncode is not None:
            raise RuntimeError(f"the bot exited (code {run.bot.returncode}):\n{_tail(run.bot_log)}")
        summary = await run.summary(session)
        if condition(summary):
            return summary
        if time.monotonic() > deadline:
            run.say(f"gave up waiting for {what} after {timeout_s:g} s")
            raise TimeoutError(what)
        await asyncio.sleep(0.25)


def _report(options: LoadOptions, *, files: int, acks: list[tuple[float, int]], probes: list[list], summary: dict,
            status: dict, asks_sent: float, load_end: float, idle_until: float, reindex_sent: float | None,
            load_before: list[float], channels: list[str]) -> LoadReport:
    loaded = [p for p in probes if asks_sent <= p[0] <= load_end]
    idle = [p for p in probes if p[0] < idle_until]
    finals = summary.get("finals", {})
    counts = [len(finals.get(c, [])) for c in channels]
    firsts = sorted(min(finals[c]) - asks_sent for c in channels if finals.get(c))
    runs = [r for r in ((status.get("reindex") or {}).get("history") or []) if r.get("trigger") == "admin"]
    last = runs[-1] if runs else {}
    reindex_s = last.get("duration_s")
    overlap = 0.0
    if reindex_sent is not None and reindex_s is not None and last.get("started_at"):
        ended = last["started_at"] + reindex_s
        last_answer = asks_sent + (firsts[-1] if firsts else 0.0)
        overlap = max(0.0, min(ended, last_answer) - max(asks_sent, last["started_at"]))
    to_model = sorted(t - asks_sent for t in summary.get("model_requests", []) if t >= asks_sent)
    answers = {
        "sent": len(channels), "answered": sum(1 for n in counts if n),
        "lost": sum(1 for n in counts if n == 0), "duplicated": sum(n - 1 for n in counts if n > 1),
        "from_model": sum(1 for c in channels if summary.get("finals_from_model", {}).get(c)),
        "memory_off": sum(1 for c in channels if summary.get("finals_memory_off", {}).get(c)),
        "p50_s": round(firsts[len(firsts) // 2], 2) if firsts else None,
        "max_s": round(firsts[-1], 2) if firsts else None,
        "model_asked_p50_s": round(to_model[len(to_model) // 2], 2) if to_model else None,
        "model_asked_max_s": round(to_model[-1], 2) if to_model else None,
    }
    return LoadReport(
        options=options, files=files,
        probes=latency_stats([p[1] for p in loaded if p[2] == 200]),
        probes_idle=latency_stats([p[1] for p in idle if p[2] == 200]),
        probe_failures=sum(1 for p in loaded if p[2] != 200),
        ask_acks=latency_stats([ms for ms, code in acks if code == 200]),
        ask_ack_failures=sum(1 for _ms, code in acks if code != 200),
        answers=answers,
        reindex={"ran": reindex_sent is not None, "ok": bool(last.get("ok")),
                 "seconds": reindex_s, "overlapped_s": round(overlap, 1)},
        window_s=load_end - asks_sent,
        load_average={"before": load_before, "after": [round(x, 2) for x in os.getloadavg()]},
        slack_calls=dict(sorted((summary.get("methods") or {}).items())),
        slowest_probes=[[round(p[0] - asks_sent, 2), p[1]] for p in sorted(loaded, key=lambda p: -p[1])[:5]],
    )
