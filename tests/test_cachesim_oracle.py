"""cachesim against an independent oracle: unicorn's stream of data accesses of a
freestanding program, fed to a plain-Python reference cache, must give exactly the
hits and misses the instrumented program reports about itself under qemu-arm."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.oracles.cache_model import simulate
from tests.oracles.freestanding import build_freestanding
from tests.oracles.unicorn_trace import INITIAL_SP, STACK_SIZE, STACK_TOP, run_freestanding
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog


def initial_sp(binary: Path) -> int:
    """SP at the entry point under qemu-arm (same path and argv[0] as run_prog), from -d cpu."""
    log = binary.parent / "cpu.log"
    subprocess.run(["env", "-i", "qemu-arm", "-0", "prog", "-d", "cpu", "-D", str(log), str(binary.resolve())],
                   capture_output=True, check=False)
    with open(log, "rb") as f:
        head = f.read(4096).decode()
    log.unlink()
    return int(re.search(r"R13=([0-9a-f]{8})", head).group(1), 16)


def on_qemu_stack(accesses: list, sp: int) -> list:
    """Unicorn's accesses with its stack moved to where qemu-arm puts the stack."""
    lo = STACK_TOP - STACK_SIZE
    return [(kind, addr - INITIAL_SP + sp if lo <= addr < STACK_TOP else addr, size)
            for kind, addr, size in accesses]


@pytest.mark.parametrize("geometry", [(16384, 8, 64, 2), (1024, 2, 32, 2), (256, 1, 16, 2), (4096, 64, 64, 2),
                                      (16384, 8, 64, 1), (1024, 2, 32, 1), (262144, 4, 64, 2)])
@pytest.mark.parametrize("flags", [(), ("-marm",)], ids=["thumb", "arm"])
@pytest.mark.parametrize("name", ["memwalk", "bubble"])
def test_cachesim_matches_reference(name: str, flags: tuple, geometry: tuple, tmp_path) -> None:
    # kept: lines per set the program tests inline; 256 KiB: a slot table too large for the
    # counter after it to be in reach of the T32 test's base register (repeat_filter.filter_test).
    size, assoc, line, kept = geometry
    binary = build_freestanding(name, flags)
    oracle = run_freestanding(binary)
    placed = place(binary, tmp_path, "orig")
    expected = simulate(on_qemu_stack(oracle.accesses, initial_sp(placed)), size, assoc, line)
    original = run_prog(placed)
    assert original.stdout == oracle.stdout
    opts = f"size={size},assoc={assoc},line={line},kept={kept}"
    inst = run_prog(instrument(binary, "cachesim", tmp_path, "--opt", opts))
    assert_same_behaviour(original, inst)
    got = results(inst, "cachesim")
    for key in ("loads", "stores", "load_misses", "store_misses"):
        assert got[key] == expected[key], (key, got, expected)


@pytest.mark.parametrize("flags", [(), ("-marm",)], ids=["thumb", "arm"])
def test_memtrace_matches_unicorn(flags: tuple, tmp_path) -> None:
    """INST_ADDR, EFFADDR, ACCESS_SIZE, ACCESS_IS_STORE: the whole access stream, in order."""
    binary = build_freestanding("memwalk", flags)
    oracle = run_freestanding(binary, count_instructions=True)
    placed = place(binary, tmp_path, "orig")
    expected = on_qemu_stack(oracle.accesses, initial_sp(placed))
    original = run_prog(placed)
    inst = run_prog(instrument(binary, "memtrace", tmp_path))
    assert_same_behaviour(original, inst)
    got = results(inst, "memtrace")
    assert got["accesses"] == len(expected)
    assert [(kind, ea, size) for _pc, ea, size, kind in got["records"]] == expected
    assert {pc for pc, *_ in got["records"]} <= set(oracle.pcs)
