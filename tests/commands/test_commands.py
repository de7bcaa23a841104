"""Every built-in command, good and bad input, run through the real registry."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import time
import uuid

import pytest

from command_helpers import assert_usage, run
from commands import CommandResult, CommandServices, build_registry
from rag.errors import ProviderError, UserError
from rag.ingest.reindexer import ReindexBusyError, RunRecord


@pytest.fixture(scope="module")
def registry():
    return build_registry()


async def _status() -> dict:
    return {"version": "0.1.0", "uptime_s": 12.5, "index": {"generation": 3, "age_s": None}, "scheduler": True}


class FakeReindexer:
    """What /sz-reindex needs of rag.ingest.reindexer.Reindexer: ``run_async`` and ``clock``.

    ``busy``: raise ReindexBusyError (started by ``UOTHER`` 12 s ago); ``error``: the run fails.
    """

    def __init__(self, *, busy: bool = False, error: str | None = None) -> None:
        self.calls: list[tuple[bool, str | None]] = []
        self.busy, self.error = busy, error

    def clock(self) -> float:
        return 1000.0

    async def run_async(self, *, full=False, trigger, user=None, on_start=None):
        assert trigger == "admin"
        if self.busy:
            raise ReindexBusyError(trigger="schedule", user="UOTHER", started_at=988.0)
        self.calls.append((full, user))
        record = RunRecord(id="r1", trigger=trigger, started_at=990.0, user=user, full=full)
        if on_start is not None:
            await on_start(record)
        record.duration_s, record.stats.added, record.stats.files, record.stats.chunks = 1.25, 2, 3, 9
        record.ok, record.error = self.error is None, self.error
        return record


async def _ask(question: str) -> CommandResult:
    return CommandResult(text=f"answer to {question}", ephemeral=False)


class FakeScoping:
    """What /sz-repo needs of bot.scoping.Scoping: ``describe`` and ``bind`` (repositories api and web)."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}

    async def describe(self, channel_id):
        current = self.bound.get(channel_id, "api")
        return {"current": current, "source": "channel" if channel_id in self.bound else "default", "default": "api",
                "repositories": [{"name": "api", "default": True, "ok": True, "error": None, "web_url": None},
                                 {"name": "web", "default": False, "ok": False, "error": "gone", "web_url": None}]}

    async def bind(self, channel_id, name, *, user_id):
        if name not in ("api", "web"):
            return {"ok": False, "error": f"There is no repository called {name!r}."}
        previous, self.bound[channel_id] = self.bound.get(channel_id, "api"), name
        return {"ok": True, "repo": name, "previous": previous, "cleared": False}


SERVICES = CommandServices(ask=_ask, reindexer=FakeReindexer(), status=_status, repos=FakeScoping())

# (command, good input, bad input) for every built-in command.
EVERY_COMMAND = [
    ("ask", "how are requests routed?", ""),
    ("help", "hash", "hash calc"),
    ("ping", "", "extra"),
    ("status", "", "extra"),
    ("hash", "sha256 abc", "sha256"),
    ("base64", "encode hi", "decode !!!"),
    ("uuid", "2", "11"),
    ("token", "16", "7"),
    ("calc", "1 + 2", "1 +"),
    ("unix", "0", "not a date"),
    ("case", "upper abc", "shout abc"),
    ("count", "a b c", ""),
    ("roll", "2d6", "0d6"),
    ("random", "1 6", "6 1"),
    ("8ball", "Will it ship?", ""),
    ("rps", "rock", "lizard"),
    ("reindex", "full", "partial"),
    ("repo", "", "unset api"),
]


def test_table_covers_every_registered_command(registry):
    assert {row[0] for row in EVERY_COMMAND} == {spec.id for spec in registry.all()}


@pytest.mark.parametrize("command_id, good, bad", EVERY_COMMAND)
async def test_every_command_good_and_bad_input(registry, command_id, good, bad):
    ok = await run(registry, command_id, good, is_admin=True, services=SERVICES)
    assert ok.ok, ok.text
    json.dumps(ok.to_json())  # every result is JSON-serialisable
    assert_usage(await run(registry, command_id, bad, is_admin=True, services=SERVICES), command_id)


