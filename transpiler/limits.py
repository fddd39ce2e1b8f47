"""What one script may cost the transpiler before it runs, and the stack its deepest form needs."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits", "DEFAULT_LIMITS", "MAX_INT_DIGITS", "STACK_FRAMES"]

MAX_INT_DIGITS = 4000  # Python refuses to convert longer decimal strings
# lark's Transformer and libcst's code generation need about 15 frames per block level and
# 4-6 per expression level: with the default limits the deepest valid script needs ~1100.
# The caller raises the recursion limit to this (runtime.compile does); below it a deep
# script is refused with a DSLError, never a RecursionError.
STACK_FRAMES = 4000


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 1 << 20  # 1 MiB
    max_nesting: int = 100  # brackets nested inside each other
    # Blocks nested inside each other. Python refuses 100 indentation levels, and every level
    # costs stack in libcst and RestrictedPython; agent scripts rarely nest more than 5.
    max_blocks: int = 50
    max_expr_depth: int = 100  # operators nested inside one expression (a 1+1+...+1 chain)
    # Parsing and libcst code generation cost ~0.1 ms per token: this bounds the work a
    # hostile script causes before it runs (a 5000-line script fits).
    max_tokens: int = 50_000


DEFAULT_LIMITS = Limits()
