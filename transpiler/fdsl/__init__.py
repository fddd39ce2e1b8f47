"""FilesDSL: read-only exploration of a document collection (grammar.lark is its reference)."""
