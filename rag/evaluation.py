"""Retrieval evaluation and benchmarking (``slackzilla eval`` / ``slackzilla bench``).

Metrics follow ``shared/eval/score.py`` exactly: a question is answered at rank
r when the r-th *distinct* returned path is one of its gold paths; R@1 and R@5
are shares of answerable questions answered within rank 1 / 5; MRR@10 is the
mean of 1/r (0 beyond rank 10); ``none`` questions (empty gold) only count
toward the abstain rate (share of them with no paths returned).
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import resource
import shutil
import stat
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from rag.engine import Engine
from rag.ingest.prepare import RACY_WINDOW_NS
from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY
from rag.store import queries as index_queries

__all__ = ["load_jsonl", "load_eval_set", "rank_of", "score_results", "run_eval", "run_bench", "scratch_copy",
           "BenchResult"]


def load_jsonl(path: Path) -> list[dict]:
    """Parse a JSON-lines file (blank lines skipped, a UTF-8 byte-order mark dropped). Raises ``ValueError`` with the
    line number."""
    return [value for _, value in _numbered_jsonl(path)]


def _numbered_jsonl(path: Path) -> list[tuple[int, object]]:
    """``(line number, value)`` of each non-blank line of a JSON-lines file (:func:`load_jsonl`)."""
    out = []
    with open(path, encoding="utf-8-sig", errors="strict") as fh:
        try:
            lines = fh.readlines()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    out.append((number, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
                except RecursionError:
                    raise ValueError(f"{path}:{number}: not valid JSON (nested too deeply)") from None
    return out


EVAL_SET_KEYS = ("id", "corpus", "kind", "question", "gold")
"""The keys every question of an eval set has (``shared/eval/README.md``; ``lines`` is optional and unused here)."""


def load_eval_set(path: Path) -> list[dict]:
    """The questions of an eval set (``shared/eval`` format: one JSON object per line), checked.

    Each question has a non-blank string ``id`` (unique in the file), ``corpus`` (the name of a
    folder directly inside the corpora directory: no ``/``, not ``.`` or ``..``), ``kind`` and
    ``question``, and ``gold``, a list of non-blank path strings: empty exactly when ``kind`` is
    ``none``. The file holds at least one question.

    Raises:
        ValueError: ``FILE:LINE: what is wrong`` (or ``FILE: …`` for the file as a whole).
    """
    questions = []
    first_line: dict[str, int] = {}
    for number, q in _numbered_jsonl(path):
        where = f"{path}:{number}"
        if not isinstance(q, dict):
            raise ValueError(f"{where}: expected a JSON object")
        for key in EVAL_SET_KEYS:
            if key not in q:
                raise ValueError(f"{where}: missing key {key!r}")
        for key in ("id", "corpus", "kind", "question"):
            if not isinstance(q[key], str) or not q[key].strip():
                raise ValueError(f"{where}: {key!r} must be a non-blank string, got {_shown(q[key])}")
        corpus = q["corpus"]
        if corpus in (".", "..") or "/" in corpus or "\\" in corpus or "\x00" in corpus:
            raise ValueError(f"{where}: 'corpus' must be the name of a folder in the corpora directory "
                             f"(no path), got {_shown(corpus)}")
        gold = q["gold"]
        if not isinstance(gold, list) or not all(isinstance(g, str) and g.strip() for g in gold):
            raise ValueError(f"{where}: 'gold' must be a list of paths (strings), got {_shown(gold)}")
        if not gold and q["kind"] != "none":
            raise ValueError(f"{where}: 'gold' is empty; only a question of kind 'none' has no gold paths")
        if gold and q["kind"] == "none":
            raise ValueError(f"{where}: a question of kind 'none' has no gold paths ('gold': [])")
        if q["id"] in first_line:
            raise ValueError(f"{where}: duplicate id {_shown(q['id'])} (first on line {first_line[q['id']]})")
        first_line[q["id"]] = number
        questions.append(q)
    if not questions:
        raise ValueError(f"{path}: no questions (one JSON object per line)")
    return questions


def _shown(value: object, limit: int = 60) -> str:
    """``value`` as JSON for an error line, shortened to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def distinct_paths(sources: Iterable) -> list[str]:
    """Distinct paths of sources (dicts or objects with ``path``), in order."""
    seen: dict[str, None] = {}
    for s in sources:
        seen.setdefault(s["path"] if isinstance(s, dict) else s.path, None)
    return list(seen)


