"""Each package's public surface is pinned (as httpx does in tests/test_exported_members.py)."""
from __future__ import annotations

import bot
import commands
import rag


def test_rag_exports() -> None:
    assert sorted(rag.__all__) == sorted([
        "AnswerResult", "Chunk", "CodeGraph", "EmptyQuestionError", "Engine", "ImageHit", "IndexStats",
        "IndexUnavailableError", "ModelConfig", "PackedContext", "ProviderError", "RagError", "ReindexBusyError",
        "Reindexer", "RepoNotFoundError", "RunRecord", "Source", "ToolAdapter", "ToolHandlers", "ToolResult",
        "UserError", "answer_question", "code_context", "estimate_tokens", "pack_context",
    ])
    assert all(hasattr(rag, name) for name in rag.__all__)


def test_bot_exports() -> None:
    assert sorted(bot.__all__) == ["BotContext", "Runtime", "Settings", "SettingsError", "create_app", "serve", "start"]
    assert all(hasattr(bot, name) for name in bot.__all__)


def test_layering_rag_never_imports_bot_or_commands() -> None:
    import pathlib
    import re

    root = pathlib.Path(rag.__file__).parent
    pattern = re.compile(r"^\s*(from|import)\s+(bot|commands|slack_bolt|slack_sdk)\b", re.M)
    offenders = [p.name for p in root.glob("*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    croot = pathlib.Path(commands.__file__).parent
    offenders = [p.name for p in croot.glob("*.py")
                 if re.search(r"^\s*(from|import)\s+bot\b", p.read_text(encoding="utf-8"), re.M)]
    assert offenders == []


def test_the_cli_loads_neither_bolt_nor_the_openai_sdk_until_needed() -> None:
    # Lazy package exports (PEP 562): `slackzilla retrieve/index/code` start in a fraction of the time.
    import subprocess
    import sys

    code = ("import sys, bot.cli, rag; from rag import Engine, Source; "
            "print(sorted(m for m in ('openai', 'slack_bolt', 'slack_sdk') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
    code = "import rag; rag.answer_question; import sys; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "True"


def test_unknown_package_attributes_still_raise() -> None:
    import pytest

    for package in (rag, bot):
        with pytest.raises(AttributeError, match="has no attribute 'nope'"):
            package.nope  # noqa: B018
    import subprocess
    import sys
    code = "import rag, bot; print(rag.search.lexical.rank_chunks.__name__, bot.slack.render.escape.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["rank_chunks", "escape"]


def test_every_module_exports_only_names_it_has() -> None:
    """``rag.store.queries.__all__`` listed ``chunk_ids_paths_texts``, a function removed long before:
    ``from rag.store.queries import *`` raised ``AttributeError``. Every listed name of every module must
    resolve (lazy exports through a module ``__getattr__`` included)."""
    import importlib
    import pkgutil

    missing = []
    for package in (rag, bot, commands):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            missing += [f"{info.name}.{name}" for name in getattr(module, "__all__", ()) if not hasattr(module, name)]
    assert missing == []
