"""Hybrid retrieval (issues 7, 15): the embeddings stream, its background queue and the fusion.

Everything runs the real engine (walk → chunk → index → BM25 → vectors →
``fuse_streams`` → ``diversify``) against a real OpenAI-compatible
``/v1/embeddings`` server on 127.0.0.1 (tests/embeddings_server.py). Its
vectors are a deterministic bag of words with a small synonym map, standing in
for a sentence-embedding model: the paraphrased question below shares no word
with ``src/limits.js`` yet is close to it, because "refuse"/"body"/"large" and
"reject"/"payload"/"oversized" map to the same features.

The fusion tests build :class:`rag.search.lexical.Candidate` objects directly and
compare with z-score fusion written out by hand (weights 0.45 + 0.3 × coverage,
structure 0.5, the chunk order inside a file by RRF with k = 60). Tests marked ``xfail(strict=True)`` pin defects reported to
the lead; they start passing (and must then lose the mark) once fixed.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from embeddings_server import BagOfWords, EmbeddingsServer
from repo_helpers import write_repo
from rag.providers.embeddings import OpenAIEmbeddings
from rag.engine import Engine
from rag.errors import ProviderError
from rag.search.vector_stream import embed_key, embed_text, start_search, top_zscore
from rag.ingest.reindexer import Reindexer
from rag.search.query import analyze
from rag.search.lexical import DEFAULT_RETRIEVAL_POLICY, Candidate, fuse_streams

BOW_DIM = 512
SYNONYMS = {"refuse": "reject", "rejects": "reject", "body": "payload", "large": "oversize",
            "oversized": "oversize", "big": "oversize"}
# A description (eight topical words, none in src/limits.js): the vectors may answer it though BM25 abstains.
PARAPHRASE = "Why would the server refuse to accept a body that is far too large, and what does the caller get back then?"
# The same topic asked in four words: too short for the vectors to overrule BM25's abstention (issue 15).
SHORT_PARAPHRASE = "What makes the server refuse a body that is too large?"
LEXICAL = "How does the cache evict old entries?"
UNRELATED = "quantum entanglement of photons"
ANSWER = "src/limits.js"

LIMITS_JS = """\
// Guard for oversized uploads.
const maxPayloadBytes = 1048576;

function rejectOversize(payload) {
  if (payload.length > maxPayloadBytes) {
    const err = new Error('payload exceeds the maximum');
    err.statusCode = 413;
    throw err;
  }
  return payload;
}