def rank_of(gold: list[str], paths: list[str]) -> int | None:
    """1-based rank of the first gold path among distinct ``paths`` (``None`` if absent)."""
    wanted = set(gold)
    return next((i + 1 for i, p in enumerate(dict.fromkeys(paths)) if p in wanted), None)


def score_results(questions: list[dict], answers: dict[str, list[str]]) -> dict:
    """``{"kinds": {kind: {"n", "r1", "r5", "mrr10"}}, "all": {...}, "abstain": {"n", "rate"}}``."""
    rows: dict[str, list[tuple[bool, bool, float]]] = defaultdict(list)
    abstain: list[bool] = []
    for q in questions:
        paths = answers.get(q["id"], [])
        if not q["gold"]:
            abstain.append(not paths)
            continue
        r = rank_of(q["gold"], paths)
        row = (r == 1, r is not None and r <= 5, 1 / r if r and r <= 10 else 0.0)
        rows[q["kind"]].append(row)
        rows["ALL"].append(row)

    def summary(rs: list[tuple[bool, bool, float]]) -> dict:
        n = len(rs)
        return {"n": n, **{k: round(sum(col) / n, 3) for k, col in zip(("r1", "r5", "mrr10"), zip(*rs))}}

    return {
        "kinds": {k: summary(v) for k, v in sorted(rows.items()) if k != "ALL"},
        "all": summary(rows["ALL"]) if rows["ALL"] else {"n": 0},
        "abstain": {"n": len(abstain), "rate": round(sum(abstain) / len(abstain), 3) if abstain else None},
    }


def run_eval(
    set_path: Path,
    corpora_dir: Path,
    *,
    limit: int = 10,
    index_dir: Path | None = None,
    results_out: Path | None = None,
    embeddings=None,
    reranker=None,
    pool_policy=None,
    progress=None,
    streams: frozenset[str] | None = None,
) -> dict:
    """Index each corpus named in the set (in ``index_dir``, reused across runs, or a temp dir) and score retrieval.

    With ``embeddings`` (an :class:`~rag.providers.embeddings.EmbeddingProvider`) the
    chunks are embedded first and retrieval is hybrid; vectors stored in a
    reused ``index_dir`` are not recomputed. With ``reranker`` (a
    :class:`~rag.providers.rerank.Reranker`) retrieval reorders its fused top candidates
    as ``slackzilla retrieve`` does; ``pool_policy`` sets the indexing workers. ``progress(message)`` is told
    each stage. ``streams`` (a subset of :data:`rag.search.lexical.STREAMS`) runs only
    those retrieval streams (``{"lexical", "structure"}``: BM25 + structure; ``{"vectors"}``:
    the vector ranking alone); ``None`` runs every configured one. Returns the
    :func:`score_results` dict plus ``"questions"``, ``"seconds"``, ``"hybrid"``, ``"streams"`` and
    ``"reranker"``.

    Raises:
        FileNotFoundError: a corpus directory is missing (checked before anything is indexed).
        ValueError: the set is not a valid eval set (:func:`load_eval_set`), an unknown stream, or ``vectors``
            asked for without ``embeddings``.
    """
    if streams is not None:
        from rag.search.lexical import STREAMS

        unknown = set(streams) - STREAMS
        if unknown or not streams:
            raise ValueError(f"unknown retrieval streams {sorted(unknown)}; choose from {sorted(STREAMS)}")
        if "vectors" in streams and embeddings is None:
            raise ValueError("the vectors stream needs an embeddings provider (EMBEDDINGS_URL or the local model)")
    questions = load_eval_set(set_path)
    by_corpus: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        by_corpus[q["corpus"]].append(q)
    for corpus in by_corpus:  # all checked before any is indexed
        if not (corpora_dir / corpus).is_dir():
            raise FileNotFoundError(f"corpus directory not found: {corpora_dir / corpus} "
                                    "(fetch it with shared/eval/fetch_corpora.sh)")
    started = time.perf_counter()
    answers: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="sz-eval-") as tmp:
        base = Path(index_dir or tmp)
        for corpus, qs in by_corpus.items():
            root = corpora_dir / corpus
            policies = {} if streams is None else {
                "retrieval_policy": dataclasses.replace(DEFAULT_RETRIEVAL_POLICY, streams=frozenset(streams))}
            if pool_policy is not None:
                policies["pool_policy"] = pool_policy
            engine = Engine.open(root, index_path=base / f"{corpus}.sqlite", embeddings=embeddings, reranker=reranker,
                                 **policies)
            try:
                engine.update(full=True)
                if embeddings is not None:
                    if progress:
                        progress(f"{corpus}: embedding {engine.vectors.pending()} chunks")
                    report = engine.embed_pending()
                    if report is not None and report.error:
                        raise RuntimeError(f"embedding {corpus} failed: {report.error}")
                for q in qs:
                    answers[q["id"]] = distinct_paths(engine.retrieve(q["question"], limit=limit))
            finally:
                engine.close()
    if results_out:
        with open(results_out, "w", encoding="utf-8") as fh:
            for q in questions:
                fh.write(json.dumps({"id": q["id"], "paths": answers.get(q["id"], [])}) + "\n")
    result = score_results(questions, answers)
    result["questions"] = len(questions)
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["hybrid"] = embeddings.name if embeddings is not None else None
    result["streams"] = sorted(streams) if streams is not None else None
    result["reranker"] = reranker.name if reranker is not None else None
    return result


