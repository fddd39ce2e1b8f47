"""The Sandbox's configuration: mounts validated by pydantic, and the TOML file."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runtime.errors import SandboxConfigError
from runtime.plugins_off import PluginsOff

_POINT_COMPONENT_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f\\]|[\ud800-\udfff]")


_plugins = PluginsOff()  # our models need no pydantic plugin (runtime/plugins_off.py)


class Mount(BaseModel):
    """A host directory shown at a virtual mount point."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host_path: Path
    mount_point: str
    mode: Literal["ro", "rw"] = "ro"
    suffixes: list[str] | None = None
    max_file_bytes: int | None = Field(default=None, ge=0)
    write_approval: bool = True
    read_approval: bool = False

    @field_validator("mount_point")
    @classmethod
    def _point(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"must start with '/' (got {value!r})")
        if value != "/" and value.endswith("/"):
            raise ValueError(f"cannot end with '/' (got {value!r}; only '/' itself may)")
        if value != "/":
            for comp in value[1:].split("/"):
                if comp in ("", ".", ".."):
                    raise ValueError(f"must be a normalized path without '//', '.' or '..' (got {value!r})")
                if _POINT_COMPONENT_BAD.search(comp):
                    raise ValueError(f"contains a control character or a backslash (got {value!r})")
        return value

    @field_validator("suffixes")
    @classmethod
    def _suffixes(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        out = []
        for s in value:
            if not s.startswith(".") or len(s) < 2 or "/" in s or "\x00" in s:
                raise ValueError(f"each suffix must look like '.md' (got {s!r})")
            out.append(s.lower())
        return out

    @field_validator("host_path")
    @classmethod
    def _host(cls, value: Path) -> Path:
        if str(value) == "" or "\x00" in str(value):
            raise ValueError("must be a directory path")
        return value

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in self.mount_point.split("/") if p)


class SandboxConfig(BaseModel):
    """Top-level configuration: at least one mount."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mounts: list[Mount] = Field(min_length=1)

    @model_validator(mode="after")
    def _rules(self) -> "SandboxConfig":
        seen: dict[str, int] = {}
        for i, m in enumerate(self.mounts):
            if m.mount_point in seen:
                raise ValueError(
                    f"mounts[{i}].mount_point: duplicate mount point {m.mount_point!r} (also mounts[{seen[m.mount_point]}])"
                )
            seen[m.mount_point] = i
        # Host paths given as absolute paths are checked here; relative ones (and symlinked
        # ones) again by Sandbox once base_path is known.
        absolute = [(i, os.path.normpath(str(m.host_path))) for i, m in enumerate(self.mounts) if m.host_path.is_absolute()]
        _check_overlaps(absolute)
        return self


_plugins.restore()


def _check_overlaps(paths: list[tuple[int, str]]) -> None:
    for a in range(len(paths)):
        for b in range(a + 1, len(paths)):
            (i, p), (j, q) = paths[a], paths[b]
            if p == q:
                raise ValueError(f"mounts[{j}].host_path: the same directory as mounts[{i}].host_path")
            if _inside(p, q) or _inside(q, p):
                raise ValueError(
                    f"mounts[{j}].host_path: overlaps mounts[{i}].host_path "
                    "(one mount's host directory cannot be inside another's)"
                )


def _inside(path: str, root: str) -> bool:
    """Is `path` strictly or equally inside `root` (both normalized, absolute)?"""
    if path == root:
        return True
    return path.startswith(root.rstrip("/") + "/")


def format_validation_error(exc: ValidationError, source: str | None = None) -> str:
    """One line per problem, each naming the field: 'mounts[1].mount_point: must start with '/''."""
    lines = []
    for err in exc.errors():
        loc = ""
        for item in err.get("loc", ()):
            loc += f"[{item}]" if isinstance(item, int) else (f".{item}" if loc else str(item))
        msg = err.get("msg", "invalid")
        msg = re.sub(r"^(Value|Assertion) error, ", "", msg)
        if re.match(r"^mounts\[\d+\]\.\w+: ", msg):  # model-level rules name their own field
            lines.append(msg)
        else:
            lines.append(f"{loc}: {msg}" if loc else msg)
    prefix = f"{source}: " if source else ""
    return "; ".join(prefix + line for line in lines)


def config_from_data(data, source: str | None = None) -> SandboxConfig:
    """Build a SandboxConfig from plain data, turning errors into one SandboxConfigError line."""
    try:
        return SandboxConfig.model_validate(data)
    except ValidationError as exc:
        raise SandboxConfigError(format_validation_error(exc, source)) from None


def load_config(path: str | Path) -> tuple[SandboxConfig, Path]:
    """Read a sandbox TOML file: `[[mounts]]` tables with the Mount fields. Returns the config
    and its base path (the file's directory: relative host paths are relative to the file)."""
    import tomllib

    path = Path(path)
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise SandboxConfigError(f"{path}: no such configuration file") from None
    except IsADirectoryError:
        raise SandboxConfigError(f"{path}: is a directory, not a configuration file") from None
    except UnicodeDecodeError:
        raise SandboxConfigError(f"{path}: is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SandboxConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise SandboxConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return config_from_data(data, str(path)), path.resolve().parent
