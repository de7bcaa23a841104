"""Two repositories in one bot, through the real Bolt app (signed requests, Web API at tests/slack_fake.py):
channel bindings (/sz-repo), in:NAME and in:all, restarts, a broken repository, and the document round
trip through the HTTP API, the CLI and the "Save to Slackzilla" shortcut."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from slack_fake import ADMIN, ADMIN_TOKEN, BOT_TOKEN, SIGNING_SECRET, USER, BotHarness

from repo_helpers import write_repo

API_FILES = {
    "README.md": "# Payments API\n\nRefunds are issued by the refund worker, which calls the payment "
                 "provider and records each refund in the ledger.\n",
    "src/refunds.js": "// issueRefund sends a refund to the payment provider and writes the ledger entry.\n"
                      "function issueRefund(payment, amount) {\n  return provider.refund(payment.id, amount);\n}\n"
                      "module.exports = { issueRefund };\n",
}
WEB_FILES = {
    "README.md": "# Web storefront\n\nThe shopping cart is persisted in localStorage and restored when the "
                 "visitor comes back to the storefront. Refunds are shown to the visitor on the order page once they "
                 "are issued.\n",
    "src/cart.js": "// saveCart persists the shopping cart in localStorage.\n"
                   "function saveCart(cart) {\n  localStorage.setItem('cart', JSON.stringify(cart));\n}\n"
                   "module.exports = { saveCart };\n",
}
API_URL, WEB_URL = "https://git.example.com/acme/api", "https://git.example.com/acme/web"
RUNBOOK = ("When a deployment breaks checkout, revert to the previous release tag with `deploy revert` and page "
           "the on-call engineer. Keep the incident channel updated every fifteen minutes.")


def config_text(api: Path, web: Path, *, tmp: Path) -> str:
    return (f'[[repositories]]\nname = "api"\npath = "{api}"\nweb_url = "{API_URL}"\n'
            f'index_path = "{tmp / "api.sqlite"}"\ndefault = true\n\n'
            f'[[repositories]]\nname = "web"\npath = "{web}"\nweb_url = "{WEB_URL}"\n'
            f'index_path = "{tmp / "web.sqlite"}"\n')


@pytest.fixture
def two_repos(tmp_path) -> Path:
    """``slackzilla.toml`` naming two fixture repositories (api, the default, and web)."""
    api = write_repo(tmp_path / "api", API_FILES)
    web = write_repo(tmp_path / "web", WEB_FILES)
    config = tmp_path / "slackzilla.toml"
    config.write_text(config_text(api, web, tmp=tmp_path), encoding="utf-8")
    return config


@pytest.fixture
async def start_bot(slack_fake, tmp_path):
    """``await start_bot(config)`` → a BotHarness over every repository of ``config`` (state in tmp)."""
    import aiohttp
    from aiohttp import web
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.api.routes import BOT_KEY
    from bot.compose import create_app
    from bot.observability.runtime import Runtime
    from bot.repos import open_repositories
    from bot.settings import Settings
    from bot.slack.app import SLACK_EVENTS_PATH
    from commands.registry import build_registry

    stops = []

    async def start(config: Path, **env: str) -> BotHarness:
        values = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                  "SLACK_API_URL": slack_fake.api_url, "ADMIN_USER_IDS": ADMIN, "PORT": "0",
                  "SLACKZILLA_CONFIG": str(config), "STATE_PATH": str(tmp_path / "state.sqlite"),
                  "ADMIN_API_TOKEN": ADMIN_TOKEN, "ASK_RATE_PER_MIN": "0", **env}
        settings = Settings.from_env(values, dotenv_path=None)
        opened = open_repositories(settings.repository_configs)
        for item in opened:
            if item.engine is not None:
                item.engine.update()
        runtime = Runtime()
        client = AsyncWebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url)
        app = create_app(settings, engine=None, registry=build_registry(on_error=runtime.capture_command_error),
                         runtime=runtime, client=client, repositories=opened)
        web_app = app.web_app(path=SLACK_EVENTS_PATH, port=settings.port)
        runner = web.AppRunner(web_app, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        session = aiohttp.ClientSession()
        composed = web_app[BOT_KEY]

        async def stop() -> None:
            if composed in done:
                return
            done.append(composed)
            await session.close()
            await runner.cleanup()
            await composed.core.asker.aclose()
            composed.close()
            for item in opened:
                if item.engine is not None:
                    item.engine.close()

        done: list = []
        stops.append(stop)
        harness = BotHarness(app, composed.core.context, slack_fake, f"http://127.0.0.1:{port}", session, settings,
                             ask_flow=composed.ask_flow)
        harness.stop = stop
        return harness

    yield start
    for stop in reversed(stops):
        await stop()


def texts(call) -> str:
    return call.body.get("text", "") + "\n" + json.dumps(call.body.get("blocks", []), ensure_ascii=False)


async def reply_to(bot, command: str, text: str = "", **kwargs) -> str:
    bot.fake.clear()
    response = await bot.slash(command, text, **kwargs)
    assert response.status == 200
    calls = await bot.fake.wait_for("response_url")
    return texts([c for c in calls if c.method == "response_url"][-1])


async def answer_in(bot, question: str, *, channel: str) -> str:
    """Ask ``/sz-ask question`` in ``channel`` and return the final answer message's text and blocks.

    The same question twice from one user is dropped as a duplicate (bot.slack.guards), so a counter
    word ("please", "please please" …) keeps each one distinct without changing what it asks."""
    asked = bot.__dict__.setdefault("asked", [])
    repeats = asked.count(question)
    asked.append(question)
    question += " please" * repeats
    bot.fake.clear()
    finished = len(bot.ask_flow.completed)
    response = await bot.post_signed(_form(bot, "/sz-ask", question, channel))
    assert response.status == 200
    await bot.answered(finished + 1)  # the thread's repository is recorded after the answer is posted
    return texts(bot.fake.answers()[-1])


def _form(bot, command: str, text: str, channel: str) -> str:
    from urllib.parse import urlencode

    return urlencode(bot.form(command, text, channel_id=channel))


async def slash_in(bot, command: str, text: str, *, channel: str, user_id: str = ADMIN) -> str:
    from urllib.parse import urlencode

    bot.fake.clear()
    response = await bot.post_signed(urlencode(bot.form(command, text, user_id=user_id, channel_id=channel)))
    assert response.status == 200
    calls = await bot.fake.wait_for("response_url")
    return texts([c for c in calls if c.method == "response_url"][-1])


# -- scoping ------------------------------------------------------------------------------------------

async def test_each_bound_channel_answers_from_its_own_repository_and_in_all_fuses_both(two_repos, start_bot):
    bot = await start_bot(two_repos)
    assert "restricted to admins" in await slash_in(bot, "/sz-repo", "set web", channel="CWEB", user_id=USER)
    assert "now asks about *web*" in await slash_in(bot, "/sz-repo", "set web", channel="CWEB")
    assert "now asks about *api*" in await slash_in(bot, "/sz-repo", "set api", channel="CAPI")
    shown = await slash_in(bot, "/sz-repo", "", channel="CWEB", user_id=USER)
    assert "asks about *web*" in shown and "api (default)" in shown

    api = await answer_in(bot, "how are refunds issued to the payment provider?", channel="CAPI")
    assert f"{API_URL}/blob/" in api and "src/refunds.js" in api and WEB_URL not in api
    web = await answer_in(bot, "where is the shopping cart persisted?", channel="CWEB")
    assert f"{WEB_URL}/blob/" in web and "src/cart.js" in web and API_URL not in web
    # the web channel never answers from api, even about api's subject
    assert API_URL not in await answer_in(bot, "how are refunds issued to the payment provider?", channel="CWEB")
    # in:NAME picks another repository for one question; in:all fuses both, each linked to its own repository
    assert f"{WEB_URL}/blob/" in await answer_in(bot, "in:web where is the shopping cart persisted?", channel="CAPI")
    both = await answer_in(bot, "in:all how are refunds issued?", channel="CAPI")
    assert "|api/src/refunds.js:L" in both and "|web/README.md:L" in both  # labelled with their repository
    assert f"{WEB_URL}/blob/HEAD/README.md#L" in both and f"{API_URL}/blob/HEAD/src/refunds.js#L" in both
    # an unknown repository is refused with the list
    bot.fake.clear()
    await bot.post_signed(_form(bot, "/sz-ask", "in:nope what is this?", "CAPI"))
    calls = await bot.fake.wait_for(lambda calls: any("no repository called" in texts(c) for c in calls))
    assert any("api, web" in texts(c) for c in calls)
    # only to the asker: nothing was posted to the channel ("Searching *nope*…" then a public warning before)
    await asyncio.sleep(0.3)
    refusal = [c for c in bot.fake.calls if "no repository called" in texts(c)]
    assert [c.method for c in refusal] == ["response_url"] and refusal[0].body.get("response_type") == "ephemeral"
    assert not bot.fake.of("chat.postMessage") and not bot.fake.of("chat.update")
    bot.fake.clear()
    await bot.post_signed(_form(bot, "/sz-ask", "in:web", "CAPI"))  # a scope and no question: the usage, privately
    [usage] = await bot.fake.wait_for("response_url")
    assert usage.body.get("response_type") == "ephemeral" and not bot.fake.of("chat.postMessage")
    status = bot.context.status()["repositories"]
    assert [(r["name"], r["ok"], r["default"]) for r in status] == [("api", True, True), ("web", True, False)]
    assert all(r["files"] == 2 and r["generation"] >= 1 for r in status)
    prometheus = bot.context.prometheus_text().decode()
    assert 'slackzilla_repository_index{kind="files",repo="web"} 2.0' in prometheus


async def test_a_thread_follow_up_keeps_the_repository_of_its_first_question(two_repos, start_bot):
    bot = await start_bot(two_repos)
    first = await answer_in(bot, "in:web where is the shopping cart persisted?", channel="CAPI")
    assert WEB_URL in first
    [answer] = bot.fake.answers()
    thread = answer.body.get("thread_ts") or answer.body.get("ts")
    bot.fake.clear()
    await bot.mention("and how is it restored?", channel_id="CAPI", thread_ts=thread)
    await bot.fake.wait_for(lambda calls: bot.fake.answers(), timeout=15)
    follow_up = texts(bot.fake.answers()[-1])
    assert "web" in follow_up and API_URL not in follow_up


async def test_the_binding_survives_a_restart(two_repos, start_bot):
    bot = await start_bot(two_repos)
    await slash_in(bot, "/sz-repo", "set web", channel="CWEB")
    await bot.stop()
    again = await start_bot(two_repos)
    assert "asks about *web* (bound to this channel)" in await slash_in(again, "/sz-repo", "", channel="CWEB")
    assert WEB_URL in await answer_in(again, "where is the shopping cart persisted?", channel="CWEB")


async def test_a_broken_repository_path_leaves_the_other_serving(two_repos, start_bot, tmp_path):
    broken = two_repos.read_text(encoding="utf-8").replace(str(tmp_path / "web"), str(tmp_path / "gone"))
    two_repos.write_text(broken, encoding="utf-8")
    bot = await start_bot(two_repos)
    listing = await slash_in(bot, "/sz-repo", "", channel="CAPI")
    assert "unavailable" in listing and "gone" in listing
    assert "cannot be searched" in await slash_in(bot, "/sz-repo", "set web", channel="CWEB")
    assert f"{API_URL}/blob/" in await answer_in(bot, "how are refunds issued to the payment provider?",
                                                 channel="CAPI")
    status = {r["name"]: r for r in bot.context.status()["repositories"]}
    assert status["web"]["ok"] is False and "not a directory" in status["web"]["error"]
    assert status["api"]["ok"] is True


# -- documents ----------------------------------------------------------------------------------------

def _auth() -> dict:
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


async def test_document_round_trip_through_the_api(two_repos, start_bot):
    bot = await start_bot(two_repos)
    await slash_in(bot, "/sz-repo", "set web", channel="CWEB")
    url = f"{bot.base_url}/api/documents"
    async with bot.session.post(url, json={"title": "Incident rollback runbook", "text": RUNBOOK}) as refused:
        assert refused.status == 401
    async with bot.session.post(url, json={"title": "Big", "text": "x" * 200_001}, headers=_auth()) as too_big:
        assert too_big.status == 413 and "limit is 200,000" in (await too_big.json())["message"]

    async def chunked_over_the_byte_cap():  # no Content-Length: aiohttp's plain-text 413 answered this
        for _ in range(40):
            yield b" " * 32 * 1024
        yield json.dumps({"title": "Big", "text": "x"}).encode()

    async with bot.session.post(url, data=chunked_over_the_byte_cap(), headers=_auth()) as too_big:
        assert too_big.status == 413 and (await too_big.json())["error"] == "too_large"
    async with bot.session.post(url, headers=_auth(), json={
            "title": "Incident rollback runbook", "text": RUNBOOK + " token=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "metadata": {"team": "sre"}, "repo": "api"}) as created:
        assert created.status == 201
        doc_id = (await created.json())["id"]
    async with bot.session.post(url, headers=_auth(), json={"title": "Cart notes", "text": "The cart badge "
                                "counts items in the storefront header.", "repo": "web"}) as other:
        web_doc = (await other.json())["id"]
    async with bot.session.get(url, headers=_auth()) as listed:
        rows = {row["id"]: row for row in (await listed.json())["documents"]}
    assert rows[doc_id]["repo"] == "api" and rows[doc_id]["metadata"] == {"team": "sre"}
    assert rows[doc_id]["preview"].startswith("When a deployment breaks checkout") and len(rows[doc_id]["preview"]) <= 100
    async with bot.session.get(f"{url}/{doc_id}", headers=_auth()) as shown:
        full = await shown.json()
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in full["text"] and "[REDACTED]" in full["text"]

    found = await answer_in(bot, "how do I undo a broken deployment?", channel="CAPI")
    assert f"doc:{doc_id}" in found and "Incident rollback runbook" in found
    assert f"doc:{doc_id}" not in await answer_in(bot, "how do I undo a broken deployment?", channel="CWEB")
    # documents survive a full reindex of their repository
    api = bot.context.repos.get("api")
    await api.reindexer.run_async(trigger="admin", full=True)
    assert f"doc:{doc_id}" in await answer_in(bot, "how do I undo a broken deployment?", channel="CAPI")

    async with bot.session.delete(f"{url}?repo=api", headers=_auth()) as cleared:
        assert (await cleared.json()) == {"deleted": 1}
    async with bot.session.get(url, headers=_auth()) as listed:
        assert [row["id"] for row in (await listed.json())["documents"]] == [web_doc]  # only api was emptied
    assert f"doc:{doc_id}" not in await answer_in(bot, "how do I undo a broken deployment?", channel="CAPI")
    async with bot.session.delete(f"{url}/{web_doc}", headers=_auth()) as removed:
        assert removed.status == 200
    async with bot.session.get(f"{url}/{web_doc}", headers=_auth()) as gone:
        assert gone.status == 404


async def test_a_global_document_is_found_from_every_repository(two_repos, start_bot):
    bot = await start_bot(two_repos)
    await slash_in(bot, "/sz-repo", "set web", channel="CWEB")
    async with bot.session.post(f"{bot.base_url}/api/documents", headers=_auth(),
                                json={"title": "Incident rollback runbook", "text": RUNBOOK}) as created:
        body = await created.json()
    assert body["repo"] is None
    for channel in ("CAPI", "CWEB"):
        assert f"doc:{body['id']}" in await answer_in(bot, "how do I undo a broken deployment?", channel=channel)


async def test_a_global_document_one_index_cannot_take_is_stored_in_none(two_repos, start_bot, monkeypatch):
    """A global document is written to each repository's index in turn. When the second was busy (an update
    held it), the API answered 503 "not changed", yet the first index kept the document: the client's retry
    stored a second copy, and the next start copied the first one into the other repository too."""
    import sqlite3

    import rag.store.index

    monkeypatch.setattr(rag.store.index, "BUSY_TIMEOUT_S", 0.2)  # the real 30 s wait, shortened
    bot = await start_bot(two_repos)
    url = f"{bot.base_url}/api/documents"
    updater = sqlite3.connect(bot.context.repos.get("web").engine.index.path, isolation_level=None)
    updater.execute("BEGIN IMMEDIATE")  # web's index update, in another process
    try:
        async with bot.session.post(url, headers=_auth(), json={"title": "Incident rollback runbook",
                                                                 "text": RUNBOOK}) as refused:
            assert refused.status == 503 and (await refused.json())["error"] == "index_busy"
    finally:
        updater.execute("ROLLBACK")
        updater.close()
    async with bot.session.get(url, headers=_auth()) as listed:
        assert (await listed.json())["documents"] == []
    assert bot.context.documents.sync_shared() == 0


async def test_save_to_slackzilla_stores_the_thread_for_the_channel_repository(two_repos, start_bot):
    bot = await start_bot(two_repos)
    await slash_in(bot, "/sz-repo", "set web", channel="CWEB")
    # a message may hold characters a title may not (rag.documents refuses them): the title drops them
    root = {"ts": "1700000100.000100", "user": USER, "text": "Checkout is \u202edown\x1b after the 14:00 deployment"}
    bot.fake.replies[root["ts"]] = [root, {"ts": "1700000200.000200", "thread_ts": root["ts"], "user": ADMIN,
                                           "text": RUNBOOK}]
    bot.fake.clear()
    await bot.shortcut("sz_save_document", root, user_id=USER, channel_id="CWEB")
    calls = await bot.fake.wait_for("response_url")
    assert "Only admins" in texts(calls[-1])
    bot.fake.clear()
    await bot.shortcut("sz_save_document", {**root, "thread_ts": root["ts"]}, user_id=ADMIN, channel_id="CWEB")
    calls = await bot.fake.wait_for("response_url")
    confirmation = texts([c for c in calls if c.method == "response_url"][-1])
    assert "Saved the thread (2 messages)" in confirmation and "*web*" in confirmation
    assert bot.fake.of("response_url")[-1].body["response_type"] == "ephemeral"
    [stored] = bot.context.documents.list()
    assert stored.repo == "web" and stored.document.metadata["url"].startswith("https://test.slack.com/archives/CWEB/")
    assert stored.document.title.endswith(": Checkout is down after the 14:00 deployment")
    found = await answer_in(bot, "how do I undo a broken deployment?", channel="CWEB")
    assert f"doc:{stored.document.id}" in found
    assert stored.document.metadata["url"] in found  # the source links back to the thread
    assert bot.context.documents.remove(stored.document.id)
    assert f"doc:{stored.document.id}" not in await answer_in(bot, "how do I undo a broken deployment?",
                                                              channel="CWEB")


def test_document_round_trip_through_the_cli(two_repos, tmp_path, monkeypatch):
    from bot.cli import cli

    monkeypatch.setenv("SLACKZILLA_CONFIG", str(two_repos))
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None):
        result = runner.invoke(cli, list(args), input=stdin, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    runbook = tmp_path / "runbook.md"
    runbook.write_text(RUNBOOK, encoding="utf-8")
    added = json.loads(run("docs", "add", str(runbook), "--title", "Incident rollback runbook", "--repo", "api",
                           "--json").stdout)
    web_doc = json.loads(run("docs", "add", "-", "--title", "Cart notes", "--repo", "web", "--json",
                             stdin="The cart badge counts items in the storefront header.").stdout)["id"]
    sources = json.loads(run("retrieve", "how do I undo a broken deployment?", "--repo", "api", "--json").stdout)
    assert {"repo": "api", "path": f"doc:{added['id']}"}.items() <= sources["sources"][0].items()
    fused = json.loads(run("retrieve", "how are refunds issued?", "--repo", "all", "--json").stdout)["sources"]
    assert {s["repo"] for s in fused} == {"api", "web"}
    assert {(s["repo"], s["path"]) for s in fused} >= {("api", "src/refunds.js"), ("web", "README.md")}
    listing = json.loads(run("docs", "list", "--json").stdout)["documents"]
    assert {(d["id"], d["repo"]) for d in listing} == {(added["id"], "api"), (web_doc, "web")}
    assert json.loads(run("docs", "show", added["id"], "--json").stdout)["text"] == RUNBOOK
    repos = json.loads(run("repos", "--json").stdout)["repositories"]
    assert [(r["name"], r["documents"]) for r in repos] == [("api", 1), ("web", 1)]
    assert json.loads(run("docs", "clear", "--repo", "api", "--json").stdout) == {"deleted": 1}
    assert [d["id"] for d in json.loads(run("docs", "list", "--json").stdout)["documents"]] == [web_doc]
    after = json.loads(run("retrieve", "how do I undo a broken deployment?", "--repo", "api", "--json").stdout)
    assert all(not s["path"].startswith("doc:") for s in after["sources"])
    run("docs", "remove", web_doc)
    assert json.loads(run("docs", "list", "--json").stdout)["documents"] == []
    too_big = runner.invoke(cli, ["docs", "add", "-", "--title", "Big"], input="x" * 200_001)
    assert too_big.exit_code == 1 and "the limit is 200,000" in too_big.output

    # A binary file was stored as thousands of U+FFFD characters; a UTF-16 file with its BOM is text.
    binary = tmp_path / "build.tar.gz"
    binary.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 8)
    refused = runner.invoke(cli, ["docs", "add", str(binary), "--title", "Archive"])
    assert refused.exit_code == 1 and "is not text" in refused.output and "Traceback" not in refused.output
    assert json.loads(run("docs", "list", "--json").stdout)["documents"] == []
    utf16 = tmp_path / "notes.txt"
    utf16.write_bytes("\ufeffRollback needs the release tag.\n".encode("utf-16-le"))
    added16 = json.loads(run("docs", "add", str(utf16), "--title", "Notes", "--json").stdout)["id"]
    assert json.loads(run("docs", "show", added16, "--json").stdout)["text"] == "Rollback needs the release tag.\n"


# -- /sz-reindex per repository ------------------------------------------------------------------------

async def reindex_in(bot, text: str, *, channel: str, until: str = "done in") -> str:
    """``/sz-reindex text`` in ``channel`` as the admin; the reply that contains ``until``."""
    from urllib.parse import urlencode

    bot.fake.clear()
    response = await bot.post_signed(urlencode(bot.form("/sz-reindex", text, user_id=ADMIN, channel_id=channel)))
    assert response.status == 200
    calls = await bot.fake.wait_for(lambda calls: [c for c in calls if until in texts(c)], timeout=20)
    return "\n".join(texts(c) for c in calls if until in texts(c))


async def test_reindex_updates_the_channels_repository_a_named_one_or_all(two_repos, start_bot, tmp_path):
    bot = await start_bot(two_repos)
    await slash_in(bot, "/sz-repo", "set web", channel="CWEB")
    (tmp_path / "web" / "src" / "wishlist.js").write_text(
        "// saveWishlist keeps the visitor's wishlist next to the cart.\nfunction saveWishlist(items) {}\n",
        encoding="utf-8")
    bound = await reindex_in(bot, "", channel="CWEB")
    assert "Reindex of *web* done" in bound and "1 added" in bound  # the channel's repository, not the default
    assert "src/wishlist.js" in await answer_in(bot, "where is the wishlist saved?", channel="CWEB")

    (tmp_path / "api" / "src" / "ledger.js").write_text("// writeLedger appends one ledger entry.\n",
                                                         encoding="utf-8")
    named = await reindex_in(bot, "API", channel="CWEB")  # the configured name, any case
    assert "Reindex of *api* done" in named and "1 added" in named
    both = await reindex_in(bot, "full all", channel="CAPI")
    assert "Full reindex of *api* done" in both and "Full reindex of *web* done" in both
    unknown = await reindex_in(bot, "nope", channel="CAPI", until="Unknown option")
    assert "name one repository (api, web or all)" in unknown


def test_two_repositories_with_one_index_file_are_a_configuration_error(tmp_path):
    """Both were accepted, and each update replaced the other repository's files in the shared index."""
    from bot.config_file import read_config_file

    api = write_repo(tmp_path / "api", API_FILES)
    web = write_repo(tmp_path / "web", WEB_FILES)
    shared = tmp_path / "shared.sqlite"
    config = tmp_path / "slackzilla.toml"
    config.write_text(f'[[repositories]]\nname = "api"\npath = "{api}"\nindex_path = "{shared}"\n\n'
                      f'[[repositories]]\nname = "web"\npath = "{web}"\nindex_path = "{shared}"\n\n'
                      f'[[repositories]]\nname = "api-again"\npath = "{api}"\n\n'
                      f'[[repositories]]\nname = "api-docs"\npath = "{api}"\n', encoding="utf-8")
    problems: list[str] = []
    repos, _ = read_config_file(config, problem=problems.append, default_interval_s=0)
    assert [r.name for r in repos] == ["api", "api-again"]
    assert len(problems) == 2
    assert "repositories[2] (web): its index" in problems[0] and "is also api's" in problems[0]
    assert "repositories[4] (api-docs)" in problems[1] and "is also api-again's" in problems[1]


