"""FilesDSL in the worker: Directory and File proxies (api.py) and the per-type guards
(guards.py) its generated code runs with."""

from .api import python_message
from .guards import restricted_globals

__all__ = ["restricted_globals", "python_message"]
