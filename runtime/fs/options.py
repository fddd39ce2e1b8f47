"""A run's sandbox: --config's mounts, then --root or --project, then each --mount, as one
Sandbox, with every configuration error named after the option or file entry it came from.
The command line and run_script build it here, for both languages."""

from __future__ import annotations

import os
import re
from pathlib import Path

from runtime.errors import SandboxConfigError
from runtime.fs.config import config_from_data, load_config
from runtime.fs.sandbox import Sandbox


def sandbox_from_options(
    root: str | Path | None = None,
    mounts: list | tuple = (),
    config_path: str | Path | None = None,
    project: str | Path | None = None,
    write_approval: bool = True,
) -> Sandbox:
    """The Sandbox of a run: the TOML file's mounts (relative host paths are relative to the
    file), then `root` at "/" read-only, or `project` at "/" read-write (PromptScript's
    project: writes ask the approver unless `write_approval` is False), then each `mounts`
    item (MountSpec-like: host_path, mount_point, writable) relative to the cwd. With none of
    them, the current directory is the root. Raises SandboxConfigError with one line naming
    the option or the file's entry that is wrong ("--mount out:/out host_path: overlaps --root")."""
    items: list[dict] = []
    labels: list[str] = []
    if config_path is not None:
        config, base = load_config(config_path)
        for i, m in enumerate(config.mounts):
            data = m.model_dump()
            host = m.host_path if m.host_path.is_absolute() else base / m.host_path
            data["host_path"] = os.path.abspath(host)
            items.append(data)
            labels.append(f"{config_path}: mounts[{i}]")
    if root is None and project is None and config_path is None and not mounts:
        root = "."
    if root is not None:
        items.append({"host_path": os.path.abspath(root), "mount_point": "/", "mode": "ro"})
        labels.append(f"--root {root}")
    if project is not None:
        items.append({"host_path": os.path.abspath(project), "mount_point": "/", "mode": "rw",
                      "write_approval": write_approval})
        labels.append(f"--project {project}")
    for spec in mounts:
        items.append({"host_path": os.path.abspath(spec.host_path), "mount_point": spec.mount_point,
                      "mode": "rw" if spec.writable else "ro"})
        labels.append(f"--mount {spec.host_path}:{spec.mount_point}{':rw' if spec.writable else ''}")

    def named(message: str) -> str:
        return re.sub(r"mounts\[(\d+)\](?:\.(\w+))?",
                      lambda m: labels[int(m.group(1))] + (f" {m.group(2)}" if m.group(2) else ""), message)

    try:
        return Sandbox(config_from_data({"mounts": items}))
    except SandboxConfigError as exc:
        raise SandboxConfigError("; ".join(named(line) for line in str(exc).split("; "))) from None