@dataclass(slots=True)
class BenchResult:
    """``slackzilla bench --json`` shape (seconds, milliseconds, megabytes)."""

    files: int
    chunks: int
    bytes: int
    full_index_s: float
    noop_update_s: float
    one_file_update_s: float
    query_p50_ms: float
    query_p95_ms: float
    peak_rss_mb: float
    parse_s: float = 0.0
    embed_full_s: float | None = None
    embed_one_file_s: float | None = None
    embed_chunks_per_s: float | None = None
    hybrid_query_p50_ms: float | None = None
    hybrid_query_p95_ms: float | None = None
    workers_peak_rss_mb: float | None = None
    phase_peak_rss_mb: dict | None = None
    reranker: str | None = None
    scale: dict | None = None
    copies: int = 1
    isolated_one_file_update_s: float | None = None
    not_copied: dict | None = None

    def to_json(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in
                ((f, getattr(self, f)) for f in self.__slots__) if v is not None}


BENCH_QUESTIONS = (
    "How is the configuration loaded?", "Where are errors handled?", "What does the main entry point export?",
    "How are options validated?", "Where is the request parsed?", "How do I run the tests?",
    "Which function formats the output?", "How are plugins registered?", "Where is the cache invalidated?",
    "What happens when the stream closes?",
)


def _percentiles(times: list[float]) -> tuple[float, float]:
    """``(p50, p95)`` of ``times`` (nearest rank)."""
    times = sorted(times)
    if not times:
        return 0.0, 0.0
    return statistics.median(times), times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]