def test_a_global_document_deleted_while_a_repository_was_down_does_not_come_back(two_repos, tmp_path):
    """A global document lives in every repository's index. Deleted or cleared while one repository was
    not serving (its path broken, a bot started with the other alone), it stayed in that index, and the
    next start's sync copied it back into every repository: the deletion was undone without a word."""
    from bot.documents import DocumentService
    from rag.engine import Engine

    engines = {name: Engine.open(tmp_path / name, index_path=tmp_path / f"{name}.sqlite") for name in ("api", "web")}
    try:
        for engine in engines.values():
            engine.update()
        both, api_alone = DocumentService(engines), DocumentService({"api": engines["api"]})
        removed = both.add("Incident rollback runbook", RUNBOOK).document.id
        cleared = both.add("On-call rota", "The on-call engineer answers pages within ten minutes.").document.id
        assert api_alone.remove(removed) and api_alone.clear() == 1  # web is down meanwhile
        assert both.sync_shared() == 0
        assert both.list() == [] and both.get(removed) is None and both.get(cleared) is None
        assert not [s for s in engines["web"].retrieve("how do I undo a broken deployment?") if s.path.startswith("doc:")]
        # a document added while web was down still reaches it, and one id may be stored again on purpose
        added = api_alone.add("Release checklist", "Tag the release, then publish the changelog.").document.id
        assert both.sync_shared() == 1 and engines["web"].index.read_lines(f"doc:{added}", 1, 1)
    finally:
        for engine in engines.values():
            engine.close()
