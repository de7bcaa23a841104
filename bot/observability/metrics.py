"""The bot's counters and latencies: JSON for ``/api/metrics`` and ``getMetrics``, Prometheus text for ``/metrics``.

Each :class:`Metrics` owns its own prometheus-client ``CollectorRegistry``, so
tests get a fresh state per app. Metric names (``slackzilla_commands``,
``slackzilla_command_seconds``, ``slackzilla_asks``, ``slackzilla_tokens``,
``slackzilla_reindex``, ``slackzilla_feedback``, ``slackzilla_feedback_current``,
``slackzilla_slack_delivery_failures``, ``slackzilla_slack_answers_lost``,
``slackzilla_slack_retries``, ``slackzilla_slack_shed``) are a contract with dashboards.
"""
from __future__ import annotations

import collections
import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from bot.observability.feedback import FEEDBACK_VOTES

__all__ = ["DEFAULT_LATENCY_WINDOW", "LATENCY_BUCKETS_S", "Metrics", "percentile"]

#: Latency samples kept per command for the percentiles (a sliding window).
DEFAULT_LATENCY_WINDOW = 1000
#: Histogram buckets in seconds: slash commands are milliseconds, asks are seconds.
LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


def percentile(samples: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of ``samples``; ``None`` when empty.

    Nearest-rank is the textbook definition (NIST e-Handbook 7.2.5.2): the value at
    rank ``ceil(q/100 * n)`` of the sorted samples; no interpolation.
    """
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, -(-q * len(ordered) // 100))
    return ordered[int(rank) - 1]


class Metrics:
    """Counters and latencies, as JSON (``snapshot``) and Prometheus text (``prometheus_text``).

    Latency percentiles (p50/p95/p99, milliseconds) come from the last
    ``DEFAULT_LATENCY_WINDOW`` samples per command; Prometheus gets histograms.
    """

    def __init__(self, *, window: int = DEFAULT_LATENCY_WINDOW) -> None:
        self.registry = CollectorRegistry()
        self._lock = threading.Lock()
        self._window = window
        self._latencies: dict[str, collections.deque[float]] = {}
        self._counts: dict[str, dict[str, int]] = {}
        self._asks = {"total": 0, "failed": 0, "declined": 0}
        self._tokens = {"input": 0, "output": 0, "total": 0}
        self._feedback: dict[str, int] = {vote: 0 for vote in FEEDBACK_VOTES}
        self._reindex = {"runs": 0, "busy_refusals": 0}
        self._state_failures: dict[str, int] = {}
        self._state_available: bool | None = None
        self._slack = {"delivery_failures": {}, "answers_lost": 0, "lost_reasons": {}, "retries": {}, "shed": {}}
        self._commands_total = Counter(
            "slackzilla_commands", "Slash commands handled.", ["command", "result"], registry=self.registry
        )
        self._command_seconds = Histogram(
            "slackzilla_command_seconds", "Slash command latency.", ["command"],
            buckets=LATENCY_BUCKETS_S, registry=self.registry,
        )
        self._asks_total = Counter("slackzilla_asks", "Questions answered.", ["result"], registry=self.registry)
        self._tokens_total = Counter("slackzilla_tokens", "Model tokens used.", ["kind"], registry=self.registry)
        self._reindex_gauge = Gauge("slackzilla_reindex", "Index updates: runs and refusals while one ran.",
                                    ["kind"], registry=self.registry)
        self._feedback_total = Counter("slackzilla_feedback", "Answer feedback votes.", ["vote"], registry=self.registry)
        self._feedback_current = Gauge("slackzilla_feedback_current", "Current answer feedback votes.", ["vote"],
                                       registry=self.registry)
        self._state_failures_total = Counter("slackzilla_state_failures",
                                             "State store calls that failed (the bot went on without memory).",
                                             ["kind"], registry=self.registry)
        self._state_up = Gauge("slackzilla_state_up", "1 when the last state store call succeeded.",
                               registry=self.registry)
        self._repositories: dict[str, dict] = {}
        self._repo_up = Gauge("slackzilla_repository_up", "1 when the repository serves (its index opened).",
                              ["repo"], registry=self.registry)
        self._repo_index = Gauge("slackzilla_repository_index", "A repository's index: files, chunks, documents, "
                                 "generation.", ["repo", "kind"], registry=self.registry)
        self._slack_failures_total = Counter(
            "slackzilla_slack_delivery_failures", "Steps of an answer's delivery that Slack refused (then the next "
            "way was tried).", ["step", "reason"], registry=self.registry)
        self._slack_lost_total = Counter("slackzilla_slack_answers_lost",
                                         "Answers that no way of posting delivered.", ["reason"],
                                         registry=self.registry)
        self._slack_retries_total = Counter("slackzilla_slack_retries", "Slack calls retried (429, 5xx, "
                                            "connection errors).", ["method", "reason"], registry=self.registry)
        self._slack_shed_total = Counter("slackzilla_slack_shed", "Progress edits and stream calls skipped to keep "
                                         "within Slack's rate limits.", ["method"], registry=self.registry)

    def record_slack_delivery_failure(self, step: str, reason: str) -> None:
        """Count one refused delivery step (``edit``, ``reply``, ``response_url`` …) and Slack's ``reason``."""
        with self._lock:
            key = f"{step}:{reason}"
            self._slack["delivery_failures"][key] = self._slack["delivery_failures"].get(key, 0) + 1
        self._slack_failures_total.labels(step, reason).inc()

    def record_answer_lost(self, reason: str) -> None:
        """Count one answer that every way of posting refused; ``reason`` is the last refusal."""
        with self._lock:
            self._slack["answers_lost"] += 1
            self._slack["lost_reasons"][reason] = self._slack["lost_reasons"].get(reason, 0) + 1
        self._slack_lost_total.labels(reason).inc()

    def record_slack_retry(self, method: str, reason: str) -> None:
        """Count one retry of ``method`` (``http_429``, ``http_500``, a connection error's type)."""
        with self._lock:
            key = f"{method}:{reason}"
            self._slack["retries"][key] = self._slack["retries"].get(key, 0) + 1
        self._slack_retries_total.labels(method, reason).inc()

    def record_slack_shed(self, method: str) -> None:
        """Count one sheddable call of ``method`` skipped for the rate-limit budget."""
        with self._lock:
            self._slack["shed"][method] = self._slack["shed"].get(method, 0) + 1
        self._slack_shed_total.labels(method).inc()

    def record_state_failure(self, kind: str) -> None:
        """Count one state store call of ``kind`` that failed (``claim``, ``turns``, ``votes`` …)."""
        with self._lock:
            self._state_failures[kind] = self._state_failures.get(kind, 0) + 1
            self._state_available = False
        self._state_failures_total.labels(kind).inc()
        self._state_up.set(0)

    def set_state_available(self, available: bool) -> None:
        """Mirror whether the state store answers now."""
        with self._lock:
            self._state_available = available
        self._state_up.set(1 if available else 0)

    def set_feedback_current(self, counts: dict[str, int]) -> None:
        """The current votes as the state store counts them (every replica's, across restarts)."""
        with self._lock:
            self._feedback = {vote: int(counts.get(vote, 0)) for vote in FEEDBACK_VOTES}
            current = dict(self._feedback)
        for name, count in current.items():
            self._feedback_current.labels(name).set(count)

    def record_command(self, command_id: str, seconds: float, *, ok: bool) -> None:
        """Count one command run taking ``seconds`` (wall clock, handler only)."""
        with self._lock:
            window = self._latencies.setdefault(command_id, collections.deque(maxlen=self._window))
            window.append(seconds)
            counts = self._counts.setdefault(command_id, {"count": 0, "failed": 0})
            counts["count"] += 1
            counts["failed"] += 0 if ok else 1
        self._commands_total.labels(command_id, "ok" if ok else "error").inc()
        self._command_seconds.labels(command_id).observe(seconds)

    def record_ask(self, *, ok: bool, input_tokens: int = 0, output_tokens: int = 0, declined: bool = False) -> None:
        """Count one answered question and the model tokens it used (summed over rounds).

        ``declined``: the model answered that the repository does not document the answer
        (:mod:`rag.answer.citations`); counted apart so operators see how often the bot has no answer.
        """
        result = "error" if not ok else "declined" if declined else "ok"
        with self._lock:
            self._asks["total"] += 1
            self._asks["failed"] += 0 if ok else 1
            self._asks["declined"] += 1 if result == "declined" else 0
            for kind, amount in (("input", input_tokens), ("output", output_tokens)):
                if amount > 0:
                    self._tokens[kind] += amount
                    self._tokens["total"] += amount
                    self._tokens_total.labels(kind).inc(amount)
        self._asks_total.labels(result).inc()

    def record_feedback(self, vote: str, *, previous: str | None = None) -> None:
        """Count one 👍/👎 vote (``up`` or ``down``); ``previous`` is the same user's earlier
        vote on the same answer, which this one replaces.

        The JSON counts are current votes (a changed vote moves from one count to the
        other; the same vote twice counts once). Prometheus gets
        ``slackzilla_feedback_total{vote}`` (votes cast, monotonic) and
        ``slackzilla_feedback_current{vote}`` (current votes).

        Raises:
            ValueError: ``vote`` is not ``up`` or ``down``.
        """
        if vote not in FEEDBACK_VOTES:
            raise ValueError(f"vote must be one of {FEEDBACK_VOTES}, got {vote!r}")
        if previous == vote:
            return
        with self._lock:
            self._feedback[vote] = self._feedback.get(vote, 0) + 1
            if previous in FEEDBACK_VOTES:
                self._feedback[previous] = max(0, self._feedback.get(previous, 0) - 1)
            current = dict(self._feedback)
        self._feedback_total.labels(vote).inc()
        for name, count in current.items():
            self._feedback_current.labels(name).set(count)

    def set_reindex(self, *, runs: int, busy_refusals: int) -> None:
        """Mirror the reindexer's own counts (it is the one place that knows every run)."""
        with self._lock:
            self._reindex = {"runs": runs, "busy_refusals": busy_refusals}
        self._reindex_gauge.labels("runs").set(runs)
        self._reindex_gauge.labels("busy_refusals").set(busy_refusals)

    def set_repositories(self, rows: list[dict]) -> None:
        """Mirror the per-repository status (``BotContext.repositories_status()`` rows: ``name``, ``ok``,
        ``files``, ``chunks``, ``documents``, ``generation``) as ``slackzilla_repository_up{repo}`` and
        ``slackzilla_repository_index{repo, kind}``."""
        kinds = ("files", "chunks", "documents", "generation")
        with self._lock:
            self._repositories = {row["name"]: {"ok": bool(row.get("ok")), **{k: row.get(k) for k in kinds}}
                                  for row in rows}
        for row in rows:
            self._repo_up.labels(row["name"]).set(1 if row.get("ok") else 0)
            for kind in kinds:
                if isinstance(row.get(kind), int):
                    self._repo_index.labels(row["name"], kind).set(row[kind])

    def snapshot(self) -> dict:
        """``{"commands": {id: {count, failed, p50_ms, p95_ms, p99_ms}}, "asks", "tokens", "reindex", "feedback",
        "state": {"available", "failures": {kind: n}}, "slack": {"delivery_failures": {"step:reason": n},
        "answers_lost", "lost_reasons": {reason: n}, "retries": {"method:reason": n}, "shed": {method: n}},
        "repositories": {name: {ok, files, chunks, documents, generation}}}``."""
        with self._lock:
            commands = {}
            for command_id, counts in sorted(self._counts.items()):
                samples = list(self._latencies.get(command_id, ()))
                commands[command_id] = {
                    **counts,
                    **{f"p{q}_ms": _ms(percentile(samples, q)) for q in (50, 95, 99)},
                }
            return {
                "commands": commands,
                "asks": dict(self._asks),
                "tokens": dict(self._tokens),
                "reindex": dict(self._reindex),
                "feedback": dict(self._feedback),
                "state": {"available": self._state_available, "failures": dict(self._state_failures)},
                "slack": {name: dict(value) if isinstance(value, dict) else value
                          for name, value in self._slack.items()},
                "repositories": {name: dict(row) for name, row in self._repositories.items()},
            }

    def prometheus_text(self) -> bytes:
        """The Prometheus text exposition of this instance's registry."""
        return generate_latest(self.registry)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)
