"""The one approvals component: what a run's approver said yes to, remembered by operation
and arguments, so each distinct operation is asked once per run, whichever part of the
runtime (FilesDSL reads and listings, the file toolset, PromptScript's actions) needs it."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

from runtime.errors import ApprovalDeniedError

__all__ = ["Approvals", "approval_key"]


def approval_key(name: str, tool_args: dict[str, Any]) -> str:
    """What an approval is remembered by: the tool and all its arguments (content hashed)."""
    blob = json.dumps([name, tool_args], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class Approvals:
    def __init__(self, approve: Callable[[str], bool] | None = None) -> None:
        self.approve = approve  # approve(description) -> bool; None: nobody can be asked
        self.granted: set[str] = set()

    def ask(self, name: str, args: dict[str, Any], description: str, hint: str = "") -> None:
        """Return if ``name(args)`` is approved (now or before); else ApprovalDeniedError saying
        why, with ``hint`` (what may be done without approval) after it."""
        key = approval_key(name, args)
        if key in self.granted:
            return
        tail = f" {hint}" if hint else ""
        if self.approve is None:
            raise ApprovalDeniedError(f"{description}: needs approval and no one can approve it here.{tail}")
        if not self.approve(description):
            raise ApprovalDeniedError(f"{description}: not approved.{tail}")
        self.granted.add(key)