async def test_repo_lists_binds_for_admins_only_and_refuses_unknown_names(registry):
    services = CommandServices(repos=FakeScoping())
    listed = await run(registry, "repo", "", services=services)
    assert "asks about *api*" in listed.text and ("web", "unavailable: gone") in listed.fields
    refused = await run(registry, "repo", "set web", channel_id="C1", services=services)
    assert not refused.ok and "restricted to admins" in refused.text
    bound = await run(registry, "repo", "set web", channel_id="C1", is_admin=True, services=services)
    assert bound.ok and not bound.ephemeral and "now asks about *web* (was api)" in bound.text
    unknown = await run(registry, "repo", "set nope", channel_id="C1", is_admin=True, services=services)
    assert not unknown.ok and "no repository called 'nope'" in unknown.text


# ask ----------------------------------------------------------------------------------------

async def test_ask_passes_the_question_to_the_service(registry):
    result = await run(registry, "ask", "  where is auth?  ", services=SERVICES)
    assert result.text == "answer to where is auth?" and not result.ephemeral


async def test_ask_without_an_engine_says_so(registry):
    result = await run(registry, "ask", "where is auth?")
    assert not result.ok and "not configured to answer" in result.text


@pytest.mark.parametrize("error", [UserError("The index is empty: run /sz-reindex."), ProviderError("The model timed out.")])
async def test_ask_shows_engine_errors(registry, error):
    async def failing(question):
        raise error

    result = await run(registry, "ask", "q", services=CommandServices(ask=failing))
    assert not result.ok and result.text == str(error)


# help ---------------------------------------------------------------------------------------

async def test_help_lists_only_what_a_non_admin_may_run(registry):
    result = await run(registry, "help")
    assert result.ok and result.ephemeral
    listed = {entry["id"] for entry in result.data["commands"]}
    assert listed == {spec.id for spec in registry.visible_to(is_admin=False)}
    assert "reindex" not in listed and "/sz-reindex" not in result.text
    assert "`/sz-hash <algorithm> <text>" in result.text


async def test_help_shows_admin_commands_to_admins(registry):
    result = await run(registry, "help", is_admin=True)
    assert "reindex" in {entry["id"] for entry in result.data["commands"]}
    assert "`/sz-reindex [NAME|all] [full]`" in result.text


async def test_help_for_one_command(registry):
    result = await run(registry, "help", "/sz-calc")
    assert result.title == "/sz-calc"
    assert ("Usage", "/sz-calc <expression>") in result.fields
    assert result.data["command"]["ai_safe"] is True and result.data["command"]["admin_only"] is False


async def test_help_for_admin_command(registry):
    refused = await run(registry, "help", "reindex")
    assert not refused.ok and refused.text == "/sz-reindex is restricted to admins."
    shown = await run(registry, "help", "reindex", is_admin=True)
    assert shown.ok and ("Access", "admins only") in shown.fields


async def test_help_for_unknown_command_suggests(registry):
    result = await run(registry, "help", "hsh")
    assert_usage(result, "help", "There is no command called 'hsh'. Did you mean /sz-hash?")


# ping / status ------------------------------------------------------------------------------

async def test_ping(registry):
    assert (await run(registry, "ping")).text == "Pong!"
    assert_usage(await run(registry, "ping", "now"), "ping", "takes no arguments")


async def test_status_fields(registry):
    result = await run(registry, "status", services=SERVICES)
    assert result.fields == [
        ("version", "0.1.0"),
        ("uptime", "12s"),
        ("index: generation", "3"),
        ("index: age", "n/a"),
        ("scheduler", "yes"),
    ]
    assert result.data["index"]["generation"] == 3


def test_status_values_read_their_units():
    from commands.status import format_field

    assert format_field("uptime_s", 3725.2) == "1h 2m"
    assert format_field("started_at", 0) == "1970-01-01 00:00:00 UTC"
    assert format_field("history", [{"id": 1}, {"id": 2}]) == "2 records"
    assert format_field("generation", 3) == "3"


async def test_status_without_a_source(registry):
    result = await run(registry, "status")
    assert not result.ok and "not available" in result.text


# hash ---------------------------------------------------------------------------------------

