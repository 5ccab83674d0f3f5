"""Anvil: static binary instrumentation for ARM Linux ELF binaries.

The instrumentation API (see docs/writing-tools.md)::

    from rewriter import Arg, Point, Tool
"""

from .api import Arg, Option, Options, Point, Prototype, Tool

__all__ = ["Arg", "Option", "Options", "Point", "Prototype", "Tool"]
__version__ = "0.1.0"
