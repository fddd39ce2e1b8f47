"""What the broker serves over the filesystem layer: documents and PDF text, search, listings,
FilesDSL's op handlers, and the file toolset (and its PydanticAI adapter)."""
