"""The trusted side: broker, sandbox policy, documents, supervisor, CLI and Python API."""
