"""memtrace on x86-64 programs (decision 0113): every data access of the program's own code,
against independent records of the original's accesses, and the traced programs'
behaviour against the original's.

- Unicorn (QEMU's code generator as a library) runs a freestanding program whose stack and
  thread block are in its own data (samples/x64_bare_accesses.c), so that every address is
  the same natively; its memory hook sees each access with its instruction. The
  instrumented copy, run natively, must trace the same accesses in the same order: the
  same instruction, address, size and kind. Unicorn's one deviation is normalised: it
  splits a 16- or 32-byte vector access into 8-byte pieces (capstone names the operand's
  width), which are joined back.
- Valgrind's Lackey traces a dynamic program's accesses (its ``I``/``L``/``S``/``M`` lines,
  with VEX's IR optimisation off so that it drops no load as dead); those of the program's
  own code, as offsets from its load address, must be the instrumented copy's, in order.
- Natively, under ``setarch -R``, a traced program prints what the original prints (the
  addresses of a global, a heap block, a local and a thread-local variable) and exits the
  same way.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.oracles.unicorn_x86_64 import run_bare
from tests.support import samples
from tests.support import x86_64_traces as traces

BARE = samples.SAMPLES_DIR / "x64_bare_accesses.c"
STRING_OPS = samples.SAMPLES_DIR / "x64_string_ops.c"


@pytest.mark.parametrize("level", ["-O0", "-O2", "-O3"])
def test_memtrace_is_unicorns_trace(level: str, tmp_path: Path) -> None:
    program = tmp_path / "bare"
    subprocess.run(["gcc", level, "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-pie", "-no-pie",
                    "-fno-stack-protector", "-o", str(program), str(BARE)], check=True)
    oracle = run_bare(program)
    assert oracle.exit_status == 0 and oracle.stdout
    original = subprocess.run([str(program)], capture_output=True, timeout=60)
    assert original.stdout == oracle.stdout
    copied = traces.memtrace(program, tmp_path)
    run = subprocess.run([str(copied)], capture_output=True, timeout=60, cwd=copied.parent)
    assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
    expected = traces.joined(oracle.accesses, traces.vector_widths(program))
    got = traces.trace(copied.parent / f"{copied.name}.memtrace.out")
    assert len(got) == len(expected)
    assert got == expected
    # The sample's forms are all there: repeated elements, fs-relative, 16-byte vectors at -O2.
    kinds = {(size, kind) for _, _, size, kind in got}
    assert {(1, "L"), (1, "S"), (8, "L"), (8, "S")} <= kinds


@pytest.mark.parametrize("variant", ["x64-gcc-O2", "x64-clang-O2"])
def test_memtrace_is_lackeys_trace(variant: str, tmp_path: Path) -> None:
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("x64_string_ops", variant), program)
    expected = traces.lackey_accesses(program, tmp_path / "lackey.log")
    copied = traces.memtrace(program, tmp_path)
    runs = [subprocess.run(["setarch", "-R", str(p)], capture_output=True, timeout=60, cwd=copied.parent,
                           env={"PATH": "/usr/bin:/bin"}) for p in (program, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    got = traces.trace(copied.parent / "prog.memtrace.out")
    native_base = traces.load_address(["setarch", "-R", str(program)], program)
    traced = [(pc - native_base, size, kind) for pc, _, size, kind in got]
    assert traced == expected
    assert len(expected) > 800  # the repeated string instructions' elements, one by one


def test_vector_stores_are_stores_and_gathers_are_reported(tmp_path: Path) -> None:
    """SSE and AVX stores whose memory operand capstone marks read (movups, movq, movhps,
    pextrw, movntdq, vmovdqu ymm, vextracti128, vcvtps2ph...) are traced as stores, as
    Lackey sees them (decision 0172: they were traced as loads, and cachesim counted them
    so). A gather's elements are not traced: the report names it, and Lackey's loads there
    are the only ones the trace lacks."""
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("x64_vector_stores", "x64-gcc-O2-avx2"), program)
    expected = traces.lackey_accesses(program, tmp_path / "lackey.log")
    copied = traces.memtrace(program, tmp_path)
    runs = [subprocess.run(["setarch", "-R", str(p)], capture_output=True, timeout=60, cwd=copied.parent,
                           env={"PATH": "/usr/bin:/bin"}) for p in (program, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    native_base = traces.load_address(["setarch", "-R", str(program)], program)
    report = json.loads(copied.with_name(copied.name + ".anvil.json").read_text())
    gathers = [int(address, 16) for address in report["vector_indexed"]]  # link-time: a PIE's offsets
    assert len(gathers) == 1
    got = traces.trace(copied.parent / "prog.memtrace.out")
    traced = [(pc - native_base, size, kind) for pc, _, size, kind in got]
    assert [access for access in expected if access[0] not in gathers] == traced
    assert [kind for pc, _, kind in expected if pc == gathers[0]] == ["L"] * 8
    assert sum(kind == "S" and size >= 8 for _, size, kind in traced) >= 10


@pytest.mark.parametrize("variant", ["x64-gcc-O0", "x64-gcc-O2-static", "x64-gcc-O3-nopie", "x64-clang-O2"])
def test_traced_programs_behave_as_the_original(variant: str, tmp_path: Path) -> None:
    # At a path as long as the copy's (b/prog): a static C library keeps the program's
    # directory on the heap, and a longer one may move every later block.
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("addresses", variant), program)
    copied = traces.memtrace(program, tmp_path)
    runs = [subprocess.run(["setarch", "-R", str(p), "x"], cwd=tmp_path, capture_output=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin"}) for p in (program, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    assert len(traces.trace(tmp_path / "prog.memtrace.out")) > 10


@pytest.mark.parametrize("variant", ["x64-gcc-O2", "x64-gcc-O2-static"])
def test_threads_trace_every_access(variant: str, tmp_path: Path) -> None:
    """Four threads at once (samples/x64_threads.c): the trace has each element of the
    array every load and store the program's source makes (ROUNDS of each in the threads,
    one more load as main sums them up), none lost or garbled by threads tracing at once.
    Static too: there the calls take no lock before the first thread starts (the thread
    pointer the lock knows a thread by is set only after the start code's first accesses)."""
    program = tmp_path / "prog"
    shutil.copy(samples.build_x86_64("x64_threads", variant), program)
    copied = traces.memtrace(program, tmp_path)
    runs = [subprocess.run(["setarch", "-R", str(p)], cwd=tmp_path, capture_output=True, timeout=60, text=True,
                           env={"PATH": "/usr/bin:/bin"}) for p in (program, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    _, array, size, rounds = runs[0].stdout.split()
    low, high, rounds = int(array, 16), int(array, 16) + int(size), int(rounds)
    seen = Counter((ea, kind) for _, ea, width, kind in traces.trace(tmp_path / "prog.memtrace.out")
                   if low <= ea < high and width == 8)
    assert seen == {**{(ea, "L"): rounds + 1 for ea in range(low, high, 8)},
                    **{(ea, "S"): rounds for ea in range(low, high, 8)}}


BLOCK_TOOL = '''from rewriter.api import Arg, Point, Tool


class Blocks(Tool):
    name = "blocks"
    description = "instructions and addresses of the blocks run"

    def instrument(self, binary, opts):
        block = self.prototype("blocks_block", Arg.INST_ADDR, Arg.BLOCK_INSNS, Arg.CONST)
        for proc in binary.select(opts.only, opts.skip):
            for b in proc.blocks:
                b.call(Point.BEFORE, block, Arg.INST_ADDR, Arg.BLOCK_INSNS, 1)
        binary.call(Point.AFTER, self.prototype("blocks_report", Arg.STRING), opts.out)
'''
BLOCK_C = '''#include "anvil_rt.h"
static uint64_t total, weighted, runs;
void blocks_block(anvil_word address, uint32_t insns, uint32_t one)
{
    total += insns;
    weighted += address - anvil_bias;
    runs += one;
}
void blocks_report(const char *path)
{
    if (anvil_out_open(path) < 0)
        return;
    anvil_putu(total);
    anvil_putc(' ');
    anvil_putu(runs);
    anvil_putc(' ');
    anvil_putu(weighted);
    anvil_putc('\\n');
    anvil_out_close();
}
'''


def _tool_file_under_qemu(tool: Path, sample: str, variant: str, tmp_path: Path) -> tuple[Path, dict[int, int]]:
    """``sample`` instrumented with the tool file ``tool`` and run under qemu-x86_64 as the
    original runs under QEMU's log of every instruction (the same behaviour asserted): the
    original's path and its instructions' counts."""
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64(sample, variant), program)
    copied = tmp_path / "b" / "prog"
    copied.parent.mkdir()
    done = subprocess.run(["anvil", "instrument", "--tool", str(tool), str(program), "-o", str(copied)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    oracle = trace_pcs(program, [], cwd=tmp_path)
    run = subprocess.run(["env", "-i", "qemu-x86_64", "-0", "prog", str(copied)], cwd=tmp_path, capture_output=True,
                         timeout=600)
    assert (run.returncode, run.stdout) == (oracle.returncode, oracle.stdout)
    return program, exe_pcs(oracle, program)


def test_tool_file_block_calls_are_qemus_count(tmp_path: Path) -> None:
    """A tool file calling its C routine at every block (the instruction's address, the
    block's size, a constant): its sums are QEMU's count of the original's instructions,
    block executions and their addresses (qemu-x86_64's log of every instruction run)."""
    tool = tmp_path / "blocks.py"
    tool.write_text(BLOCK_TOOL)
    (tmp_path / "blocks.c").write_text(BLOCK_C)
    program, pcs = _tool_file_under_qemu(tool, "sort", "x64-gcc-O2", tmp_path)
    total, runs, weighted = map(int, (tmp_path / "prog.blocks.out").read_text().split())
    blocks = list(load_binary(str(program)).blocks())
    assert total == sum(pcs.values())
    assert runs == sum(pcs.get(b.address, 0) for b in blocks)
    assert weighted == sum(pcs.get(b.address, 0) * b.address for b in blocks) % (1 << 64)


def test_walk_tool_file_entries_are_qemus_count(tmp_path: Path) -> None:
    """The example tool file tests/data/tools/walk.py calls a routine at every procedure's
    entry (its index) and block (address, size): each procedure's entries are QEMU's count of
    its first instruction (a loop back to the entry block enters again, as on ARM), and the
    blocks' sums are QEMU's too."""
    walk = Path(__file__).parent / "data" / "tools" / "walk.py"
    program, pcs = _tool_file_under_qemu(walk, "hash", "x64-gcc-O0", tmp_path)
    got = json.loads((tmp_path / "prog.walk.out").read_text())
    binary = load_binary(str(program))
    blocks = list(binary.blocks())
    assert got["total"] == sum(pcs.values())
    assert got["blocks_run"] == sum(pcs.get(b.address, 0) for b in blocks)
    assert got["weighted"] == sum(pcs.get(b.address, 0) * b.address for b in blocks) % (1 << 64)
    expected = {p.address: pcs[p.address] for p in binary.procedures if pcs.get(p.address)}
    assert dict(got["entries"]) == expected and len(expected) > 5