def _timed_queries(engine: Engine, qs: list[str]) -> list[float]:
    out = []
    for q in qs:
        t0 = time.perf_counter()
        engine.retrieve(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


UPDATE_RUNS = 5
"""The no-op and one-file update figures are the median of this many updates (one update's time varied
2× between runs on the shared 2-core machine)."""


def _timed_update(update: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    update()
    return time.perf_counter() - t0


def _one_file_updates(file: Path, update: Callable[[], object], *, tag: str = "") -> float:
    """Median seconds of :data:`UPDATE_RUNS` calls of ``update``, each after a comment line is appended to ``file``."""
    runs = []
    for n in range(UPDATE_RUNS):
        with open(file, "a", encoding="utf-8") as fh:
            fh.write(f"\n// bench edit {tag}{n}\n")
        runs.append(_timed_update(update))
    return statistics.median(runs)


SCRATCH_SKIPPED_DIRS = (".git", ".rag", "node_modules")
"""Folders :func:`scratch_copy` leaves out wherever they are (the walk never indexes them)."""


def scratch_copy(repo: Path, dest: Path) -> dict[str, str]:
    """Copy ``repo`` to ``dest`` (which must not exist) for :func:`run_bench`; returns ``{path: reason}`` of what was
    left out besides :data:`SCRATCH_SKIPPED_DIRS` (repository-relative POSIX paths).

    Symbolic links are copied as links. What the walk would not read is left out as it skips it
    (:mod:`rag.ingest.walk`'s reasons): FIFOs, sockets and devices (``special_file``: copying a FIFO
    fails, and reading a device may never end), and files or folders that cannot be read
    (``unreadable``). Everything else is copied, ignored files included, so the copy's index is built
    exactly as the repository's would be.

    Raises:
        OSError: ``repo`` itself cannot be read, or ``dest`` cannot be written.
    """
    left_out: dict[str, str] = {}
    skip_dirs = shutil.ignore_patterns(*SCRATCH_SKIPPED_DIRS)

    def relative(path: str) -> str:
        return Path(os.path.relpath(path, repo)).as_posix()

    def ignore(directory: str, names: list[str]) -> set[str]:
        ignored = set(skip_dirs(directory, names))
        for name in names:
            if name in ignored:
                continue
            path = os.path.join(directory, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                left_out[relative(path)] = "unreadable"
                ignored.add(name)
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                left_out[relative(path)] = "special_file"
                ignored.add(name)
        return ignored

    try:
        shutil.copytree(repo, dest, symlinks=True, ignore=ignore)
    except shutil.Error as exc:  # what could not be copied, each (source, destination, reason); the rest was
        for source, _dest, _why in exc.args[0]:
            left_out.setdefault(relative(source), "unreadable")
    return left_out


def run_bench(repo: Path, *, queries: int = 200, progress: Callable[[str], None] | None = None,
              embeddings=None, reranker=None, pool_policy=None, scale_chunks: int = 0, copies: int = 1,
              isolated_update: Callable[[Engine], Callable[..., object]] | None = None) -> BenchResult:
    """Benchmark indexing and querying on a scratch copy of ``repo`` (the original is never touched).

    Measures: full index, no-op update and one-file update (the largest source file edited in the
    copy; each the median of :data:`UPDATE_RUNS` updates), and ``queries`` retrievals mixing generic questions with
    identifiers and file names sampled from the index (seeded, repeatable).
    With ``embeddings`` (a provider) it also times embedding every chunk, the
    re-embedding after the one-file edit, and hybrid query latency. With ``reranker``
    every query is reranked, as ``slackzilla retrieve`` does. ``pool_policy`` sets the
    indexing workers. With ``scale_chunks`` it then times queries on a synthetic index of
    that many chunks (:func:`rag.scale_bench.run_scale_bench`, as ``"scale"``). With ``copies`` > 1 the
    scratch tree holds that many copies of ``repo`` (``copy-1/`` … ``copy-N/``) and everything is
    measured on it (issue 20's "ten-times tree": ``copies=10``). ``isolated_update`` builds the update hook
    ``slackzilla serve`` runs updates through from the engine (``bot.isolated_update.ProcessUpdate``, kept
    out of this module): the one-file update is then also timed through it (``isolated_one_file_update_s``,
    the median of :data:`UPDATE_RUNS` after one update that starts its process, which a bot does once).
    Peak RSS is the process's high-water mark (``getrusage``), model included;
    ``phase_peak_rss_mb`` the peak of each phase (:class:`rag.memory.PeakRss`), and
    ``workers_peak_rss_mb`` the largest indexing worker's.
    """
    from rag.ingest.pool import DEFAULT_POOL_POLICY
    from rag.memory import PeakRss, children_peak_mb

    say = progress or (lambda _msg: None)
    policy = pool_policy or DEFAULT_POOL_POLICY
    phases: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sz-bench-") as tmp:
        copy = Path(tmp) / "repo"
        say(f"copying {repo} to a scratch directory")
        not_copied: dict[str, str] = {}
        for dest in [copy / f"copy-{n}" for n in range(1, copies + 1)] if copies > 1 else [copy]:
            not_copied.update(scratch_copy(repo, dest))
        if not_copied:
            shown = [f"{path} ({reason})" for path, reason in list(not_copied.items())[:10]]
            more = f" and {len(not_copied) - 10} more" if len(not_copied) > 10 else ""
            say(f"not copied (the index skips these too): {', '.join(shown)}{more}")
        # A copy's files all have a fresh inode change time, so the index would take them for files written
        # while it looked ("racily clean", rag.ingest.prepare.stat_unchanged) and read every one again on each
        # update; a repository's files are older than that, so the copy is left to age past the window first.
        time.sleep(RACY_WINDOW_NS / 1e9 + 0.1)
        engine = Engine.open(copy, index_path=Path(tmp) / "index.sqlite", reranker=reranker, pool_policy=policy)
        try:
            say("full index")
            with PeakRss() as peak:
                t0 = time.perf_counter()
                stats = engine.update(full=True)
                full_s = time.perf_counter() - t0
            phases["full_index"] = peak.mb
            say("no-op update")
            with PeakRss() as peak:
                noop_s = statistics.median(_timed_update(engine.update) for _ in range(UPDATE_RUNS))
            phases["noop_update"] = peak.mb
            rows = index_queries.files_by_size(engine.index.conn)
            total_bytes = sum(size for _, size in rows)
            target = next((p for p, _ in rows if p.endswith((".js", ".ts", ".py"))), rows[0][0] if rows else None)
            one_s = 0.0
            isolated_one_s = None
            if target:
                say(f"one-file update ({target})")
                with PeakRss() as peak:
                    one_s = _one_file_updates(copy / target, engine.update)
                phases["one_file_update"] = peak.mb
                if isolated_update is not None:
                    say(f"one-file update through the bot's update process ({target})")
                    hook = isolated_update(engine)
                    try:
                        hook()  # starts the process, as a bot does once
                        isolated_one_s = _one_file_updates(copy / target, hook, tag="through the bot ")
                    finally:
                        close = getattr(hook, "close", None)
                        if close is not None:
                            close()
            rng = random.Random(7)
            words = index_queries.chunk_symbols(engine.index.conn, limit=500)
            paths = [p for p, _ in rows]
            qs = list(BENCH_QUESTIONS)
            while len(qs) < queries and paths:
                p = rng.choice(paths)
                qs.append(rng.choice([f"What does {p} do?", f"Where is {Path(p).stem} used?",
                                      f"How does {Path(p).stem.replace('-', ' ')} work?"] +
                                     ([f"Where is {rng.choice(words)} defined?"] if words else [])))
            say(f"{len(qs[:queries])} queries")
            with PeakRss() as peak:
                p50, p95 = _percentiles(_timed_queries(engine, qs[:queries]))
            phases["queries"] = peak.mb
            result = BenchResult(stats.files, stats.chunks, total_bytes, full_s, noop_s, one_s, p50, p95, 0.0,
                                 stats.parse_seconds, copies=copies)
            result.workers_peak_rss_mb = children_peak_mb() or None
            result.not_copied = not_copied or None
            result.isolated_one_file_update_s = isolated_one_s
            result.reranker = reranker.name if reranker is not None else None
            if embeddings is not None:
                hybrid = Engine.open(copy, index_path=Path(tmp) / "index.sqlite", embeddings=embeddings,
                                     reranker=reranker, pool_policy=policy)
                try:
                    say(f"embedding {hybrid.vectors.pending()} chunks with {embeddings.name}")
                    with PeakRss() as peak:
                        t0 = time.perf_counter()
                        report = hybrid.embed_pending()
                        result.embed_full_s = time.perf_counter() - t0
                    phases["embed"] = peak.mb
                    if report.error:
                        raise RuntimeError(f"embedding failed: {report.error}")
                    if result.embed_full_s > 0:
                        result.embed_chunks_per_s = report.embedded / result.embed_full_s
                    if target:
                        with open(copy / target, "a", encoding="utf-8") as fh:
                            fh.write("\n// second bench edit\n")
                        hybrid.update()
                        t0 = time.perf_counter()
                        hybrid.embed_pending()
                        result.embed_one_file_s = time.perf_counter() - t0
                    hybrid.retrieve("warm up the model")
                    say(f"{len(qs[:queries])} hybrid queries")
                    with PeakRss() as peak:
                        result.hybrid_query_p50_ms, result.hybrid_query_p95_ms = _percentiles(
                            _timed_queries(hybrid, qs[:queries]))
                    phases["hybrid_queries"] = peak.mb
                finally:
                    hybrid.close()
            if scale_chunks:
                from rag.scale_bench import run_scale_bench

                result.scale = run_scale_bench(engine, work_dir=Path(tmp), questions=qs[:queries], chunks=scale_chunks,
                                               embeddings=embeddings, reranker=reranker, progress=say)
            result.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
            result.phase_peak_rss_mb = {phase: round(mb, 1) for phase, mb in phases.items()}
            return result
        finally:
            engine.close()
