"""Which named definition encloses each nested definition and each call: one sweep.

Shared by the language extractors. Definitions nest like the syntax tree, so after
sorting their byte spans by ``(start, -end)`` a stack holds, at every position, the
chain of definitions open there; the innermost is the stack's top.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

from rag.parse.records import Call, Definition

__all__ = ["nest_definitions"]


def nest_definitions(
    definitions: Sequence[Definition],
    spans: Sequence[tuple[int, int, int]],
    *,
    owned: Collection[int] = (),
    call_sites: Sequence[tuple[int, str, int]] = (),
) -> list[Call]:
    """Set ``Definition.parent`` of nested definitions and build the calls with their enclosing name.

    Args:
        definitions: the file's definitions (``parent`` set already for owned ones).
        spans: ``(start_byte, end_byte, index into definitions)`` per definition.
        owned: indexes whose ``parent`` was set by the extractor (a method's class):
            the sweep leaves them alone.
        call_sites: ``(start_byte, callee, line)`` per call.

    Returns:
        One :class:`Call` per call site, in byte order, ``enclosing`` = the name of the
        innermost definition whose span holds the call (``None`` at top level). Every
        other definition inside another gets that one's name as ``parent``.
    """
    ordered = sorted(spans, key=lambda s: (s[0], -s[1]))
    stack: list[tuple[int, int, int]] = []
    span_iter = iter(ordered)
    pending = next(span_iter, None)
    calls: list[Call] = []

    def advance(position: int) -> None:
        nonlocal pending
        while pending is not None and pending[0] <= position:
            while stack and stack[-1][1] <= pending[0]:
                stack.pop()
            if stack and pending[2] not in owned:
                definitions[pending[2]].parent = definitions[stack[-1][2]].name
            stack.append(pending)
            pending = next(span_iter, None)
        while stack and stack[-1][1] <= position:
            stack.pop()

    for start, callee, line in sorted(call_sites):
        advance(start)
        enclosing = definitions[stack[-1][2]].name if stack else None
        calls.append(Call(callee=callee, line=line, enclosing=enclosing))
    advance(1 << 62)
    return calls