KNOWN_DIGESTS = {
    "md5": "900150983cd24fb0d6963f7d28e17f72",
    "sha1": "a9993e364706816aba3e25717850c26c9cd0d89d",
    "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    "sha3-256": "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
}


@pytest.mark.parametrize("algorithm, expected", KNOWN_DIGESTS.items())
async def test_hash_known_vectors(registry, algorithm, expected):
    result = await run(registry, "hash", f"{algorithm} abc")
    assert result.ok and result.code == expected
    assert "abc" not in result.text


@pytest.mark.parametrize(
    "algorithm, hashlib_name",
    [("sha384", "sha384"), ("sha512", "sha512"), ("sha3-224", "sha3_224"), ("SHA3_384", "sha3_384"),
     ("sha3-512", "sha3_512"), ("blake2b", "blake2b"), ("blake2s", "blake2s"), ("SHA-256", "sha256")],
)
async def test_hash_every_algorithm(registry, algorithm, hashlib_name):
    result = await run(registry, "hash", f"{algorithm} hello wörld")
    assert result.code == hashlib.new(hashlib_name, "hello wörld".encode()).hexdigest()
    assert ("Input", f"{len('hello wörld'.encode())} bytes") in result.fields


@pytest.mark.parametrize("text", ["", "sha256", "whirlpool secret-value", "pbkdf2"])
async def test_hash_bad_input(registry, text):
    result = await run(registry, "hash", text)
    assert_usage(result, "hash")
    assert "secret-value" not in result.text and "whirlpool" not in result.text


async def test_pbkdf2_reproducible_from_shown_salt_and_hides_password(registry):
    password = "correct horse battery"
    result = await run(registry, "hash", f"pbkdf2 sha256 1000 {password}")
    assert result.ok
    salt = result.data["salt"]
    assert re.fullmatch(r"[0-9a-f]{32}", salt)
    expected = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), 1000).hex()
    assert result.code == expected == result.data["hash"]
    assert ("Iterations", "1000") in result.fields and ("Salt (hex)", salt) in result.fields
    assert password not in json.dumps(result.to_json())
    again = await run(registry, "hash", f"pbkdf2 sha256 1000 {password}")
    assert again.data["salt"] != salt and again.code != result.code


@pytest.mark.parametrize(
    "text, message",
    [
        ("pbkdf2 sha256 0 pw", "between 1 and 1,000,000"),
        ("pbkdf2 sha256 1000001 pw", "between 1 and 1,000,000"),
        ("pbkdf2 sha256 many pw", "whole number"),
        ("pbkdf2 md5 1000 pw", "digest must be one of"),
        ("pbkdf2 sha256 1000", "needs a digest, an iteration count and a password"),
    ],
)
async def test_pbkdf2_bad_input(registry, text, message):
    assert_usage(await run(registry, "hash", text), "hash", message)


# base64 -------------------------------------------------------------------------------------

async def test_base64_round_trip(registry):
    encoded = await run(registry, "base64", "encode hello wörld")
    assert encoded.code == base64.b64encode("hello wörld".encode()).decode()
    decoded = await run(registry, "base64", f"DECODE {encoded.code}")
    assert decoded.code == "hello wörld"


async def test_base64_decode_accepts_url_safe_and_missing_padding(registry):
    raw = "ü?>~"  # standard alphabet would need + and /
    token = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    assert "-" in token or "_" in token
    assert (await run(registry, "base64", f"decode {token}")).code == raw


async def test_base64_non_utf8_is_shown_as_hex(registry):
    result = await run(registry, "base64", "decode /w==")
    assert result.code == "ff" and result.data == {"hex": "ff", "utf8": False}


@pytest.mark.parametrize(
    "text, message",
    [("decode a", "impossible for base64"), ("decode ab$c", "outside the base64 alphabet"), ("decode ==", "no data"),
     ("encode", "Give the text to encode"), ("rot13 abc", "Start with `encode` or `decode`"), ("", None)],
)
async def test_base64_bad_input(registry, text, message):
    assert_usage(await run(registry, "base64", text), "base64", message)


# uuid / token -------------------------------------------------------------------------------

