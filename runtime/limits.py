"""The resource limits of one run, their defaults and their ranges: one table the Python API
and the command line both check (a bad value is a usage error naming the argument)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from runtime.budget import DEFAULT_MAX_REPLY_BYTES, MIN_MAX_REPLY_BYTES
from runtime.errors import RunSetupError
from runtime.services.documents import DEFAULT_MEMORY_BYTES
from runtime.services.pdf import DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_MEMORY_BYTES
from wire.protocol import MAX_REPLY_VALUE_BYTES

MAX_CPU_SECONDS = 10 ** 8  # the CPU rlimit of a run without a wall clock

# field -> (lowest, highest, unit); timeout may be math.inf (no wall clock), the rest are ints.
RANGES = (
    ("timeout", 0.001, math.inf, "seconds"),
    ("memory_mb", 16, 1 << 20, "MiB"),
    ("max_output", 0, 1 << 40, "bytes"),
    ("max_reply_bytes", MIN_MAX_REPLY_BYTES, MAX_REPLY_VALUE_BYTES, "bytes"),
    ("broker_memory_mb", 1, 1 << 20, "MiB"),
    ("pdf_memory_mb", 128, 1 << 20, "MiB"),
    ("max_pdf_pages", 1, 10 ** 7, "pages"),
)


def _shown(value) -> str:
    """A bad value as an error names it (an int too long to print, by its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run (documented defaults; the CLI and the API expose each)."""

    timeout: float = 60.0  # wall clock, seconds (math.inf: none, e.g. a .ps run with --max-time 0)
    memory_mb: int = 256  # address space of the worker, and its resident size as watched
    max_output: int = 1_000_000  # bytes of script output
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # one reply of the broker (runtime/budget.py)
    broker_memory_mb: int = DEFAULT_MEMORY_BYTES >> 20  # parsed documents kept by the broker
    pdf_memory_mb: int = DEFAULT_PDF_MEMORY_BYTES >> 20  # address space of the PDF extractor
    max_pdf_pages: int = DEFAULT_MAX_PDF_PAGES  # pages of one PDF

    def check(self, names: dict[str, str] | None = None) -> None:
        """RunSetupError naming the first limit out of its range; `names` says how the caller
        spells each field (the command line's flags), else the field's own name."""
        for name, lowest, highest, unit in RANGES:
            value = getattr(self, name)
            kinds = (int, float) if name == "timeout" else int
            ok = isinstance(value, kinds) and not isinstance(value, bool) and lowest <= value <= highest
            if ok and name == "timeout" and isinstance(value, int):
                ok = value <= sys.float_info.max  # a deadline is a float: an int past any float sets none
            if not ok:
                top = "" if highest == math.inf else f" to {highest}"
                raise RunSetupError(f"{(names or {}).get(name, name)} must be a number of {unit} from {lowest}{top}, "
                                    f"not {_shown(value)}")

    def worker_limits(self) -> dict:
        return {
            "memory_bytes": self.memory_mb << 20,
            # The wall clock is the real limit; CPU time is a backstop if the broker is stalled.
            "cpu_seconds": max(1, int(min(self.timeout, MAX_CPU_SECONDS)) + 2),
        }
