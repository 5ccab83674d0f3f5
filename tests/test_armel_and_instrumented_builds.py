"""A32 code as compilers for ARMv4T/ARMv5 write it, and gprof's profiling (decision 0094).

Debian's armel port (soft-float, ARMv5TE) showed three classes that its armhf build never
meets, reproduced in samples/armv5_idioms.c, which the armhf compiler builds:

- A call linked by ``mov lr, pc`` before a jump through a register (glibc's armel atomics
  call the kernel's __kuser_cmpxchg so; ARMv4T code calls through pointers so). The copy's
  ``mov lr, pc`` left the original return address in LR, and the callee returned into the
  original code, which ran on uninstrumented (a static armel program's count was 3,300
  short in its printf and locks).
- The same call in a procedure with a computed jump, where every instruction is a block of
  its own: the call starts the block after its ``mov lr, pc``.
- A switch whose bound is a literal (no MOVW before ARMv6T2): in a stripped program its
  cases were not found, and the jump ran them in place (Debian's armel grep: 3,169 short).
  Also where the bound was loaded into a callee-saved register before a loop, a call away
  from its ``cmp`` (armel diff: 194 short; perl: 856, with a function only the cases call).

And a program built with ``-pg``: gprof's ``__gnu_mcount_nc`` records each call's arc from
the return addresses it sees, and writes only those in the original text; with relocated
return addresses the copy's gmon.out had no arcs at all.

Oracles: the original's behaviour, qemu's count of the instructions it runs, the gmon.out
the original writes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import CLI_RUN
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog, traced_original
from tests.support.samples import ARMEL_SYSROOT, REPO_ROOT, build, run_environment, stripped
from tests.support.sweep import ARGS, STDIN, gmon_profile, judge_build


@pytest.mark.parametrize(("strip", "returns"), [(False, "auto"), (True, "auto"), (False, "original")])
def test_armv5_calls_and_switches_count_as_qemu_does(strip: bool, returns: str, tmp_path: Path) -> None:
    """Every instruction the original runs is counted once: the linked calls return into
    the copy (or, with original return addresses, through the return site's jump), the
    300-case switch's cases are found stripped."""
    program = build("armv5_idioms", "O2-thumb-dyn")
    if strip:
        program = stripped(program, tmp_path / "stripped")
    original, pcs, _ = traced_original(program, tmp_path)
    assert original.returncode == 0, original.stdout
    inst = run_prog(instrument(program, "inscount", tmp_path, "--return-addresses", returns))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())


def test_gprof_arcs_are_the_originals(tmp_path: Path) -> None:
    """sort built with -pg: the copy's gmon.out has the original's call arcs (and histogram
    range; the histogram's samples depend on time)."""
    program = build("sort", "O2-pg")
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed)
    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    arcs = gmon_profile((placed.parent / "gmon.out").read_bytes())
    assert len(arcs) > 100, "the original records its calls"
    assert gmon_profile((inst.cwd / "gmon.out").read_bytes()) == arcs


def test_armel_glibc_counts_as_qemu_does(tmp_path: Path) -> None:
    """calls built by Debian's armel gcc, static: glibc's A32 locks call the kernel's
    helper by ``mov lr, pc`` (every printf, every exit handler); 5,600 instructions short
    before. Static: the loader's root does not matter."""
    program = build("calls", "armel-O2-static")
    args, stdin = ARGS["calls"], STDIN["calls"]
    original, pcs, _ = traced_original(program, tmp_path, args, stdin)
    inst = run_prog(instrument(program, "inscount", tmp_path), args, stdin)
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())


