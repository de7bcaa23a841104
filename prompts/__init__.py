"""System prompts, loaded by name as package data.

    from prompts import load_prompt
    system = load_prompt("SYSTEM_PROMPT")          # prompts/SYSTEM_PROMPT.md

Prompts are Markdown files shipped inside the package (``[tool.setuptools.package-data]
prompts = ["*.md"]``) and read with ``importlib.resources``, so they work from
a checkout, an installed wheel or a zip alike.
"""
from __future__ import annotations

import re
from importlib import resources

__all__ = ["PROMPT_NAMES", "load_prompt"]

PROMPT_NAMES = ("SYSTEM_PROMPT", "TOOL-CALL-LIMIT_PROMPT")
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")


def load_prompt(name: str) -> str:
    """Return the text of ``prompts/<name>.md`` (``name`` with or without ``.md``), stripped.

    Raises:
        ValueError: ``name`` is not a plain file name (letters, digits, ``_``, ``-``).
        FileNotFoundError: no such prompt; the message lists the known ones.
    """
    stem = name[:-3] if name.endswith(".md") else name
    if not _NAME_RE.match(stem):
        raise ValueError(f"invalid prompt name {name!r}")
    resource = resources.files(__name__).joinpath(f"{stem}.md")
    if not resource.is_file():
        raise FileNotFoundError(f"no prompt named {stem!r}; known prompts: {', '.join(PROMPT_NAMES)}")
    return resource.read_text(encoding="utf-8").strip()
