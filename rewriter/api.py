"""The instrumentation API: tools, prototypes of analysis routines, argument kinds.

A tool is a class with a name, options and an ``instrument`` method. It declares the
analysis routines it calls (``prototype``) with typed argument kinds, then walks the
IR and attaches calls::

    class InsCount(Tool):
        name = "inscount"
        def instrument(self, binary, opts):
            for proc in binary.select(opts.only, opts.skip):
                for block in proc.blocks:
                    block.increment("blocks", block.index)

The analysis routines themselves are C in ``analysis_libs/<tool>/<tool>.c``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .errors import AnvilError
from .ir.model import Binary, Point

__all__ = ["Arg", "Option", "Options", "Point", "Prototype", "Tool"]


class Arg(Enum):
    """Kinds of argument an analysis routine can receive (each one 32-bit word)."""

    CONST = "const"              # an integer given at instrumentation time
    STRING = "string"            # a string given at instrumentation time (const char *)
    INST_ADDR = "inst_addr"      # runtime address of the instruction
    EFFADDR = "effaddr"          # effective address of one memory access
    ACCESS_SIZE = "access_size"  # size in bytes of that access
    ACCESS_IS_STORE = "is_store"  # 1 for a store, 0 for a load
    BLOCK_INSNS = "block_insns"  # number of instructions in the enclosing block
    REG_VALUE = "reg_value"      # value of a register before the instruction (number given)
    SITE_ID = "site_id"          # ReHost: the record's site number (given; + access index per access)

    @property
    def dynamic(self) -> bool:
        """Kinds whose value is only known when the program runs (ReHost ships these)."""
        return self in (Arg.EFFADDR, Arg.REG_VALUE)

    @property
    def per_access(self) -> bool:
        """Kinds that make one call per memory access of the instruction."""
        return self in (Arg.EFFADDR, Arg.ACCESS_SIZE, Arg.ACCESS_IS_STORE)


@dataclass
class Prototype:
    """An analysis routine's name and the kinds of its arguments (at most four)."""

    name: str
    kinds: tuple[Arg, ...]

    def check_args(self, args: tuple) -> None:
        """Check the values given at a call site: one per kind, in order.

        CONST takes an int, STRING a str, REG_VALUE a register number 0-15; every
        other kind is computed by the hook and is given as the kind itself.
        """
        if len(args) != len(self.kinds):
            raise AnvilError(f"{self.name}: expected {len(self.kinds)} arguments, got {len(args)}")
        for kind, value in zip(self.kinds, args):
            ok = {
                Arg.CONST: isinstance(value, int),
                Arg.STRING: isinstance(value, str),
                Arg.REG_VALUE: isinstance(value, int) and 0 <= value <= 15,
                Arg.SITE_ID: isinstance(value, int),
            }.get(kind, value is kind)
            if not ok:
                raise AnvilError(f"{self.name}: argument {value!r} does not fit kind {kind.name}")

    @property
    def per_access(self) -> bool:
        return any(k.per_access for k in self.kinds)


@dataclass
class Option:
    """A tool option given as ``--opt name=value``; ``check`` returns a problem or None."""

    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = int
    check: Callable[[Any], str | None] = lambda v: None


@dataclass
class Options:
    """The options a tool's ``instrument`` sees: its own values plus the common ones."""

    values: dict[str, Any] = field(default_factory=dict)
    only: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    out: str = ""
    format: str = "text"

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None


class Tool:
    """Base class of instrumentation tools."""

    name: str = ""
    description: str = ""
    options: list[Option] = []

    def __init__(self) -> None:
        self.prototypes: dict[str, Prototype] = {}
        self.arrays: dict[str, tuple[str, int]] = {}

    def prototype(self, name: str, *kinds: Arg) -> Prototype:
        """Declare (or fetch) the analysis routine ``name`` taking arguments of ``kinds``."""
        if len(kinds) > 4:
            raise AnvilError(f"{name}: analysis routines take at most 4 arguments")
        proto = self.prototypes.get(name)
        if proto is None:
            proto = self.prototypes[name] = Prototype(name, tuple(kinds))
        return proto

    def array(self, name: str, length: int, ctype: str = "uint64_t") -> str:
        """Declare a zero-filled array visible to the C code as ``<ctype> anvil_array_<name>[length]``.

        Arrays of the default type are 64-bit counters that ``Block.increment`` can bump inline.
        """
        self.arrays[name] = (ctype, max(length, 1))
        return name

    def instrument(self, binary: Binary, opts: Options) -> None:  # pragma: no cover - abstract
        """Attach hooks to ``binary``."""
        raise NotImplementedError

    def parse_options(self, pairs: dict[str, str]) -> dict[str, Any]:
        """Turn ``name=value`` strings into checked option values, defaults filled in."""
        known = {o.name: o for o in self.options}
        values = {o.name: o.default for o in self.options}
        for key, raw in pairs.items():
            opt = known.get(key)
            if opt is None:
                names = ", ".join(known) or "none"
                raise AnvilError(f"unknown option '{key}' for tool {self.name} (options: {names})")
            try:
                value = opt.parse(raw)
            except (ValueError, TypeError):
                raise AnvilError(f"bad value '{raw}' for option {key} of tool {self.name}") from None
            values[key] = value
        for opt in self.options:
            problem = opt.check(values[opt.name])
            if problem:
                raise AnvilError(f"option {opt.name}={values[opt.name]} of tool {self.name}: {problem}")
        return values