module.exports = { rejectOversize, maxPayloadBytes };
"""


def _js(comment: str, name: str, args: str, body: str) -> str:
    return f"// {comment}\nfunction {name}({args}) {{\n  {body}\n}}\nmodule.exports = {{ {name} }};\n"


# Fourteen one-chunk files, one topic each (and the filler below).
REPO_FILES = {
    "README.md": "# Shop API\n\nThe server writes one log line per request to a rotating file.\n",
    "docs/deploy.md": "# Deploying\n\nBuild the Docker image and run the container behind a reverse proxy.\n",
    ANSWER: LIMITS_JS,
    "src/logger.js": _js("Rotating log destination.", "rotateLogFile", "destination", "return destination + '.1';"),
    "src/router.js": _js("Match a path against registered routes and extract params.", "matchRoute",
                         "routes, path", "return routes.find((r) => r.pattern.test(path));"),
    "src/cache.js": _js("LRU cache: evict the oldest entries when capacity is reached.", "evictOldest",
                        "entries, capacity", "while (entries.size > capacity) entries.delete(entries.keys().next().value);"),
    "src/session.js": _js("Cookie sessions signed with an HMAC.", "signCookie", "value, key",
                          "return value + '.' + key.length;"),
    "src/templates.js": _js("Render views with HTML escaping.", "escapeHtml", "text",
                            "return text.replace(/&/g, '&amp;');"),
    "src/retry.js": _js("Retry with exponential backoff and jitter.", "backoffDelay", "attempt",
                        "return Math.min(8000, 100 * 2 ** attempt);"),
    "src/metrics.js": _js("Counters and histograms for monitoring.", "observeLatency", "histogram, ms",
                          "histogram.push(ms);"),
    "src/mailer.js": _js("Send email notifications over SMTP.", "sendMail", "transport, message",
                         "return transport.deliver(message);"),
    "src/i18n.js": _js("Translate messages for the current locale.", "translate", "catalog, locale, key",
                       "return (catalog[locale] || {})[key] || key;"),
    "src/queue.js": _js("Job queue with a pool of workers.", "enqueueJob", "queue, job", "queue.push(job);"),
    "src/scheduler.js": _js("Run periodic tasks on a cron-like timetable.", "nextRun", "cron, now",
                            "return now + cron.intervalMs;"),
}
# Sixteen more one-topic files, far from every question: with thirty chunks a real outlier among the
# vector stream's neighbours stands out by more than DEFAULT_MIN_VECTOR_Z standard deviations.
FILLER_TOPICS = ["colour palette gradients", "matrix determinant solver", "calendar holiday lookup",
                 "geometry polygon area", "audio waveform sampler", "chess opening book", "weather forecast parser",
                 "recipe ingredient scaler", "planet orbit simulator", "font glyph kerning", "barcode checksum digit",
                 "music chord transposer", "garden watering timer", "poetry rhyme finder",
                 "traffic light controller", "museum ticket pricing"]
for _topic in FILLER_TOPICS:
    _a, _b, _c = _topic.split()
    REPO_FILES[f"src/extra/{_a}.js"] = _js(f"{_a.title()} {_b} {_c}.", f"{_a}{_b.title()}", _c, f"return {_c};")
# 130 one-line functions → symbol chunks 1-60, 61-120, 121-130 (neighbours merged up to
# 60 lines): an edit on line 10 touches only the first.
BIG_JS = "".join(f"function step{i}() {{ return {i}; }}\n" for i in range(1, 131))





@pytest.fixture()
def server():
    with EmbeddingsServer(embed_fn=BagOfWords(SYNONYMS), dim=BOW_DIM) as srv:
        yield srv


@pytest.fixture()
def repo(tmp_path) -> Path:
    return write_repo(tmp_path / "repo", REPO_FILES)


@pytest.fixture()
def open_engine(tmp_path):
    """``open_engine(repo, embeddings=None)``: an Engine on one shared index file, closed at teardown."""
    opened: list[Engine] = []

    def make(repo: Path, embeddings=None) -> Engine:
        engine = Engine.open(repo, index_path=tmp_path / "index.sqlite", embeddings=embeddings)
        opened.append(engine)
        return engine

    yield make
    for engine in opened:
        engine.close()


def provider(server: EmbeddingsServer, model: str = "bow-v1", **kwargs) -> OpenAIEmbeddings:
    """A provider that fails fast (no retries, short deadlines) so failure tests stay quick."""
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("request_timeout_s", 2.0)
    kwargs.setdefault("deadline_s", 3.0)
    return OpenAIEmbeddings(base_url=server.url, model=model, **kwargs)


def paths(sources) -> list[str]:
    return [s.path for s in sources]


def chunk_rows(engine: Engine) -> list[tuple[int, str, int, int, str, dict]]:
    """``(id, path, start, end, text, context)`` of every chunk; ``context`` holds the keyword
    arguments of ``embed_text``/``embed_key`` (symbol, header, heading)."""
    with engine.index.read() as conn:
        rows = conn.execute("SELECT id, path, start, end, text, symbol, header, heading FROM chunks "
                            "ORDER BY path, start").fetchall()
    return [(i, p, s, e, t, {"symbol": sym, "header": head, "heading": heading})
            for i, p, s, e, t, sym, head, heading in rows]


def embedded(path: str, text: str, context: dict) -> str:
    return embed_text(path, text, **context)


def live_keys(engine: Engine) -> set[str]:
    return {embed_key(path, text, **context) for _, path, _, _, text, context in chunk_rows(engine)}


def vector_rows(engine: Engine) -> dict[str, int]:
    with engine.index.read() as conn:
        return dict(conn.execute("SELECT model, COUNT(*) FROM chunk_vectors GROUP BY model"))


def stored_hashes(engine: Engine, model: str) -> set[str]:
    with engine.index.read() as conn:
        return {r[0] for r in conn.execute("SELECT chunk_hash FROM chunk_vectors WHERE model=?", (model,))}


def cosine(a: str, b: str) -> float:
    bow = BagOfWords(SYNONYMS)
    va, vb = bow(a, BOW_DIM), bow(b, BOW_DIM)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


# --------------------------------------------------------------------------- the fake model's premise


def test_the_paraphrase_shares_no_word_with_the_answer_but_is_near_it():
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", LIMITS_JS)}
    assert not set(analyze(PARAPHRASE).terms) & words          # BM25 has nothing to match
    answer = cosine(PARAPHRASE, embed_text(ANSWER, LIMITS_JS))
    others = {p: cosine(PARAPHRASE, embed_text(p, t)) for p, t in REPO_FILES.items() if p != ANSWER}
    assert answer > 0.3 and answer > max(others.values()) + 0.15
    # The lexical question's file is near its question; unrelated files are not (bag collisions aside).
    cache = cosine(LEXICAL, embed_text("src/cache.js", REPO_FILES["src/cache.js"]))
    rest = [cosine(LEXICAL, embed_text(p, t)) for p, t in REPO_FILES.items() if p != "src/cache.js"]
    assert cache > 0.4 and max(rest) < 0.1
    assert BagOfWords(SYNONYMS)("same text", 16).tobytes() == BagOfWords(SYNONYMS)("same text", 16).tobytes()


# --------------------------------------------------------------------------- 1. hybrid finds what BM25 misses


def test_hybrid_finds_the_file_bm25_misses(repo, open_engine, server):
    bm25 = open_engine(repo)
    bm25.update()
    assert ANSWER not in paths(bm25.retrieve(PARAPHRASE))

    hybrid = open_engine(repo, embeddings=provider(server))
    assert ANSWER not in paths(hybrid.retrieve(PARAPHRASE))      # no vectors yet: BM25 only
    report = hybrid.embed_pending()
    assert report.complete and report.planned == report.embedded == len(REPO_FILES)

    with hybrid.index.read() as conn:
        hits = hybrid.vectors.search(conn, hybrid.vectors.embed_query(PARAPHRASE), k=5)
    by_id = {row[0]: row[1] for row in chunk_rows(hybrid)}
    assert by_id[hits[0].chunk_id] == ANSWER                      # the vector stream alone ranks it first

    found = hybrid.retrieve(PARAPHRASE)
    assert ANSWER in paths(found)[:3]
    source = next(s for s in found if s.path == ANSWER)
    assert (source.start, source.end) == (1, LIMITS_JS.count("\n")) and "rejectOversize" in source.text


def test_the_search_beside_the_lexical_stage_finds_what_the_search_in_the_transaction_finds(
        repo, open_engine, server, monkeypatch):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    threads: list[str] = []
    embed = engine.vectors.embed_query
    monkeypatch.setattr(engine.vectors, "embed_query",
                        lambda q: threads.append(threading.current_thread().name) or embed(q))
    with engine.index.read() as conn:
        pending = start_search(engine.vectors, conn, PARAPHRASE, k=5)
        inline = engine.vectors.search(conn, embed(PARAPHRASE), k=5)
        assert pending.result() == inline and inline
        assert start_search(None, conn, PARAPHRASE, k=5).result() == []
    assert threads and all(name.startswith("sz-vector-search") for name in threads)  # not the caller's thread


def test_warm_loads_the_generations_vectors(repo, open_engine, server, monkeypatch):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    engine.warm()
    from rag.search import vector_stream
    monkeypatch.setattr(vector_stream, "load_vectors", lambda *a, **k: pytest.fail("loaded again"))
    assert ANSWER in paths(engine.retrieve(PARAPHRASE))[:3]   # the first question uses what warm() loaded


def test_hybrid_abstains_when_neither_stream_matches(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    before = len(server.requests)
    assert engine.retrieve(UNRELATED) == []
    assert server.requests[before]["body"]["input"] == [UNRELATED]   # the vector stream was consulted


def test_vector_neighbours_alone_do_not_overrule_abstention(repo, open_engine, server):
    """Vectors always return neighbours; only an outlier among them may answer a question BM25 abstains on."""
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    question = "Which module throttles clients that make too many requests per minute?"
    with engine.index.read() as conn:
        hits = start_search(engine.vectors, conn, question, k=DEFAULT_RETRIEVAL_POLICY.stream_pool).result()
    sims = sorted({h.similarity for h in hits}, reverse=True)
    assert sims[0] - sims[10] > 0.08   # the former margin rule (best minus 11th) would have answered
    # a question that names its topic in few words: however far its best neighbour stands out
    assert len(analyze(question).terms) < DEFAULT_RETRIEVAL_POLICY.vector_override_min_terms
    assert top_zscore(hits) >= DEFAULT_RETRIEVAL_POLICY.min_vector_z
    assert engine.retrieve(question) == []
    assert ANSWER in paths(engine.retrieve(PARAPHRASE))   # a real outlier still answers


def test_the_vectors_z_score_is_computed_only_when_it_could_overrule_an_abstention(repo, open_engine, server,
                                                                                     monkeypatch):
    from rag.search import retriever

    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    computed: list[int] = []
    monkeypatch.setattr(retriever, "top_zscore", lambda hits: computed.append(len(hits)) or top_zscore(hits))
    assert ANSWER in paths(engine.retrieve(PARAPHRASE))          # a description BM25 matches weakly: asked
    assert len(computed) == 1
    assert engine.retrieve("Where is rejectOversize defined?")  # clear lexical evidence: nothing to overrule
    assert len(computed) == 1


def test_a_vector_outlier_does_not_overrule_abstention_on_a_short_question(repo, open_engine, server):
    """Issue 15: a question of few topical words that BM25 abstains on names what it asks about; the
    chunk that stands out of the vectors' neighbours is the closest topic, not evidence of an answer."""
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    policy = DEFAULT_RETRIEVAL_POLICY
    assert len(analyze(SHORT_PARAPHRASE).terms) < policy.vector_override_min_terms <= len(analyze(PARAPHRASE).terms)
    for question in (SHORT_PARAPHRASE, PARAPHRASE):
        with engine.index.read() as conn:
            hits = start_search(engine.vectors, conn, question, k=policy.stream_pool).result()
        assert top_zscore(hits) >= policy.min_vector_z                     # both stand out of their neighbours
    assert engine.retrieve(SHORT_PARAPHRASE) == []
    assert ANSWER in paths(engine.retrieve(PARAPHRASE))


