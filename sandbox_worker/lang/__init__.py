"""Each language's script-facing objects in the worker: ``lang/<name>`` provides
``restricted_globals(client)``, the namespace its generated code runs in, and
``python_message(exc)``, an error Python itself raised, in the language's words."""