async def test_uuid_default_and_count(registry):
    one = await run(registry, "uuid")
    assert uuid.UUID(one.code).version == 4
    many = await run(registry, "uuid", "10")
    assert len(set(many.data["uuids"])) == 10


@pytest.mark.parametrize("text", ["0", "11", "two", "-1"])
async def test_uuid_bad_count(registry, text):
    assert_usage(await run(registry, "uuid", text), "uuid")


@pytest.mark.parametrize("text, length", [("", 32), ("8", 8), ("256", 256)])
async def test_token_lengths(registry, text, length):
    result = await run(registry, "token", text)
    assert result.ephemeral and re.fullmatch(rf"[A-Za-z0-9]{{{length}}}", result.code)
    assert result.code not in json.dumps(result.data)


async def test_tokens_differ(registry):
    assert (await run(registry, "token")).code != (await run(registry, "token")).code


@pytest.mark.parametrize("text", ["7", "257", "long"])
async def test_token_bad_length(registry, text):
    assert_usage(await run(registry, "token", text), "token")


# calc ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "expression, expected",
    [
        ("1 + 2 * 3", "7"), ("(1 + 2) * 3", "9"), ("7 // 2", "3"), ("7 % 3", "1"), ("2 ** 10", "1024"),
        ("-3 ** 2", "-9"), ("+4 - -2", "6"), ("0.1 + 0.2", "0.3"), ("7 / 7", "1"), ("2 ** -1", "0.5"),
        ("1_000 * 3", "3000"), ("6 × 7", "42"), ("2 ** 1000 // 2 ** 999", "2"), ("1e3 / 4", "250"),
    ],
)
async def test_calc_good(registry, expression, expected):
    result = await run(registry, "calc", expression)
    assert result.ok and result.code == expected
    assert result.text == f"{expression} = {expected}"


async def test_calc_big_but_bounded_result(registry):
    result = await run(registry, "calc", "1000 ** 1000")
    assert result.code == str(1000**1000)


@pytest.mark.parametrize(
    "expression, message",
    [
        ("", "Type an expression"),
        ("1 / 0", "Division by zero"),
        ("5 % 0", "Division by zero"),
        ("2 ** 1001", "Exponents are limited"),
        ("10 ** 1000 ** 2", "Exponents are limited"),
        ("(10 ** 1000) ** 1000", "too large"),
        ("1e308 * 10", "too large"),
        ("10.0 ** 400", "too large"),
        ("(-8) ** 0.5", "not a real number"),
        ("2 ^ 3", "use `**`"),
        ("__import__('os').system('id')", "Only numbers"),
        ("x + 1", "the name 'x'"),
        ("abs(-1)", "Only numbers"),
        ("1 << 2", "Only numbers"),
        ("True + 1", "a bool literal"),
        ("'a' * 3", "a str literal"),
        ("1 if 1 else 2", "Only numbers"),
        ("1 +", "not a valid arithmetic expression"),
        ("1" + " + 1" * 100, "too long"),
    ],
)
async def test_calc_bad(registry, expression, message):
    assert_usage(await run(registry, "calc", expression), "calc", message)


# unix ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, timestamp, iso",
    [
        ("1700000000", 1700000000, "2023-11-14T22:13:20Z"),
        ("1700000000123", 1700000000.123, "2023-11-14T22:13:20.123000Z"),
        ("0", 0, "1970-01-01T00:00:00Z"),
        ("-86400", -86400, "1969-12-31T00:00:00Z"),
        ("2023-11-14T22:13:20Z", 1700000000, "2023-11-14T22:13:20Z"),
        ("2023-11-14T23:13:20+01:00", 1700000000, "2023-11-14T22:13:20Z"),
        ("2023-11-14 22:13:20", 1700000000, "2023-11-14T22:13:20Z"),
        ("1970-01-02", 86400, "1970-01-02T00:00:00Z"),
    ],
)
async def test_unix_conversions(registry, text, timestamp, iso):
    result = await run(registry, "unix", text)
    assert result.data == {"timestamp": timestamp, "iso": iso}


@pytest.mark.parametrize("text", ["", "now"])
async def test_unix_now(registry, text):
    result = await run(registry, "unix", text)
    assert abs(result.data["timestamp"] - time.time()) < 5
    assert result.data["iso"].endswith("Z")


