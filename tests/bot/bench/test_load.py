"""``slackzilla bench --load``: the real bot under a tiny load, end to end (figures are not checked here:
timing targets are the benchmark's own job), and the pieces it is made of."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.bench.load import latency_stats
from bot.bench.standins import ANSWER_MARKER, ModelStandIn
from bot.bench.synthrepo import write_repository
from bot.cli import cli


def test_the_load_command_drives_the_real_bot_and_counts_every_answer_once():
    result = CliRunner().invoke(cli, ["bench", "--load", "--asks", "3", "--files", "40", "--token-delay-ms", "5",
                                      "--answer-tokens", "8", "--probe-interval-ms", "50", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["asks"] == 3 and report["files"] == 40
    assert report["answers"] == {**report["answers"], "sent": 3, "answered": 3, "lost": 0, "duplicated": 0,
                                 "from_model": 3}
    assert report["reindex"]["ran"] and report["reindex"]["ok"] and report["reindex"]["seconds"] > 0
    assert report["ask_acks"]["count"] == 3 and report["ask_ack_failures"] == 0
    assert report["probes"]["count"] >= 1 and report["probes_idle"]["count"] >= 1
    assert report["probes"]["p50_ms"] <= report["probes"]["p99_ms"] <= report["probes"]["max_ms"]
    assert report["slack_calls"]["chat.postMessage"] >= 3 and report["slack_calls"]["response_url"] >= 2
    assert set(report["target"]) == {"probe_p99_ms", "probe_max_ms", "met"}


def test_latency_stats_use_nearest_rank_percentiles():
    stats = latency_stats([float(v) for v in range(100, 0, -1)])
    assert stats == {"count": 100, "p50_ms": 50.0, "p95_ms": 95.0, "p99_ms": 99.0, "max_ms": 100.0,
                     "over_1s": 0, "over_3s": 0}
    assert latency_stats([])["count"] == 0 and latency_stats([1500.0, 3500.0])["over_1s"] == 2


def test_the_synthetic_repository_is_seeded_sized_and_parseable_code(tmp_path):
    questions = write_repository(tmp_path / "a", files=120)
    again = write_repository(tmp_path / "b", files=120)
    files = sorted(p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 120 and questions == again
    assert any(f.endswith(".ts") for f in files) and any(f.endswith("README.md") for f in files)
    assert all((tmp_path / "a" / f).read_text() == (tmp_path / "b" / f).read_text() for f in files)
    with pytest.raises(ValueError, match="not an empty folder"):
        write_repository(tmp_path / "a", files=3)


def test_the_model_stand_in_streams_the_marker_first():
    words = ModelStandIn(answer_tokens=5).words()
    assert "".join(words).startswith(ANSWER_MARKER) and len(words) == len(ANSWER_MARKER.split()) + 5
