"""The one approvals component: what a run's approver said yes to, remembered by operation
and arguments, so each distinct operation is asked once per run, whichever part of the
runtime (FilesDSL reads and listings, the file toolset, PromptScript's actions) needs it;
and the seed's approval decision (ApprovalResult: blocked, pre_approved or needs_approval)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Literal

from runtime.errors import ApprovalDeniedError

__all__ = ["ApprovalResult", "Approvals", "approval_key", "result_class"]


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


@dataclass(frozen=True)
class ApprovalResult:
    """The seed's approval decision, with the same fields and properties as
    pydantic-ai-blocking-approval's (result_class() is that class when it is installed: its ApprovalToolset checks the type)."""

    status: Literal["blocked", "pre_approved", "needs_approval"]
    block_reason: str | None = None

    @classmethod
    def blocked(cls, reason: str) -> "ApprovalResult":
        return cls("blocked", reason)

    @property
    def reason(self) -> str | None:
        return self.block_reason

    @property
    def is_blocked(self) -> bool:
        return self.status == "blocked"

    @property
    def is_pre_approved(self) -> bool:
        return self.status == "pre_approved"

    @property
    def is_needs_approval(self) -> bool:
        return self.status == "needs_approval"

    @classmethod
    def pre_approved(cls) -> "ApprovalResult":
        return cls("pre_approved")

    @classmethod
    def needs_approval(cls) -> "ApprovalResult":
        return cls("needs_approval")


def result_class() -> type:
    """pydantic-ai-blocking-approval's ApprovalResult when installed (its wrapper checks the
    class), else ours, which has the same fields and properties."""
    try:
        from pydantic_ai_blocking_approval import ApprovalResult as WrapperResult
    except ImportError:
        return ApprovalResult
    return WrapperResult
