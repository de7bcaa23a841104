"""The context pool: which retrieved chunks the packer may turn into evidence spans, in which file order.

The sources shown to the user are the best eight chunks; the packer reads deeper (issue 15).
:func:`context_pool` merges three rankings of one question:

1. the **shown** sources (always first: the model should see what the user is shown);
2. the **deeper** retrieval (:data:`rag.context.packer.DEFAULT_CONTEXT_SOURCES` chunks with
   :data:`rag.context.packer.DEFAULT_CONTEXT_DEPTH`: several chunks of the best files);
3. a **code** retrieval: the same question restricted to ``source`` chunks.

Why the third: questions about behaviour ("how does the logger skip disabled levels?")
are answered by the implementation, but documentation and changelogs use the
question's words more often than the code does, so a mixed ranking can fill every
leading place with Markdown (measured on the dev sets: for a third of the concept and
paraphrase questions whose gold lines were not packed, the first three files were all
documentation). The docs stay; the best implementation files are interleaved with them:
the file order keeps at least :attr:`MixPolicy.min_code_files` (two) source files among the
first :attr:`MixPolicy.lead_files` (the files that get full spans), taken from the code
ranking when the mixed ranking has too few, and after those places the two rankings
alternate (mixed first), each file once.

Within a file, chunks keep the order they had in the first ranking that listed them, and
the other rankings' chunks of that file follow. Pure and deterministic.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.types import Source

__all__ = ["MixPolicy", "DEFAULT_MIX_POLICY", "context_pool"]

CODE_KIND = "source"


@dataclass(frozen=True, slots=True)
class MixPolicy:
    """How the code ranking is mixed into the pool (module docstring).

    Attributes:
        lead_files: the leading file places (the packer's ``SpanPolicy.wide_files``).
        min_code_files: source files wanted among them (when the code ranking has them): two of
            the three (issue 15: with one, a behaviour question often got two documentation pages
            and one source file; context line recall with two, ``shared/eval/context_recall.py``,
            BM25 + structure / MiniLM hybrid: ``dev`` 0.870 → 0.870 / 0.870 → 0.889, ``dev-hard``
            0.523 → 0.523 / 0.523 → 0.545, held-out 0.833 → 0.833 / 0.905 → 0.905).
        alternate: after the leading places, alternate mixed and code files (else the code
            ranking's remaining files only follow the mixed ones).
    """

    lead_files: int = 3
    min_code_files: int = 2
    alternate: bool = True


DEFAULT_MIX_POLICY = MixPolicy()


def context_pool(shown: Sequence[Source], deeper: Sequence[Source], code: Sequence[Source] = (), *,
                 policy: MixPolicy = DEFAULT_MIX_POLICY) -> list[Source]:
    """The packer's sources: ``shown``, ``deeper`` and ``code`` merged (module docstring).

    Args:
        shown: the sources shown to the user, best first.
        deeper: a deeper retrieval of the same question, best first.
        code: the same question restricted to ``source`` chunks, best first.
        policy: the mixing knobs.

    Returns:
        Every distinct chunk (by path and start line) of the three lists, grouped by file,
        files in the mixed order described above.
    """
    chunks: dict[str, list[Source]] = {}
    seen: set[tuple[str, int]] = set()
    mixed: list[str] = []
    for source in (*shown, *deeper, *code):
        if (source.path, source.start) in seen:
            continue
        seen.add((source.path, source.start))
        chunks.setdefault(source.path, []).append(source)
    for source in (*shown, *deeper):
        if source.path not in mixed:
            mixed.append(source.path)
    coded = list(dict.fromkeys(s.path for s in code if s.kind == CODE_KIND))
    is_code = {path: any(s.kind == CODE_KIND for s in items) for path, items in chunks.items()}

    order: list[str] = []
    taken: set[str] = set()

    def take(path: str) -> None:
        order.append(path)
        taken.add(path)

    m = c = 0
    while len(order) < policy.lead_files and (m < len(mixed) or c < len(coded)):
        code_so_far = sum(1 for p in order if is_code[p])
        places_left = policy.lead_files - len(order)
        need_code = code_so_far < policy.min_code_files and places_left <= policy.min_code_files - code_so_far
        while m < len(mixed) and mixed[m] in taken:
            m += 1
        while c < len(coded) and coded[c] in taken:
            c += 1
        if m < len(mixed) and (not need_code or is_code[mixed[m]] or c >= len(coded)):
            take(mixed[m])
        elif c < len(coded):
            take(coded[c])
        else:
            break
    rest_mixed = [p for p in mixed if p not in taken]
    rest_code = [p for p in coded if p not in taken]
    if policy.alternate:
        for i in range(max(len(rest_mixed), len(rest_code))):
            for path in (rest_mixed[i] if i < len(rest_mixed) else None, rest_code[i] if i < len(rest_code) else None):
                if path is not None and path not in taken:
                    take(path)
    else:
        for path in (*rest_mixed, *rest_code):
            if path not in taken:
                take(path)
    return [source for path in order for source in chunks[path]]
