"""Our pydantic models are made with pydantic's plugins off.

A plugin installed in the environment (logfire's is, with pydantic-ai) is imported when the
first model class is made, which cost every `fdsl run` and `from runtime import run_script`
about half a second; our models need none. The switch is pydantic's own
(PYDANTIC_DISABLE_PLUGINS), set only while a module of ours makes its model classes and then
restored, so an application's own models keep their plugins.

    _plugins = PluginsOff()   # before the module's model classes
    ...
    _plugins.restore()        # after them
"""

from __future__ import annotations

import os

KEY = "PYDANTIC_DISABLE_PLUGINS"


class PluginsOff:
    def __init__(self) -> None:
        self.saved = os.environ.get(KEY)
        os.environ[KEY] = "__all__"

    def restore(self) -> None:
        if self.saved is None:
            os.environ.pop(KEY, None)
        else:
            os.environ[KEY] = self.saved
