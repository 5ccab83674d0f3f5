"""Record sites: analysis calls turned into records of their run-time arguments.

A record is the site's number and the call's dynamic arguments (rehost/stream.py); the
site table keeps each site's routine and static arguments. ReHost ships the records to
the host (emit/rehost.py); InHost runs deferred routines' records in the program itself
(emit/deferred.py).
"""

from __future__ import annotations

from collections.abc import Callable

from ..api import Arg, Prototype, Tool
from ..arch.arm.exclusives import open_windows
from ..arch.arm.hooks import IN_EXCLUSIVE, RECORD_PREFIX, RecordPrototype
from ..errors import AnvilError
from ..ir.model import Binary, Hook, Instruction, Procedure
from . import site_format
from .sites import image_facts

MAX_SITES = 0xFFFFFF00  # ids above are stream markers (rehost/stream.py)


class SiteTable:
    """The static half of every record: routines, sites, program start/end calls, arrays, facts."""

    def __init__(self, tool: Tool, binary: Binary) -> None:
        self.tool = tool
        self.routines: list[Prototype] = []
        self._routine_index: dict[str, int] = {}
        self.sites: list[tuple[int, list]] = []
        self.start: list[tuple[int, list]] = []
        self.end: list[tuple[int, list]] = []
        self.binary = binary
        self.target_arrays: list[str] = []  # arrays the program fills inline (inline counters, filter counts)

    def filled_by_target(self, array: str) -> None:
        if array not in self.target_arrays:
            self.target_arrays.append(array)

    def routine(self, proto: Prototype) -> int:
        index = self._routine_index.get(proto.name)
        if index is None:
            index = self._routine_index[proto.name] = len(self.routines)
            self.routines.append(proto)
        return index

    def add_site(self, hook: Hook, ins: Instruction, access_index: int | None, block_insns: int) -> None:
        """One site: static arguments as values, dynamic ones as None (in record order)."""
        access = ins.accesses[access_index] if access_index is not None else None
        args: list = []
        for kind, value in zip(hook.prototype.kinds, hook.args):
            if kind.dynamic:
                args.append(None)
            elif kind is Arg.CONST:
                args.append(int(value) & 0xFFFFFFFF)
            elif kind is Arg.STRING:
                args.append(str(value))
            elif kind is Arg.INST_ADDR:
                args.append(ins.address)  # link-time; the host adds the load bias
            elif kind is Arg.BLOCK_INSNS:
                args.append(block_insns)
            elif kind is Arg.ACCESS_SIZE:
                assert access is not None
                args.append(access.size)
            elif kind is Arg.ACCESS_IS_STORE:
                assert access is not None
                args.append(int(access.is_store))
            else:
                raise AnvilError(f"{hook.prototype.name}: argument kind {kind.name} cannot be recorded")
        self.add(hook.prototype, args)

    def add(self, proto: Prototype, args: list) -> None:
        """A site whose arguments are known already: static values, None where the record
        carries the value (an ISA that makes its records without Hook rewriting: x86-64)."""
        if len(self.sites) >= MAX_SITES:
            raise AnvilError("too many ReHost sites")
        self.sites.append((self.routine(proto), args))

    def program_call(self, hook: Hook) -> tuple[int, list]:
        for kind in hook.prototype.kinds:
            if kind not in (Arg.CONST, Arg.STRING):
                raise AnvilError(f"{hook.prototype.name}: program start/end calls take CONST and STRING only")
        args = [str(v) if k is Arg.STRING else int(v) & 0xFFFFFFFF for k, v in zip(hook.prototype.kinds, hook.args)]
        return self.routine(hook.prototype), args

    def document(self, target_arrays: list[str], channel: dict | None = None) -> dict:
        """The site table file's content; ``channel``: how a firmware image's records leave it."""
        arrays = [{"name": name, "ctype": ctype, "length": length, "from_target": name in target_arrays}
                  for name, (ctype, length) in self.tool.arrays.items()]
        extra: dict = {"channel": channel} if channel else {}
        if self.binary.address_bytes != 4:  # (an ARM program's table, and so its digest, as it was)
            extra["word_bytes"] = self.binary.address_bytes
        if not self.binary.forks:  # (absent: it may fork, as every table before said)
            extra["forks"] = False
        if self.tool.analysis_sources is not None:  # a tool file's C: what `anvil run` builds for its local server
            extra["analysis_sources"] = [str(p) for p in self.tool.analysis_sources]
        return {
            "format": site_format.FORMAT,
            "version": site_format.VERSION,
            "tool": self.tool.name,
            "routines": [{"name": p.name, "kinds": [k.value for k in p.kinds]} for p in self.routines],
            "sites": [[r, a] for r, a in self.sites],
            "start": [[r, a] for r, a in self.start],
            "end": [[r, a] for r, a in self.end],
            "arrays": arrays,
            "facts": image_facts(self.binary),
            **extra,
        }


