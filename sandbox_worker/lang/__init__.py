"""Each language's script-facing objects in the worker: ``lang/<name>`` provides
``restricted_globals(client)``, the namespace its generated code runs in."""
