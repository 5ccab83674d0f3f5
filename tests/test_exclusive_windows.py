"""Hooks inside a threaded program's LDREX/STREX windows (decision 0093).

samples/exclusive_windows.c: threads add to shared counters with word, halfword and byte
exclusive pairs whose windows hold a load of a global (as Go's compare-and-swap reads
runtime.goarm between its LDREX and STREX), with a compare-and-swap whose STREX is
conditional (``it eq; strexeq``), with C11 atomics and a mutex (the compiler's and
glibc's own pairs). A hook inside a window that takes the analysis lock
(its LDREX/STREX) clears the monitor: the program's STREX fails, its loop runs the hook
again, for ever. Before: memtrace's copies ran until killed (gigabytes of trace) in a
static and a dynamic program alike, its ReHost copies died of SIGSEGV (records appended
without the lock by several threads). The copy now runs the pairs as compare-and-swap.

Built for ARMv8 the C11 atomics are LDAEX/STLEX pairs (byte to doubleword), which ran
for ever under memtrace before decision 0096 emulated them too; and a STREX after CLREX
must fail (the sample's store_after), which an emulated one did not (it found its address
and value unchanged and stored).

Checked: the copies print what the original prints and exit 0, which the sample does only
when every total is exact (a pair that lost atomicity drops increments) and the STREX after
CLREX failed; memtrace's trace holds, for each window, as many loads at its LDREX as at
the load inside and stores at its STREX (one of each per attempt); with one thread (no
retries) those counts equal qemu's count of the instructions (``-singlestep -d exec,nochain``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import capstone
import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost_alone
from tests.support.run import assert_same_behaviour, instrument, place, run_prog
from tests.support.samples import build

ROUNDS = 20000  # samples/exclusive_windows.c


def _windows(binary: Path) -> dict[str, tuple[int, int, int]]:
    """Function -> (its LDREX's address, the load after it, its STREX's), from the symbols
    and capstone (the link-time addresses: the builds below are not PIE)."""
    with open(binary, "rb") as f:
        elf = ELFFile(f)
        # GCC may rename them (add_word.constprop.0)
        symbols = {s.name.split(".")[0]: s for s in elf.get_section_by_name(".symtab").iter_symbols()
                   if s["st_info"]["type"] == "STT_FUNC"}
        text = elf.get_section_by_name(".text")
        data, base = text.data(), text["sh_addr"]
    found = {}
    for name in ("add_word", "add_half", "add_byte"):
        sym = symbols[name]
        start, thumb = sym["st_value"] & ~1, sym["st_value"] & 1
        md = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB if thumb else capstone.CS_MODE_ARM)
        code = data[start - base:start - base + sym["st_size"]]
        insns = [(a, m) for a, _, m, _ in md.disasm_lite(code, start)]
        i = next(k for k, (_, m) in enumerate(insns) if m.startswith("ldrex"))
        store = next(a for a, m in insns[i:] if m.startswith("strex"))
        found[name] = (insns[i][0], insns[i + 1][0], store)
    return found


def _trace(path: Path) -> Counter[tuple[int, str]]:
    """memtrace's text trace as (instruction address, L/S) -> accesses. (One regular
    expression over the whole file: a run's trace is some 90 MB, 2 million lines.)"""
    lines = Counter(re.findall(rb"^(0x[0-9a-f]+) \S+ \S+ ([LS])$", path.read_bytes(), re.M))
    return Counter({(int(pc, 16), kind.decode()): n for (pc, kind), n in lines.items()})


def _check_windows(trace: Counter[tuple[int, str]], windows: dict[str, tuple[int, int, int]],
                   rounds: int) -> None:
    for name, (ldrex, load, strex) in windows.items():
        attempts = trace[ldrex, "L"]
        assert attempts >= rounds and trace[load, "L"] == attempts and trace[strex, "S"] == attempts, \
            (name, attempts, trace[load, "L"], trace[strex, "S"])


# Static T32 and A32 (glibc's locks inside), dynamic T32 (the program's own pairs alone);
# built for ARMv8, whose C11 atomics are acquire/release pairs (LDAEX/STLEX, LDAEXB...).
# The ARMv7 A32 static build in the extended tier: its glibc is the ARMv8 one's (the same
# libc.a), whose A32 windows that build checks by default (decision 0185).
ARMV8 = ["-march=armv8-a+simd"]
VARIANTS = [("Os-thumb-static", []), pytest.param("O2-arm-static", [], marks=pytest.mark.extended),
            ("O2-thumb-dyn", ["-no-pie"]), ("O2-thumb-dyn", ["-no-pie", *ARMV8]), ("O2-arm-static", ARMV8)]
IDS = ["thumb-static", "arm-static", "thumb-dyn", "armv8-thumb-dyn", "armv8-arm-static"]


@pytest.mark.parametrize(("variant", "extra"), VARIANTS, ids=IDS)
def test_memtrace_inside_exclusive_windows(variant: str, extra: list[str], tmp_path: Path) -> None:
    binary = build("exclusive_windows", variant, extra)
    assert load_binary(str(binary)).threaded
    windows = _windows(binary)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 0, original.stdout

    inst = instrument(binary, "memtrace", tmp_path, fmt="text")
    copy = run_prog(inst, timeout=120)
    assert_same_behaviour(original, copy)
    _check_windows(_trace(copy.cwd / "prog.memtrace.out"), windows, 4 * ROUNDS)

    # One thread: no retries, and qemu counts the same instructions and accesses.
    alone = run_prog(inst, ["1"], timeout=120)
    assert alone.returncode == 0, alone.stdout
    traced = _trace(alone.cwd / "prog.memtrace.out")
    qemu = trace_pcs(place(binary, tmp_path, "trcd"), ["1"], b"", argv0="prog")
    pcs = exe_pcs(qemu, binary)
    for ldrex, load, strex in windows.values():
        assert traced[ldrex, "L"] == pcs[ldrex] == ROUNDS and traced[load, "L"] == pcs[load] \
            and traced[strex, "S"] == pcs[strex], (pcs[ldrex], traced[ldrex, "L"])


def test_rehost_and_counters_inside_exclusive_windows(tmp_path: Path) -> None:
    """ReHost memtrace (records under the lock inside windows) and InHost inscount and
    cachesim (atomic counters and filter hits there) on the same program (T32, static)."""
    binary = build("exclusive_windows", *VARIANTS[0])
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    for tool in ("inscount", "cachesim"):
        assert_same_behaviour(original, run_prog(instrument(binary, tool, tmp_path, slot=tool[:4]), timeout=120))
    rehost, outcome = run_rehost_alone(instrument(binary, "memtrace", tmp_path, "--mode", "rehost", fmt="text",
                                                  slot="rhst"))
    assert_same_behaviour(original, rehost)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error
    _check_windows(_trace(rehost.cwd / "prog.memtrace.out"), _windows(binary), 4 * ROUNDS)