@pytest.mark.parametrize("text, message", [("yesterday", "ISO 8601"), ("99999999999999999999", "outside the supported range")])
async def test_unix_bad(registry, text, message):
    assert_usage(await run(registry, "unix", text), "unix", message)


# reindex ------------------------------------------------------------------------------------

@pytest.fixture
def reindex_calls():
    reindexer = FakeReindexer()
    return reindexer.calls, CommandServices(reindexer=reindexer)


async def test_reindex_refused_for_non_admins(registry, reindex_calls):
    calls, services = reindex_calls
    result = await run(registry, "reindex", "full", user_id="U1", services=services)
    assert not result.ok and result.text == "/sz-reindex is restricted to admins."
    assert calls == []


@pytest.mark.parametrize("text, full", [("", False), ("full", True), ("FULL", True)])
async def test_reindex_for_admins(registry, reindex_calls, text, full):
    calls, services = reindex_calls
    result = await run(registry, "reindex", text, user_id="UADMIN", is_admin=True, services=services)
    kind = "Full reindex" if full else "Reindex"
    assert result.ok and not result.ephemeral
    assert result.text == f":white_check_mark: {kind} done in 1.2 s: 2 added, 0 changed, 0 removed (3 files, 9 chunks)."
    assert result.data["full"] is full and result.data["user"] == "UADMIN"
    assert calls == [(full, "UADMIN")]


async def test_reindex_announces_itself_once_the_lock_is_held(registry):
    said: list[str] = []

    async def notify(text: str) -> None:
        said.append(text)

    services = CommandServices(reindexer=FakeReindexer(), notify=notify)
    await run(registry, "reindex", "full", user_id="UADMIN", is_admin=True, services=services)
    assert said == [":arrows_counterclockwise: Full reindex started requested by <@UADMIN>…"]


async def test_reindex_busy_and_failed_runs(registry):
    busy = await run(registry, "reindex", "", user_id="UADMIN", is_admin=True,
                     services=CommandServices(reindexer=FakeReindexer(busy=True)))
    assert not busy.ok and busy.data == {"error": "busy"}
    assert busy.text == ("A reindex is already running (started by <@UOTHER>, 12 s ago). "
                         "Try again when it has finished.")
    failed = await run(registry, "reindex", "", user_id="UADMIN", is_admin=True,
                       services=CommandServices(reindexer=FakeReindexer(error="disk full")))
    assert not failed.ok and not failed.ephemeral
    assert failed.text == "Reindex failed: disk full. The previous index is still in use."


async def test_reindex_bad_option_and_missing_service(registry, reindex_calls):
    calls, services = reindex_calls
    assert_usage(await run(registry, "reindex", "now", is_admin=True, services=services), "reindex", "only option is `full`")
    assert calls == []
    missing = await run(registry, "reindex", "", is_admin=True)
    assert not missing.ok and "not available" in missing.text


# the model's runCommand path ----------------------------------------------------------------

@pytest.mark.parametrize("command_id", ["ask", "token", "8ball", "rps"])
async def test_tool_source_refuses_commands_that_are_not_ai_safe(registry, command_id):
    result = await run(registry, command_id, "rock", source="tool", services=SERVICES)
    assert not result.ok and result.data == {"error": "not_ai_safe"}


async def test_tool_source_runs_ai_safe_commands(registry):
    result = await run(registry, "calc", "6 * 7", source="tool")
    assert result.ok and result.data["result"] == "42"


async def test_reindex_of_a_channel_bound_to_a_repository_that_cannot_serve_says_so(registry):
    scoping = FakeScoping()
    scoping.bound["C1"] = "web"  # web could not be opened: it has no reindexer
    api = FakeReindexer()
    services = CommandServices(reindexer=api, reindexers={"api": api, "docs": FakeReindexer()}, repos=scoping)
    result = await run(registry, "reindex", "", channel_id="C1", is_admin=True, services=services)
    assert not result.ok and "*web* cannot be reindexed right now" in result.text
    assert api.calls == []  # the default was not reindexed in its place
    named = await run(registry, "reindex", "docs full", channel_id="C1", is_admin=True, services=services)
    assert named.ok and "Full reindex of *docs* done" in named.text
