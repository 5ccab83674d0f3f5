"""Code that reads the stack below SP after releasing it (OCaml's tail calls, decision 0108).

``samples/reads_below_sp.c`` releases a frame and then reloads LR and an argument from
under SP, in T32 and A32, and names d16 (so hooks keep their scratch registers on the
stack, as in Debian's OCaml programs). Before the fix a counter's push between the two
overwrote the return address: the copy jumped to a number and died of SIGSEGV. The
oracles: the original's behaviour, qemu's count of its instructions, and for the sites'
own view of SP, memtrace's addresses of the loads below SP against the original's
(where SP is read from the trace of the same run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.arch.arm.relocate import reads_below_sp
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_accesses import trace_accesses
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog, traced_original
from tests.support.samples import build


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-static"])
def test_stack_read_below_sp_survives_the_sites(variant: str, tmp_path: Path) -> None:
    program = build("reads_below_sp", variant)
    original, pcs, _ = traced_original(program, tmp_path)
    assert original.returncode in (3, 6), original.stderr
    for tool in ("inscount", "bbcount", "cachesim"):
        inst = run_prog(instrument(program, tool, tmp_path, slot=tool[:4]))
        assert_same_behaviour(original, inst)
        if tool == "inscount":
            assert results(inst, "inscount")["total"] == sum(pcs.values())


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])  # the oracle computes no glibc NEON
def test_addresses_read_below_sp_are_the_originals(variant: str, tmp_path: Path) -> None:
    """memtrace's addresses of the reads below SP (computed by sites that stepped SP down)
    against qemu's register state before each of them in the original's run."""
    program = build("reads_below_sp", variant)
    procs = {p.name: p for p in load_binary(str(program)).procedures}
    reads = {ins.address for name in ("tail_thumb", "tail_arm") for ins in procs[name].instructions()
             if any(a.base == 13 and a.disp < 0 and not a.is_store for a in ins.accesses)}
    placed = place(program, tmp_path, "orig")
    oracle = trace_accesses(placed.resolve(), argv0="prog")
    want = [(pc, address) for pc, address, _size, _store in oracle.accesses if pc in reads]
    assert len(want) == 4 * 300 + 300  # LR and the argument, twice; the doubleword once a call
    copy = run_prog(instrument(program, "memtrace", tmp_path, fmt="text"))
    assert (copy.returncode, copy.stdout) == (oracle.returncode, oracle.stdout)
    got = []
    with open(copy.cwd / "prog.memtrace.out") as f:
        for line in f:
            if not line.startswith("#"):
                pc, address, _size, _kind = line.split()
                at = int(pc, 16) - oracle.load_bias  # the original's run-time PC, as memtrace records it
                if at in reads:
                    got.append((at, int(address, 16)))
    assert got == want


def test_stack_read_below_sp_rehost(tmp_path: Path, rehost_server: str) -> None:
    """ReHost's records are pushed by the same sites: cachesim's results equal InHost's."""
    from tests.support.rehost import assert_rehost_results_equal

    program = build("reads_below_sp", "O2-thumb-dyn")
    original, _, _ = traced_original(program, tmp_path)
    assert_rehost_results_equal(program, original, tmp_path, rehost_server)


def test_the_reads_are_found_from_the_block_start() -> None:
    """The instructions of each tail block up to its last read below SP step over what the
    reads reach at or after them (in 8-byte steps: 8 for LR at -4, 16 for -12 and for the
    doubleword at -16); the blocks before the call and main need none."""
    binary = load_binary(str(build("reads_below_sp", "O2-arm-static")))
    procs = {p.name: p for p in binary.procedures}
    for name, last_step in (("tail_thumb", 16), ("tail_arm", 8)):
        proc = procs[name]
        below = reads_below_sp(proc)
        reads = [ins for ins in proc.instructions()
                 if any(a.base == 13 and a.disp < 0 and not a.is_store for a in ins.accesses)]
        assert len(reads) == 2, name
        tail = reads[-1].block
        assert below[reads[-1].address] == last_step
        assert max(below.values()) == 16
        assert set(below) == {ins.address for ins in tail.instructions if ins.address <= reads[-1].address}
    assert not reads_below_sp(procs["main"])
