"""A results file opened at the start stays out of the program's descriptors (decision 0100).

memtrace's InHost trace is opened when the program starts. It took the program's first
free descriptor: every file the program opened got a number one higher than in the
original, and a program that closes the descriptors it did not open (tcsh, daemons) cut
the trace short (tcsh's InHost trace stopped at 852 kB, ReHost's was 300 MB), or one that
put a file of its own there would have had trace records written into it. The runtime now
moves its results files above the program's descriptors (1001 and up), and opens the
file again to write on at its end where the program closed even that one (closefrom).

samples/descriptors.c prints the first descriptor it gets, closes 3-999 (3-1023 with an
argument), puts a file of its own on 3-9 and writes to each. Checked: memtrace's InHost
copy prints what the original prints (the same descriptor numbers, the own file's same
size), its trace holds as many stores into the program's table as the program says it
made, before and after the closing (qemu's own trace is no
oracle here: the program closes qemu's log file too), and ReHost's equals it, complete, in
both cases: its channel is not one of the program's descriptors (decision 0126; before, it
was descriptor 1000, and the second closing cut its stream).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.support.rehost import run_rehost_alone
from tests.support.run import assert_same_behaviour, instrument, place, run_prog, trace_stores
from tests.support.samples import build


@pytest.mark.parametrize("args", [[], ["all"]], ids=["below-1000", "every-one"])
def test_trace_outside_the_programs_descriptors(args: list[str], tmp_path: Path) -> None:
    binary = build("descriptors", "O2-thumb-dyn", ["-no-pie"])  # link-time addresses in the trace
    with open(binary, "rb") as f:
        assert ELFFile(f)["e_type"] == "ET_EXEC"
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, args)
    assert original.returncode == 0, original.stderr
    inhost = run_prog(instrument(binary, "memtrace", tmp_path, fmt="text"), args)
    assert_same_behaviour(original, inhost)
    said = int(re.search(rb"stores into the table: (\d+)", original.stdout).group(1))
    assert trace_stores(binary, inhost.cwd / "prog.memtrace.out", "table") == said

    rehost, outcome = run_rehost_alone(instrument(binary, "memtrace", tmp_path, "--mode", "rehost", fmt="text",
                                                  slot="rhst"), args)
    assert_same_behaviour(original, rehost)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error
    assert (rehost.cwd / "prog.memtrace.out").read_bytes() == (inhost.cwd / "prog.memtrace.out").read_bytes()
