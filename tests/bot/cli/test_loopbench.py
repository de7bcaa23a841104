"""``slackzilla bench --healthz``: /healthz is served from the loop while a real reindex runs."""
from __future__ import annotations

from bot.cli.loopbench import healthz_during_reindex


async def test_healthz_latency_is_measured_during_a_reindex(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(150):
        (repo / f"m{i}.js").write_text("".join(f"function f{i}_{j}() {{ return {j}; }}\n" for j in range(120)))
    result = await healthz_during_reindex(repo, rounds=1)
    assert set(result) == {"rounds", "requests", "reindex_s", "healthz_p50_ms", "healthz_p95_ms",
                           "healthz_p99_ms", "healthz_max_ms"}
    assert result["rounds"] == 1 and result["reindex_s"] > 0
    assert result["requests"] >= 1
    assert 0 < result["healthz_p50_ms"] <= result["healthz_p95_ms"] <= result["healthz_max_ms"]
    assert not list(repo.glob(".rag"))  # the repository was only read