def test_vectors_only_stream_ranks_by_cosine_and_never_abstains(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    engine.retrieval_policy = replace(DEFAULT_RETRIEVAL_POLICY, streams=frozenset({"vectors"}))
    found = engine.retrieve(PARAPHRASE)
    assert paths(found)[0] == ANSWER
    assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)
    assert engine.retrieve(UNRELATED)   # neighbours, whatever they are: the vector stream alone never abstains
    engine.retrieval_policy = replace(DEFAULT_RETRIEVAL_POLICY, streams=frozenset({"lexical", "structure"}))
    assert ANSWER not in paths(engine.retrieve(PARAPHRASE))   # BM25 alone misses it (no shared word)


def test_type_filter_also_filters_vector_hits(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    assert ANSWER in paths(engine.retrieve(PARAPHRASE))
    assert set(paths(engine.retrieve(PARAPHRASE, kind="documentation"))) <= {"README.md", "docs/deploy.md"}
    assert ANSWER in paths(engine.retrieve(PARAPHRASE, kind="source"))


# --------------------------------------------------------------------------- 2. background embedding


def test_lexical_index_serves_while_embedding_runs_after_it(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    reindexer = Reindexer(engine)
    server.default_action = "wait"                     # the first /embeddings call blocks until the gate opens
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.update(record=reindexer.run(trigger="cli")))
    worker.start()
    try:
        assert server.arrived.wait(5), "embedding never started"
        assert reindexer.running and engine.generation >= 1
        requests = len(server.requests)
        assert paths(engine.retrieve(LEXICAL))[0] == "src/cache.js"   # BM25 answers meanwhile
        assert len(server.requests) == requests                        # no vectors yet → question not embedded
    finally:
        server.gate.set()
        worker.join(10)
    record = outcome["record"]
    assert record.ok and record.error is None and record.stats.added == len(REPO_FILES)
    n = len(REPO_FILES)
    assert set(record.embeddings) == {"model", "planned", "embedded", "seconds", "error", "rejected"}
    assert {k: v for k, v in record.embeddings.items() if k != "seconds"} == {
        "model": "openai:bow-v1", "planned": n, "embedded": n, "error": None, "rejected": 0}
    assert isinstance(record.embeddings["seconds"], float) and record.embeddings["seconds"] >= 0
    assert sorted(server.texts()) == sorted(embedded(p, t, c) for _, p, _, _, t, c in chunk_rows(engine))
    assert vector_rows(engine) == {"openai:bow-v1": n}


def test_a_run_reports_the_embedding_progress_of_its_chunks(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    files, embedding = [], []
    record = Reindexer(engine).run(trigger="cli", progress=lambda d, t: files.append((d, t)),
                                   embed_progress=lambda d, t: embedding.append((d, t)))
    n = record.embeddings["planned"]
    assert record.ok and n > 0 and files[-1] == (len(REPO_FILES), len(REPO_FILES))
    assert embedding and embedding[-1] == (n, n) and all(t == n for _, t in embedding)
    assert [d for d, _ in embedding] == sorted(d for d, _ in embedding)   # never backwards


def test_unchanged_chunks_are_never_re_embedded_and_an_edit_re_embeds_only_its_chunks(
        tmp_path, open_engine, server):
    repo = write_repo(tmp_path / "repo", {**REPO_FILES, "src/big.js": BIG_JS})
    engine = open_engine(repo, embeddings=provider(server))
    reindexer = Reindexer(engine)
    first = reindexer.run(trigger="cli")
    total = len(chunk_rows(engine))
    assert total == len(REPO_FILES) + 3
    assert (first.embeddings["planned"], first.embeddings["embedded"]) == (total, total)

    sent = len(server.texts())
    second = reindexer.run(trigger="cli")
    assert second.ok and (second.stats.added, second.stats.changed, second.stats.removed) == (0, 0, 0)
    assert (second.embeddings["planned"], second.embeddings["embedded"], second.embeddings["error"]) == (0, 0, None)
    assert len(server.texts()) == sent                    # nothing sent at all

    lines = BIG_JS.splitlines(keepends=True)
    lines[9] = "function stepTen() { return 'edited'; }\n"
    (repo / "src/big.js").write_text("".join(lines), encoding="utf-8")
    third = reindexer.run(trigger="cli")
    assert third.stats.changed == 1
    edited = [(p, t, c) for _, p, s, e, t, c in chunk_rows(engine) if p == "src/big.js" and s <= 10 <= e]
    assert len(edited) == 1                               # only the 1-60 chunk holds line 10
    assert (third.embeddings["planned"], third.embeddings["embedded"]) == (1, 1)
    assert server.texts()[sent:] == [embedded(*edited[0])]
    assert stored_hashes(engine, "openai:bow-v1") == live_keys(engine)   # the old window's vector is gone


def test_without_a_provider_nothing_is_embedded(repo, open_engine):
    engine = open_engine(repo)
    record = Reindexer(engine).run(trigger="cli")
    assert record.ok and record.embeddings is None and engine.embed_pending() is None
    assert vector_rows(engine) == {}


def test_reindexer_with_embedding_off_leaves_vectors_for_later(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    record = Reindexer(engine, embed=False).run(trigger="cli")
    assert record.ok and record.embeddings is None and server.requests == []
    assert engine.vectors.pending() == len(REPO_FILES)


# --------------------------------------------------------------------------- 3. model change


def test_a_model_change_re_embeds_everything_and_prunes_the_old_model(repo, open_engine, server):
    old = open_engine(repo, embeddings=provider(server, model="bow-v1"))
    old.update()
    assert old.embed_pending().embedded == len(REPO_FILES)
    assert vector_rows(old) == {"openai:bow-v1": len(REPO_FILES)}

    sent = len(server.texts())
    new = open_engine(repo, embeddings=provider(server, model="bow-v2"))
    assert new.vectors.pending() == len(REPO_FILES)
    report = new.embed_pending()
    assert (report.model, report.planned, report.embedded, report.error) == (
        "openai:bow-v2", len(REPO_FILES), len(REPO_FILES), None)
    assert sorted(server.texts()[sent:]) == sorted(embedded(p, t, c) for _, p, _, _, t, c in chunk_rows(new))
    assert {r["body"]["model"] for r in server.requests[-report.batches:]} == {"bow-v2"}
    assert vector_rows(new) == {"openai:bow-v2": len(REPO_FILES)}
    assert ANSWER in paths(new.retrieve(PARAPHRASE)[:3])

    # The old model's vectors are gone: an engine still on it answers BM25-only, without error.
    assert old.vectors.pending() == len(REPO_FILES)
    assert paths(old.retrieve(LEXICAL))[0] == "src/cache.js"

    # A deleted file's vectors are pruned on the next run; nothing else is re-embedded.
    (repo / "src/mailer.js").unlink()
    new.update()
    after = new.embed_pending()
    assert (after.planned, after.embedded) == (0, 0)
    assert vector_rows(new) == {"openai:bow-v2": len(REPO_FILES) - 1}
    assert stored_hashes(new, "openai:bow-v2") == live_keys(new)


# --------------------------------------------------------------------------- 4. provider failure


def test_provider_down_while_embedding_is_recorded_and_bm25_keeps_working(repo, open_engine, server):
    bm25 = open_engine(repo)
    engine = open_engine(repo, embeddings=provider(server))
    reindexer = Reindexer(engine)
    server.default_action = "status:500"
    record = reindexer.run(trigger="cli")
    assert record.ok and record.error is None and record.stats.files == len(REPO_FILES)
    assert record.embeddings["embedded"] == 0 and record.embeddings["planned"] == len(REPO_FILES)
    assert "HTTP 500" in record.embeddings["error"]
    assert vector_rows(engine) == {}
    found = engine.retrieve(LEXICAL)
    assert paths(found)[0] == "src/cache.js"
    assert [(s.path, s.start, s.score) for s in found] == [(s.path, s.start, s.score) for s in bm25.retrieve(LEXICAL)]

    server.default_action = "ok"                              # the next run tries again
    retry = reindexer.run(trigger="cli")
    assert (retry.embeddings["planned"], retry.embeddings["embedded"], retry.embeddings["error"]) == (
        len(REPO_FILES), len(REPO_FILES), None)


def test_a_failure_mid_run_keeps_the_finished_batches(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    server.script.extend(["ok", "status:503"])
    report = engine.embed_pending(batch_size=4)
    assert (report.embedded, report.batches) == (4, 1) and "HTTP 503" in report.error
    assert vector_rows(engine) == {"openai:bow-v1": 4}
    resumed = engine.embed_pending(batch_size=4)
    assert (resumed.planned, resumed.embedded, resumed.error) == (len(REPO_FILES) - 4, len(REPO_FILES) - 4, None)


@pytest.mark.parametrize("outage", ["status:500", "hang", "stopped"])
def test_a_query_while_the_provider_is_down_falls_back_to_bm25(repo, open_engine, server, outage):
    engine = open_engine(repo, embeddings=provider(server, request_timeout_s=0.3, deadline_s=0.6))
    engine.update()
    assert engine.embed_pending().complete
    expected = [(s.path, s.start, s.score) for s in open_engine(repo).retrieve(LEXICAL)]
    if outage == "stopped":
        server.close()
    else:
        server.default_action = outage

    with pytest.raises(ProviderError):
        engine.vectors.embed_query(LEXICAL)
    with engine.index.read() as conn:   # the vector stream's failure is logged and yields no hits
        assert start_search(engine.vectors, conn, LEXICAL, k=5).result() == []
        assert start_search(None, conn, LEXICAL, k=5).result() == []
    started = time.monotonic()
    found = engine.retrieve(LEXICAL)
    assert time.monotonic() - started < 2.0
    assert [(s.path, s.start, s.score) for s in found] == expected
    assert ANSWER not in paths(engine.retrieve(PARAPHRASE))   # no vectors at query time: BM25's answer


def test_a_repeated_question_is_embedded_once_and_survives_an_outage(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    sent = len(server.texts())
    first = engine.retrieve(PARAPHRASE)
    assert server.texts()[sent:] == [PARAPHRASE]
    server.close()                                            # provider gone: the cached vector still serves
    again = engine.retrieve(PARAPHRASE)
    assert ANSWER in paths(again)[:3]
    assert [(s.path, s.start, s.score) for s in again] == [(s.path, s.start, s.score) for s in first]


# --------------------------------------------------------------------------- 5. fusion math


def cand(ident: int, path: str, score: float, *, lexical: bool = True, prior: float = 1.0) -> Candidate:
    return Candidate(ident, path, 1, 10, "js", "source", None, f"chunk {ident}", bm25=score, score=score,
                     lexical=lexical, prior=prior)


def zscores(scores: dict[str, float], depth: int = 10) -> dict[str, float]:
    """Hand-written z-normalisation (mean and population spread of the best ``depth`` scores)."""
    top = sorted(scores.values(), reverse=True)[:depth]
    mean = sum(top) / len(top)
    std = (sum((v - mean) ** 2 for v in top) / len(top)) ** 0.5
    return {k: (v - mean) / std for k, v in scores.items()}


def test_policy_defaults_are_the_issue_values():
    p = DEFAULT_RETRIEVAL_POLICY
    assert (p.rrf_k, p.lexical_base, p.lexical_slope, p.structure_weight) == (60, 0.45, 0.3, 0.5)
    assert p.lexical_base + 0.5 * p.lexical_slope == pytest.approx(0.6)   # issue 7's 0.6 at coverage 0.5
    assert p.stream_pool >= 20 and p.zscore_depth == 10
    assert p.streams == {"lexical", "structure", "vectors"} and p.min_vector_z == 2.0
    assert p.vector_override_min_terms == 2 * p.abstain_min_terms


def test_the_question_s_lexical_coverage_moves_the_fused_order():
    # BM25 ranks a.js first, the vectors rank b.js first: a question BM25 covers well follows BM25,
    # a paraphrase it hardly covers follows the vectors.
    def fused(coverage: float) -> list[str]:
        cands = [cand(1, "a.js", 0.9), cand(2, "b.js", 0.8), cand(3, "c.js", 0.1)]
        return [c.path for c in fuse_streams(cands, {2: 0.6, 1: 0.5, 3: 0.1}, policy=DEFAULT_RETRIEVAL_POLICY,
                                             coverage=coverage)]

    assert fused(0.9) == ["a.js", "b.js", "c.js"]
    assert fused(0.1) == ["b.js", "a.js", "c.js"]


def test_fuse_streams_matches_hand_computed_z_scores():
    # Lexical (BM25 + signals): chunks 1 a.js 0.9, 2 b.js 0.8, 3 a.js 0.7, 4 c.js 0.5, 5 d.js 0.2.
    cands = [cand(1, "a.js", 0.9), cand(2, "b.js", 0.8), cand(3, "a.js", 0.7), cand(4, "c.js", 0.5),
             cand(5, "d.js", 0.2)]
    # Vectors: chunk 4, an id that is not a candidate (ignored), 3 and 2. Structure: d.js 0.5, e.js (no candidate).
    vectors = {4: 0.8, 99: 0.95, 3: 0.6, 2: 0.3}
    coverage = 0.5
    fused = fuse_streams(cands, vectors, policy=DEFAULT_RETRIEVAL_POLICY, structure={"d.js": 0.5, "e.js": 1.0},
                         coverage=coverage)
    w = 0.45 + 0.3 * coverage
    lex = zscores({"a.js": 0.9, "b.js": 0.8, "c.js": 0.5, "d.js": 0.2})
    vec = zscores({"c.js": 0.8, "a.js": 0.6, "b.js": 0.3})
    raw = {p: w * lex[p] + (1 - w) * vec.get(p, min(vec.values())) for p in lex}
    raw["d.js"] += 0.5 * 0.5                                   # structure_weight × bonus
    low, high = min(raw.values()), max(raw.values())
    file_score = {p: 0.5 + 0.5 * (v - low) / (high - low) for p, v in raw.items()}
    # Chunk order inside a file: RRF of the chunk rankings — bm25 1..5, vectors 4, 3, 2.
    chunk_rrf = {1: w / 61, 2: w / 62 + (1 - w) / 63, 3: w / 63 + (1 - w) / 62, 4: w / 64 + (1 - w) / 61,
                 5: w / 65}
    path_of = {1: "a.js", 2: "b.js", 3: "a.js", 4: "c.js", 5: "d.js"}
    expected = {i: file_score[path_of[i]] + 0.01 * chunk_rrf[i] for i in path_of}
    assert [c.id for c in fused] == sorted(expected, key=lambda i: -expected[i])
    for c in fused:
        assert c.score == pytest.approx(expected[c.id], rel=1e-12)
    assert "e.js" not in {c.path for c in fused}               # fusion reorders; it never invents candidates


def test_the_vector_stream_carries_the_intent_priors():
    # The test file is the vectors' nearest chunk, but tests are demoted (prior 0.55) as in the lexical stream.
    cands = [cand(1, "lib/a.js", 0.5), cand(2, "test/a.test.js", 0.5 * 0.55, prior=0.55), cand(3, "lib/b.js", 0.1)]
    fused = fuse_streams(cands, {2: 0.7, 1: 0.6, 3: 0.2}, policy=DEFAULT_RETRIEVAL_POLICY, coverage=0.0)
    assert [c.path for c in fused] == ["lib/a.js", "test/a.test.js", "lib/b.js"]


def test_a_hard_boost_stays_first_in_the_lexical_order():
    # z.js and y.js are named in the question (lexical scores ≥ HARD_BOOST); the vectors prefer y.js and a.js.
    cands = [cand(10, "z.js", 10.9), cand(11, "y.js", 10.5), cand(1, "a.js", 0.9), cand(2, "b.js", 0.8)]
    fused = fuse_streams(cands, {2: 0.2, 1: 0.9, 11: 0.95}, policy=DEFAULT_RETRIEVAL_POLICY,
                         structure={"z.js": 10.5, "y.js": 10.5})
    assert [c.id for c in fused] == [10, 11, 1, 2]
    assert fused[1].score > fused[2].score
    assert fused[0].score == pytest.approx(4.0 + 10.9 / 100) and fused[1].score == pytest.approx(4.0 + 10.5 / 100)
    assert fused[2].score <= 1.01


def test_the_stream_pool_bounds_the_chunks_and_unranked_candidates_drop_out():
    policy = replace(DEFAULT_RETRIEVAL_POLICY, stream_pool=2)
    cands = [cand(1, "a.js", 0.9), cand(2, "b.js", 0.8), cand(3, "c.js", 0.5), cand(4, "d.js", 0.1),
             cand(10, "z.js", 10.2)]
    fused = fuse_streams(cands, {3: 0.5}, policy=policy)
    # bm25 pool: 1, 2; vectors: 3; 4 is in neither pool; z.js keeps its hard boost without any stream.
    assert [c.id for c in fused] == [10, 1, 2, 3]
    assert all(c.score > 0 for c in fused)


def test_a_vector_only_candidate_gets_no_lexical_credit():
    cands = [cand(1, "a.js", 0.9), cand(2, "b.js", 0.0, lexical=False), cand(3, "c.js", 0.5)]
    fused = {c.path: c.score for c in fuse_streams(cands, {2: 0.6, 3: 0.5, 1: 0.1},
                                                   policy=DEFAULT_RETRIEVAL_POLICY, coverage=0.5)}
    # b.js gets the lexical stream's lowest z (c.js's), though its lexical score of 0 is lower still.
    w = 0.6
    lex, vec = zscores({"a.js": 0.9, "c.js": 0.5}), zscores({"b.js": 0.6, "c.js": 0.5, "a.js": 0.1})
    raw = {"a.js": w * lex["a.js"] + (1 - w) * vec["a.js"], "b.js": w * lex["c.js"] + (1 - w) * vec["b.js"],
           "c.js": w * lex["c.js"] + (1 - w) * vec["c.js"]}
    assert sorted(fused, key=lambda p: -fused[p]) == sorted(raw, key=lambda p: -raw[p])
    assert 0.5 <= min(fused.values()) < max(fused.values()) <= 1.01 and min(raw.values()) < 0


def test_hybrid_does_not_pad_a_clean_answer_with_unrelated_files(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    assert paths(open_engine(repo).retrieve(LEXICAL)) == ["src/cache.js"]
    # Every other file has cosine < 0.1 to the question (checked in the premise test) and no BM25 match.
    assert paths(engine.retrieve(LEXICAL)) == ["src/cache.js"]


def test_a_stop_request_ends_the_embedding_pass_and_keeps_the_lexical_update(repo, open_engine, server):
    for i in range(40):  # two embedding batches of 32
        (repo / "src" / f"extra{i}.js").write_text(f"export const extra{i} = {i};\n")
    engine = open_engine(repo, embeddings=provider(server))
    reindexer = Reindexer(engine)
    server.script.extend(["wait"])  # the first embedding batch waits until the test releases it

    def stop_when_embedding_starts() -> None:
        server.arrived.wait(10)
        reindexer.request_stop()  # as the bot does at shutdown
        server.gate.set()

    threading.Thread(target=stop_when_embedding_starts, daemon=True).start()
    record = reindexer.run(trigger="cli")
    assert record.ok and record.stats.files == len(REPO_FILES) + 40  # the lexical update was already committed
    assert record.embeddings["planned"] > 32
    assert record.embeddings["embedded"] == 32  # the batch in flight is kept, none after the stop
    assert len(server.requests) == 1


def test_a_stop_request_before_an_update_stops_it_and_writes_nothing(repo, open_engine, server):
    engine = open_engine(repo, embeddings=provider(server))
    reindexer = Reindexer(engine)
    reindexer.request_stop()
    record = reindexer.run(trigger="cli")
    assert record.ok is False and "stopped for shutdown" in record.error
    assert engine.generation == 0 and server.texts() == []


# --------------------------------------------------------------------------- the chunk order inside a file


def _function(name: str, args: str, lines: list[str]) -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return f"function {name}({args}) {{\n{body}}}\n\n"


# Four handlers that share the question's words, then the guard that answers it in words the lexical
# stream does not match (the fake model's synonyms); each function is longer than half a chunk, so
# each is a chunk of its own.
SERVER_JS = "".join(
    _function(f"handle{part}", "req, res", [f"// server request ({part.lower()})" for _ in range(32)])
    for part in ("Routing", "Headers", "Cookies", "Logging")
) + _function("guardUploads", "upload", [f"if (payload.length > limit) rejectOversize(payload); // reject oversize payload {i}"
                               for i in range(32)]) + "module.exports = { handleRouting };\n"
SERVER_QUESTION = "How does the server handle a request whose body is too large, and refuse it?"


def test_a_file_s_best_chunk_by_cosine_reaches_the_context_pool(tmp_path, open_engine, server):
    from rag.context.packer import DEFAULT_CONTEXT_DEPTH

    repo = write_repo(tmp_path / "server-repo", {**REPO_FILES, "src/server.js": SERVER_JS})
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()
    rows = [row for row in chunk_rows(engine) if row[1] == "src/server.js"]
    guard = next(row for row in rows if "guardUploads" in row[4])
    assert len(rows) == 5
    with engine.index.read() as conn:   # the premise: the vectors rank the guard first in its file
        sims = engine.vectors.chunk_similarities(conn, SERVER_QUESTION, [row[0] for row in rows])
    assert max(sims, key=sims.get) == guard[0]

    def pool_starts(policy) -> list[int]:
        engine.retriever.policy = policy
        found = engine.retrieve(SERVER_QUESTION, limit=32, depth=DEFAULT_CONTEXT_DEPTH)
        assert found and found[0].path == "src/server.js"
        return [s.start for s in found if s.path == "src/server.js"]

    # Ranked by the repository-wide streams, the four lexical handlers fill the best file's four places.
    assert guard[2] not in pool_starts(replace(DEFAULT_RETRIEVAL_POLICY, within_files=0))
    # Ranked inside the file, the vectors' first chunk takes one of them.
    assert guard[2] in pool_starts(DEFAULT_RETRIEVAL_POLICY)


# Four documentation pages written in PARAPHRASE's words: BM25 and the vectors alike rank them above
# the implementation, which uses few of them (issue 15, rag.search.source_lead).
DOC_PAGES = {
    f"docs/{name}.md": f"# {title}\n\nThe server will refuse a body that is far too large: the caller gets back an "
                       f"error when the body is too large to accept ({name}).\n"
    for name, title in (("limits", "Limits"), ("uploads", "Uploads"), ("errors", "Errors"), ("faq", "FAQ"))
}


def test_the_implementation_is_among_the_leading_files_when_documentation_matches_better(
        tmp_path, open_engine, server):
    repo = write_repo(tmp_path / "doc-heavy", {**REPO_FILES, **DOC_PAGES})
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()

    def files(policy) -> list[str]:
        engine.retriever.policy = policy
        return list(dict.fromkeys(paths(engine.retrieve(PARAPHRASE, limit=8))))

    fused = files(replace(DEFAULT_RETRIEVAL_POLICY, lead_min_source=0))
    assert fused[:4] == sorted(DOC_PAGES, key=fused.index) and ANSWER in fused   # the premise
    led = files(DEFAULT_RETRIEVAL_POLICY)
    assert ANSWER in led[:4], led
    assert led[0] == fused[0]   # the best documentation page keeps the first place


def test_bm25_alone_keeps_its_order_with_the_implementation_after_the_documentation(tmp_path, open_engine):
    # The implementation shares a few of the question's words: BM25 lists it after the pages.
    files = {**REPO_FILES, **DOC_PAGES, ANSWER: "// The server refuses oversized uploads: the caller gets back a 413 error.\n" + LIMITS_JS}
    engine = open_engine(write_repo(tmp_path / "doc-heavy", files))
    engine.update()
    order = list(dict.fromkeys(paths(engine.retrieve(PARAPHRASE, limit=8))))
    assert order[:4] == sorted(DOC_PAGES, key=order.index) and ANSWER in order[4:]   # the quota would move it
    engine.retriever.policy = replace(DEFAULT_RETRIEVAL_POLICY, lead_min_source=0)
    assert list(dict.fromkeys(paths(engine.retrieve(PARAPHRASE, limit=8)))) == order


def test_the_source_file_a_leading_page_names_moves_up(tmp_path, open_engine, server):
    # One page names the implementation's function as code, as documentation does (rag.search.doc_links).
    pages = {**DOC_PAGES, "docs/limits.md": DOC_PAGES["docs/limits.md"] + "\nThe check is `rejectOversize`.\n"}
    repo = write_repo(tmp_path / "doc-heavy", {**REPO_FILES, **pages})
    engine = open_engine(repo, embeddings=provider(server))
    engine.update()
    engine.embed_pending()

    def files(**changes) -> list[str]:
        engine.retriever.policy = replace(DEFAULT_RETRIEVAL_POLICY, lead_min_source=0, **changes)
        return list(dict.fromkeys(paths(engine.retrieve(PARAPHRASE, limit=8))))

    unlinked = files(doc_link_share=0.0)
    assert unlinked[:4] == sorted(DOC_PAGES, key=unlinked.index) and ANSWER in unlinked   # the premise
    assert "docs/limits.md" in unlinked[:3]
    linked = files()
    assert linked.index(ANSWER) < unlinked.index(ANSWER), (unlinked, linked)
    assert linked[0] == unlinked[0]
