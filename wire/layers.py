"""The worker's hardening layers by name, and what a layer's status means. The worker reports
{layer: status} in its first frame; the broker, `fdsl doctor` and `--isolation strict` read it.

A status is "active", "not needed: ..." (nothing to do, e.g. no root to drop), "off" (left out
by the trusted side for a test or an audit) or "missing: <reason>"."""

from __future__ import annotations

LAYERS = ("netns", "ipcns", "utsns", "pidns", "uid", "no_new_privs", "landlock", "seccomp", "rlimits")
NAMESPACES = ("netns", "ipcns", "utsns", "pidns")
# Layers `--isolation strict` requires: each "active" (or "not needed").
REQUIRED = frozenset(LAYERS)


def is_active(status: str) -> bool:
    return status.startswith("active") or status.startswith("not needed")


def missing_layers(report: dict) -> dict:
    """The layers of a report that are not in force, with their statuses."""
    return {name: status for name, status in report.items() if not is_active(status)}
