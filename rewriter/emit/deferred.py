"""InHost deferred routines: their calls become records that the program runs in batches.

A call of an analysis routine costs, under an emulator, far more than the routine's own
work: the jump to the library and the two returns are indirect-jump lookups, and the
call stub saves the flags. A routine declared ``deferred`` (api.Prototype) reads nothing
but its arguments, so the program may instead append a record of the call (its site
number and run-time arguments, the ReHost record of emit/records.py, appended inline by
the same code) to a ring in its memory. When the ring fills, and at program end before
the tools' end routines, ``anvil_ring_dispatch`` runs the records in order: a loop in
one unit with the tool's C, so the compiler inlines the routines into it. The routines
see the same calls with the same arguments in the same order; only later.

The ring and its flush are the ReHost communicator's (runtime_stubs/common/anvil_comm.c,
built with ANVIL_RING_LOCAL), with what it does about signal and interrupt handlers
that make records (docs/decisions/0010-interrupt-safe-records.md).
"""

from __future__ import annotations

from pathlib import Path

from ..api import Arg, Tool
from ..arch.arm.exclusives import emulates_exclusives
from ..ir.model import Binary
from . import target_build as tb
from .records import RING_END, RING_START, SiteTable, make_records


def defer(binary: Binary, tool: Tool) -> SiteTable | None:
    """Turn every call of ``tool``'s deferred routines into a record (all of them: a call made
    at once would overtake the records before it); the ring starts before the program-start
    routines and its last records run before the program-end ones. Returns the sites, or
    None when there are none."""
    table = SiteTable(tool, binary)
    make_records(binary.procedures, table, lambda hook: hook.prototype.deferred, emulates_exclusives(binary))
    if not table.sites:
        return None
    binary.bracket_program_calls(RING_START, RING_END)
    return table


def ring_unit() -> tb.Generated:
    """The communicator's ring, built to run its records in the program."""
    text = (tb.COMMON_DIR / "anvil_comm.c").read_text()
    return tb.Generated("anvil_ring.c", "#define ANVIL_RING_LOCAL 1\n" + text)


def dispatch_unit(table: SiteTable, tool_sources: list[Path]) -> tb.Generated:
    """The tool's C and, after it, ``anvil_ring_dispatch``: for each record, the routine of
    its site with the static arguments of the site (from a table of the distinct
    (routine, static arguments) pairs) and the run-time ones of the record."""
    combos: dict[tuple[int, tuple[int, ...]], int] = {}
    site_combo = [combos.setdefault((routine, tuple(a for a in args if a is not None)), len(combos))
                  for routine, args in table.sites]
    statics = max(1, max(len(key[1]) for key in combos))
    cases = []
    for index, proto in enumerate(table.routines):
        args, dynamic, static = [], 0, 0
        for kind in proto.kinds:
            if kind.dynamic:
                dynamic += 1
                args.append(f"p[{dynamic}]")
            else:
                # INST_ADDR is link-time in the table (as for the host): the load bias makes it run-time.
                args.append(f"s[{static}]" + (" + anvil_bias" if kind is Arg.INST_ADDR else ""))
                static += 1
        cases.append(f"        case {index}:\n            {proto.name}({', '.join(args)});\n"
                     f"            p += {1 + dynamic};\n            break;\n")
    def smallest(count: int) -> str:  # the C type of an index below ``count``
        return "uint8_t" if count <= 0x100 else "uint16_t" if count <= 0x10000 else "uint32_t"

    combo_rows = ",\n  ".join("{" + ", ".join(f"{v & 0xFFFFFFFF}u" for v in key[1] or (0,)) + "}" for key in combos)
    parts = [path.read_text() + "\n" for path in tool_sources]
    parts += [
        f"static const {smallest(len(combos))} anvil_site_combo[{len(site_combo)}] = "
        f"{{{','.join(map(str, site_combo))}}};\n",
        f"static const {smallest(len(table.routines))} anvil_combo_routine[{len(combos)}] = "
        f"{{{','.join(str(key[0]) for key in combos)}}};\n",
        f"static const uint32_t anvil_combo_args[{len(combos)}][{statics}] = {{\n  {combo_rows}\n}};\n",
        "void anvil_ring_dispatch(const uint32_t *p, const uint32_t *end);\n",
        # flatten: the routines are inlined into the loop, so a record costs no call.
        "__attribute__((flatten)) void anvil_ring_dispatch(const uint32_t *p, const uint32_t *end)\n{\n"
        "    while (p < end) {\n"
        "        uint32_t combo = anvil_site_combo[p[0]];\n"
        "        const uint32_t *s = anvil_combo_args[combo];\n"
        "        (void)s;\n"
        "        switch (anvil_combo_routine[combo]) {\n",
        *cases,
        "        default:\n            return;\n        }\n    }\n}\n",
    ]
    return tb.Generated("anvil_dispatch.c", "".join(parts))
