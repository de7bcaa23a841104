"""``/sz-calc <expression>``: arithmetic with a safe expression parser.

The expression is parsed with :func:`ast.parse` (``mode="eval"``) and walked
over a whitelist of nodes: numbers (int and float literals, no bools or
complex), ``+ - * / // % **``, unary ``+ -`` and parentheses. Nothing is ever
passed to ``eval``; names, calls, attributes, subscripts, comparisons and
every other node are refused. Cost is bounded three ways: input length
(``MAX_EXPRESSION_CHARS``), exponent size (``MAX_EXPONENT``) and integer
result size (``MAX_RESULT_BITS``, below CPython's 4,300-digit ``int``→``str``
limit so every result can be printed).
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Callable, Union

from commands.registry import CommandError, CommandRequest, CommandResult, CommandSpec

Number = Union[int, float]

MAX_EXPRESSION_CHARS = 200
MAX_EXPONENT = 1_000
MAX_RESULT_BITS = 10_000
"""≈3,010 decimal digits."""

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_SYMBOLS = {"×": "*", "÷": "/", "−": "-"}


def _too_large() -> CommandError:
    return CommandError("The result is too large.")


def _check_operands(op: type, left: Number, right: Number) -> None:
    if op is ast.Pow:
        if abs(right) > MAX_EXPONENT:
            raise CommandError(f"Exponents are limited to ±{MAX_EXPONENT:,}.")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            if abs(left).bit_length() * right > MAX_RESULT_BITS:
                raise _too_large()
    elif op is ast.Mult and isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_RESULT_BITS + 1:
            raise _too_large()


def _evaluate(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        _check_operands(type(node.op), left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise CommandError("The result is not a real number.")
        if isinstance(result, int) and result.bit_length() > MAX_RESULT_BITS:
            raise _too_large()
        if isinstance(result, float) and not math.isfinite(result):
            raise _too_large()
        return result
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        raise CommandError("`^` is not supported: use `**` for powers.")
    raise CommandError(f"Only numbers, + - * / // % **, and parentheses are allowed (found {_describe(node)}).")


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"the name {node.id!r}"
    if isinstance(node, ast.Constant):
        return f"a {type(node.value).__name__} literal"
    return f"a {type(node).__name__} expression"


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression.

    Example: ``evaluate("2 ** 10 + (3 - 1) / 4")`` → ``1024.5``.

    Raises:
        CommandError: empty or too long input, a syntax error, a refused node,
            division by zero, an exponent beyond ``MAX_EXPONENT`` or a result
            beyond ``MAX_RESULT_BITS`` / the float range.
    """
    for symbol, replacement in _SYMBOLS.items():
        expression = expression.replace(symbol, replacement)
    expression = expression.strip()
    if not expression:
        raise CommandError("Type an expression, for example `(2 + 3) * 4`.")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CommandError(f"The expression is too long ({len(expression)} characters; the limit is {MAX_EXPRESSION_CHARS}).")
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise CommandError("That is not a valid arithmetic expression.") from None
    try:
        return _evaluate(tree)
    except ZeroDivisionError:
        raise CommandError("Division by zero.") from None
    except (OverflowError, RecursionError):
        raise _too_large() from None


def format_number(value: Number) -> str:
    """Ints in full; floats with up to 15 significant digits (``0.1 + 0.2`` → ``0.3``, ``7 / 7`` → ``1``)."""
    if isinstance(value, int):
        return str(value)
    return format(value, ".15g")


def handle(request: CommandRequest) -> CommandResult:
    """Evaluate ``request.text`` and answer ``expression = result``."""
    value = evaluate(request.text)
    shown = format_number(value)
    return CommandResult(
        text=f"{request.text} = {shown}" if len(shown) <= 80 else request.text,
        title="calc",
        code=shown,
        data={"expression": request.text, "result": shown},
    )


def register(register: Callable[[CommandSpec], None]) -> None:
    """Contribute ``/sz-calc``."""
    register(
        CommandSpec(
            id="calc",
            description="Evaluate arithmetic: + - * / // % ** and parentheses.",
            usage="<expression>",
            category="utility",
            handler=handle,
            ai_safe=True,
        )
    )
