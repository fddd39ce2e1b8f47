"""`fdsl ls PATH [--json] [--recursive] [--offset N] [--limit N]` and `fdsl find PATH GLOB [--json]`.

Structured listings (runtime/services/listing.py) of the sandbox built from --root/--mount/--config.
Text output is one entry per line, as FilesDSL prints entries but with absolute virtual
paths: `file /docs/guide.md (56 bytes)`, `directory /docs/sub`, `symlink /docs/l -> /docs/a.md`.
--json prints the entries as a JSON list with their "@type". A refusal exits 1 with
"SandboxError: ..." on stderr; usage errors exit 2.
"""

from __future__ import annotations

import json
import sys

from runtime.errors import ScriptError
from runtime.fs.vfs import VirtualFS
from runtime.services.files import find_files, list_directory, page
from runtime.services.listing import FileSystemEntry, SymbolicLinkEntry

_KINDS = {"FileEntry": "file", "DirectoryEntry": "directory", "SymbolicLinkEntry": "symlink", "OtherEntry": "other"}


def describe(entry: FileSystemEntry) -> str:
    kind = _KINDS[type(entry).__name__]
    text = f"{kind} {entry.path}"
    if isinstance(entry, SymbolicLinkEntry):
        text += f" -> {entry.target}"
    elif kind == "file":
        text += f" ({entry.size} bytes)"
    return text


def command_listing(args, sandbox, approve) -> int:
    vfs = VirtualFS(sandbox, approve=approve)
    try:
        if args.command == "ls":
            if args.recursive:
                entries = page(find_files(vfs, args.path, True, "**"), args.offset, args.limit)
            else:
                entries = list_directory(vfs, args.path, offset=args.offset, limit=args.limit)
        else:
            entries = find_files(vfs, args.path, True, args.glob)
    except ScriptError as exc:
        print(f"{exc.kind}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        json.dump([e.to_json() for e in entries], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for e in entries:
            sys.stdout.write(describe(e) + "\n")
    return 0