def test_anvil_run_finds_armels_loader(tmp_path: Path) -> None:
    """``anvil run`` of a dynamic armel program without --sysroot: qemu-arm gets the root
    that has /lib/ld-linux.so.3 (it looked in armhf's before: "Could not open")."""
    program = build("sort", "armel-O2")
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, lib_root=ARMEL_SYSROOT)
    inst = instrument(program, "inscount", tmp_path)
    # This tree's rewriter, whatever the installed one is; nothing else from our environment.
    run = subprocess.run([*CLI_RUN, str(inst)], capture_output=True, cwd=inst.parent, timeout=300,
                         env={"PYTHONPATH": str(REPO_ROOT)})
    assert (run.returncode, run.stdout) == (original.returncode, original.stdout)
    assert (inst.parent / "prog.inscount.out").is_file(), run.stderr


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
def test_programs_own_preinit_functions_run_instrumented(variant: str, tmp_path: Path) -> None:
    """samples/preinit.c: the dynamic linker calls the program's own preinit functions
    before its entry; the copy crashed there (SIGSEGV: their entry patches jumped into a
    region not yet mapped), as ASan's programs built with -no-pie did. Now the first preinit
    word starts the region, which then goes on to it: same behaviour, every instruction
    counted."""
    program = build("preinit", variant)
    original, pcs, _ = traced_original(program, tmp_path)
    assert original.returncode == 0, original.stdout
    inst = run_prog(instrument(program, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())


@pytest.mark.parametrize(("sample", "variant"), [("goto", "O2-arm-pg-static"), ("jumptable", "O2-arm-static"),
                                                 ("goto", "armel-O2-static")])
def test_stripped_a32_static_runs_and_counts(sample: str, variant: str, tmp_path: Path) -> None:
    """Stripped, as scripts/variant_sweep.py judges a build (tests/support/sweep.py: the
    original's behaviour and files, qemu's count less what gprof's timer runs).

    - goto with -pg: every function starts with a call of __gnu_mcount_nc, so the literal
      pools its code loads were read past a call, and kept nothing from being read as code:
      the guess that code follows a computed goto ran through the pool into the next
      function (Thumb), read as A32, and a return site's jump written there ran (SIGILL).
    - jumptable: ``ldrls pc, [pc, r0, lsl #2]`` is the switch's jump, not a literal
      holding its bound (which ARMv5 code loads, as above).
    - goto by armel gcc: a ``mov lr, pc`` call of the kernel's helper whose branch began a
      chunk of the descent's decoding was no call (its return site ran in place)."""
    outcomes = judge_build(sample, build(sample, variant), True, ["inscount"], ["inhost"], tmp_path)
    assert outcomes == [("inscount/inhost", "ok")]


def test_asan_linked_in_keeps_its_layout(tmp_path: Path) -> None:
    """sort with ASan's run time linked in (-static-libasan, a PIE), main instrumented: ASan
    starts from the preinit array, after the region is mapped, and reads from what is
    mapped where the top of the address space is. With the region above 3 GiB it took a
    4 GiB user space and put its shadow over the libraries ("Shadow memory range
    interleaves with an existing memory mapping", exit 1); such a program's region now
    stays below 3 GiB."""
    program = build("sort", "O2-asan-static-libasan")
    env = run_environment("O2-asan-static-libasan")
    original = run_prog(place(program, tmp_path, "orig"), env=env)
    inst = run_prog(instrument(program, "inscount", tmp_path, "--only", "main"), env=env)
    assert_same_behaviour(original, inst)


def test_thumb1_switch_helpers_keep_their_tables(tmp_path: Path) -> None:
    """hash by armel gcc with -mthumb (Thumb-1): its switches call libgcc's
    __gnu_thumb1_case_* helpers, which read the table of cases at their return address.
    From the copy that address held no table (SIGSEGV); then such procedures ran in place,
    uncounted; now the copy's call has a table of its own after it (decision 0195, and
    test_thumb1_switches.py): every procedure is instrumented and counts as qemu does."""
    program = build("hash", "armel-O2-thumb")
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, lib_root=ARMEL_SYSROOT)
    pcs = exe_pcs(trace_pcs(placed, argv0="prog", lib_root=ARMEL_SYSROOT, reuse=True), placed)
    inst = instrument(program, "inscount", tmp_path)
    counted = run_prog(inst, lib_root=ARMEL_SYSROOT)
    assert_same_behaviour(original, counted)
    report = json.loads((inst.parent / "prog.anvil.json").read_text())
    assert report["not_instrumented"] == []
    assert results(counted, "inscount")["total"] == sum(pcs.values())
