"""The one token estimator of the engine.

Rule: ``ceil(len(text) / 4)`` — four characters (Unicode code points) per
token, OpenAI's published rule of thumb for English text ("1 token ≈ 4
characters", help.openai.com "What are tokens and how to count them"). It
over-counts slightly for identifier-dense code, which is the safe side for a
budget. Every budget and usage estimate (context packing, usage estimates when
a provider reports none) goes through :func:`estimate_tokens` so the figures
agree with one another.
"""
from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "estimate_tokens"]

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimated model tokens in ``text``: ``ceil(len(text) / CHARS_PER_TOKEN)``; 0 for ``""``.

    >>> estimate_tokens("abcd"), estimate_tokens("abcde"), estimate_tokens("")
    (1, 2, 0)
    """
    return -(-len(text) // CHARS_PER_TOKEN)
