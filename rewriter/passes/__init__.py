"""The tools that ship with Anvil, by name."""

from __future__ import annotations

from ..api import Tool
from .bbcount import BBCount
from .cachesim import CacheSim
from .inscount import InsCount
from .memtrace import MemTrace

TOOLS: dict[str, type[Tool]] = {t.name: t for t in (InsCount, BBCount, CacheSim, MemTrace)}