RING_START = Prototype("anvil_rh_start", ())  # the communicator's ring is ready (a program start call)
RING_END = Prototype("anvil_rh_end", ())      # the last records go (a program end call)


def make_records(procedures: list[Procedure], table: SiteTable, chosen: Callable[[Hook], bool],
                 emulate_exclusives: bool) -> None:
    """Replace the ``chosen`` hooks of ``procedures``, their blocks and instructions by record
    calls, their sites numbered in ``table``. ``emulate_exclusives``: the copy runs the
    program's exclusive pairs as compare-and-swap where it can (arch/arm/exclusives.py), so that
    only the windows of the others need records without exclusives."""
    for proc in procedures:
        _procedure_records(proc, table, chosen, emulate_exclusives)


def _procedure_records(proc: Procedure, table: SiteTable, chosen: Callable[[Hook], bool],
                       emulate_exclusives: bool) -> None:
    windows: list[set[int]] = []  # the procedure's exclusive windows, found when first needed

    def site(hook: Hook, ins: Instruction, access: int | None, size: int) -> Hook:
        if not chosen(hook):
            return hook
        if not windows:
            windows.append(open_windows(proc, emulate_exclusives))
        return _site(table, hook, ins, access, size, windows[0])

    if proc.hooks:
        entry = proc.blocks[0]
        proc.hooks = [site(h, entry.instructions[0], None, entry.size) for h in proc.hooks]
    for block in proc.blocks:
        block.hooks = [site(h, block.instructions[0], None, block.size) for h in block.hooks]
        for ins in block.instructions:
            if not ins.hooks:
                continue
            rewritten = []
            for hook in ins.hooks:
                if not chosen(hook):
                    rewritten.append(hook)
                    continue
                if hook.prototype.per_access:
                    if not ins.accesses:
                        continue
                    record = site(hook, ins, 0, block.size)
                    for i in range(1, len(ins.accesses)):
                        table.add_site(hook, ins, i, block.size)
                else:
                    record = site(hook, ins, None, block.size)
                rewritten.append(record)
            ins.hooks = rewritten


def _site(table: SiteTable, hook: Hook, ins: Instruction, access_index: int | None, block_insns: int,
          inside: set[int]) -> Hook:
    """The record call standing for ``hook`` at ``ins``; ``inside``: the addresses in the
    program's own exclusive windows (exclusives.open_windows), where the record takes the
    communicator's form without exclusives."""
    site = len(table.sites)
    table.add_site(hook, ins, access_index, block_insns)
    if hook.prototype.filter:  # the target counts the calls its filter skips
        table.filled_by_target(hook.prototype.filter.counter)
    dynamic = [(k, v) for k, v in zip(hook.prototype.kinds, hook.args) if k.dynamic]
    if len(dynamic) > 3:
        raise AnvilError(f"{hook.prototype.name}: records (ReHost, deferred routines) carry at most 3 "
                         "run-time arguments")
    in_exclusive = ins.address in inside
    name = f"{RECORD_PREFIX}{len(dynamic)}{IN_EXCLUSIVE if in_exclusive else ''}"
    proto = RecordPrototype(name, (Arg.SITE_ID, *(k for k, _ in dynamic)), each_access=access_index is not None,
                            original=hook, in_exclusive=in_exclusive)
    return Hook(hook.point, proto, (site, *(v for _, v in dynamic)))


