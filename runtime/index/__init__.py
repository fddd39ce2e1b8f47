"""The index: the memexfs seed's API in Python, and the prefilter that lets FilesDSL's content
searches skip documents that cannot match (docs/index.md).

Public surface (everything else is internal):

    from runtime.index import open_index, Index, MemexError, unknown_tool

    index = open_index("docs")          # a host directory, a Sandbox or a VirtualFS
    index.grep("password reset", glob="billing/**/*.md", max_results=100, ignore_case=True)
        # -> {"hits": [{"path", "line", "content"}, ...], "total": N, "truncated": bool}
    index.read("billing/refunds.md", offset=1, limit=2000)   # numbered lines, "" past the end
    index.stats()                        # documents, lines, bytes, unique_tokens, skipped, memory_bytes
    index.pack("docs.fdslindex")         # fdsl index pack DIR -o FILE
    Index.from_blob("docs.fdslindex")    # a packed snapshot, no directory behind it
    unknown_tool("delete")               # the seed's error for a tool name a dispatcher does not know

Every error is a MemexError with the seed's message (path not found, no documents found,
document not found, invalid regex, unknown tool), naming no host path.
"""

from runtime.index.memex import Index, MemexError, open_index, unknown_tool

__all__ = ["Index", "MemexError", "open_index", "unknown_tool"]
