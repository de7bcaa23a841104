"""Text and game commands (case, count, roll, random, 8ball, rps), run through the real registry."""
from __future__ import annotations

import pytest

from command_helpers import assert_usage, run
from commands import build_registry
from commands.eightball import ANSWERS
from commands.rps import outcome


@pytest.fixture(scope="module")
def registry():
    return build_registry()


# case / count -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("upper hello World", "HELLO WORLD"),
        ("lower Hello WORLD", "hello world"),
        ("title don't STOP me", "Don't Stop Me"),
        ("camel get HTTP response", "getHttpResponse"),
        ("snake getHTTPResponse now", "get_http_response_now"),
        ("kebab some_var.Name2Value", "some-var-name2-value"),
        ("CAMEL foo-bar_baz", "fooBarBaz"),
    ],
)
async def test_case_styles(registry, text, expected):
    assert (await run(registry, "case", text)).code == expected


@pytest.mark.parametrize("text, message", [("", None), ("upper", "style and the text"), ("shout hi", "Unknown case"), ("snake !!!", "no letters")])
async def test_case_bad(registry, text, message):
    assert_usage(await run(registry, "case", text), "case", message)


async def test_count(registry):
    result = await run(registry, "count", "héllo  world\nsecond line")
    assert result.data == {"characters": 24, "characters_no_spaces": 20, "words": 4, "lines": 2, "bytes": 25}
    assert ("Words", "4") in result.fields


async def test_count_empty(registry):
    assert_usage(await run(registry, "count", "   "), "count", "Give the text to count")


# roll / random / 8ball / rps ----------------------------------------------------------------

async def test_roll_notation_and_bounds(registry):
    for _ in range(20):
        result = await run(registry, "roll", "3d6+2")
        assert not result.ephemeral
        assert len(result.data["rolls"]) == 3 and all(1 <= r <= 6 for r in result.data["rolls"])
        assert result.data["total"] == sum(result.data["rolls"]) + 2
    assert (await run(registry, "roll")).data["notation"] == "1d6"
    assert (await run(registry, "roll", "D20 - 1")).data["notation"] == "1d20-1"


@pytest.mark.parametrize(
    "text, message",
    [("101d6", "between 1 and 100 dice"), ("1d1", "between 2 and 1000 sides"), ("1d1001", "between 2 and 1000 sides"),
     ("2d6+10001", "modifier"), ("two dice", "dice notation")],
)
async def test_roll_bad(registry, text, message):
    assert_usage(await run(registry, "roll", text), "roll", message)


async def test_random_range(registry):
    values = {(await run(registry, "random", "1 3")).data["value"] for _ in range(40)}
    assert values <= {1, 2, 3} and len(values) > 1
    assert (await run(registry, "random", "-5 -5")).data["value"] == -5
    default = await run(registry, "random")
    assert default.data["min"] == 1 and default.data["max"] == 100 and not default.ephemeral


@pytest.mark.parametrize(
    "text, message",
    [("10 1", "must not be larger"), ("a b", "whole numbers"), ("5", "both a minimum and a maximum"),
     ("1 10000000000000", "between -1,000,000,000,000")],
)
async def test_random_bad(registry, text, message):
    assert_usage(await run(registry, "random", text), "random", message)


async def test_eightball(registry):
    result = await run(registry, "8ball", "Will the build pass?")
    assert result.data["answer"] in ANSWERS and not result.ephemeral
    assert len(ANSWERS) == 20
    assert_usage(await run(registry, "8ball"), "8ball", "yes-or-no question")


@pytest.mark.parametrize("text, player", [("rock", "rock"), ("P", "paper"), ("scissors", "scissors")])
async def test_rps(registry, text, player):
    result = await run(registry, "rps", text)
    assert result.data["player"] == player
    assert result.data["outcome"] == outcome(player, result.data["bot"])


def test_rps_rules():
    assert [outcome("rock", b) for b in ("rock", "paper", "scissors")] == ["draw", "lose", "win"]
    assert outcome("paper", "rock") == "win" and outcome("scissors", "paper") == "win"


async def test_rps_bad(registry):
    assert_usage(await run(registry, "rps", ""), "rps", "Choose rock, paper or scissors")
