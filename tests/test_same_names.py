"""Procedures that share a name (static functions of the same name in two source files)
are counted apart: each is named in the results with its address (``f@0x1234``), InHost
and ReHost alike (``sites.result_names``); before, one's counts replaced the other's in
the per-procedure table (the total stayed right).

Oracle: qemu's count of the instructions run in each procedure's range.
"""

from __future__ import annotations

import json
from pathlib import Path

from rewriter.api import Options
from rewriter.emit import inhost
from rewriter.ir.elf_loader import load_binary
from rewriter.passes import TOOLS
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import place, run_prog
from tests.support.samples import build


def test_procedures_of_one_name_are_counted_apart(tmp_path: Path) -> None:
    program = place(build("sort", "O2-thumb-dyn"), tmp_path, "orig")
    pcs = exe_pcs(trace_pcs(program, [], cwd=tmp_path), program)
    binary = load_binary(str(program))
    ran = {proc.address: sum(n for pc, n in pcs.items() if proc.address <= pc < proc.end)
           for proc in binary.procedures}
    first, second = sorted((proc for proc in binary.procedures if ran[proc.address] and not proc.name.endswith("@plt")),
                           key=lambda proc: -ran[proc.address])[:2]
    second.name = first.name  # as a second file's static function of that name would be
    tool = TOOLS["inscount"]()
    dest = tmp_path / "inst" / "prog"
    dest.parent.mkdir()
    inhost.instrument(binary, tool, Options(values=tool.parse_options({}), out="prog.inscount.out", format="json"),
                      str(dest))
    run = run_prog(dest)
    assert run.returncode == 0, run.stderr
    counted = json.loads((run.cwd / "prog.inscount.out").read_text())["procedures"]
    assert first.name not in counted
    assert counted[f"{first.name}@{first.address:#x}"] == ran[first.address]
    assert counted[f"{first.name}@{second.address:#x}"] == ran[second.address]
