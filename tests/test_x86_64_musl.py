"""x86-64 programs of musl (Debian's musl-tools): with musl's dynamic linker, and static.

musl's dynamic linker jumps to the program's entry with rdx as it happened to be (glibc's
passes its fini there, which Anvil's runtime hooked for the program's end) and names its C
library by its own path (/lib/ld-musl-x86_64.so.1): a dynamic musl program's copy ran as
the original and wrote no results. Now the runtime knows a dynamic program by its
interpreter (AT_BASE) and hooks _Exit in the first library that has one when none is
named libc.so (decision 0178). musl's dynamic linker ignores DT_PREINIT_ARRAY: the entry
finds the preinit call never came and starts the program there (decision 0176). A detached
thread's end unmaps its own stack before its exit system call, whose hook then pushed on
no stack (SIGSEGV): once threads run, the hook is skipped there (decision 0180).

Oracles: the original's run (output, exit status, printed addresses of a global, a heap
block and a local, under ``setarch -R``), and qemu's count of its instructions, which
inscount's must equal but for the procedures whose entries run in place (musl's `_init`
and `_fini` are a few bytes each: the report lists them).
"""

from __future__ import annotations

import bisect
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from rewriter.emit.sites import result_names
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import run_native
from tests.support.samples import SAMPLES_DIR

LINKS = {"dynamic": [], "static": ["-static"]}
#: Sample -> its arguments, and whether its count is the same in every run (musl's locks
#: spin and wait as the threads meet: their counts vary from run to run).
PROGRAMS = {"addresses": (["x"], True), "x64_thread_counts": ([], False), "detached_threads": ([], False)}


def _build(sample: str, link: str, out: Path) -> Path:
    subprocess.run(["musl-gcc", "-O2", *LINKS[link], str(SAMPLES_DIR / f"{sample}.c"), "-o", str(out)],
                   check=True, capture_output=True)
    return out


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("sample", sorted(PROGRAMS))
def test_musl_programs_transparent_and_counted(sample: str, link: str, tmp_path: Path) -> None:
    args, deterministic = PROGRAMS[sample]
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    plain.parent.mkdir()
    copied.parent.mkdir()
    _build(sample, link, plain)
    original = run_native(plain, args)
    assert original.returncode == 0, original.stderr
    for tool in ("cachesim", "inscount"):
        done = subprocess.run(["anvil", "instrument", "--tool", tool, "--format", "json", str(plain), "-o",
                               str(copied)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        results = copied.parent / f"prog.{tool}.out"
        results.unlink(missing_ok=True)
        run = run_native(copied, args)
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
        assert results.is_file(), f"{tool} wrote no results"
    if not deterministic:
        return

    # inscount under qemu, against qemu's count of the original (the same emulated processor).
    oracle = trace_pcs(plain, args, lib_root="/", cwd=plain.parent)
    results.unlink()
    run = subprocess.run(["env", "-i", "qemu-x86_64", "-L", "/", "-0", "prog", str(copied), *args],
                         cwd=copied.parent, capture_output=True, timeout=300)
    assert (run.returncode, run.stdout) == (oracle.returncode, oracle.stdout)
    counted = json.loads(results.read_text())["procedures"]
    report = json.loads(Path(f"{copied}.anvil.json").read_text())
    binary = load_binary(str(plain))
    in_place = {int(address, 16) for address in report["entries_run_in_place"]}
    names = dict(zip((proc.address for proc in binary.procedures), result_names(binary)))
    skipped = {names[address] for address in in_place if address in names}
    owners = {ins.address: name for proc, name in zip(binary.procedures, result_names(binary))
              for ins in proc.instructions()}
    starts = sorted(names)
    want = Counter()
    for pc, n in exe_pcs(oracle, plain).items():
        # (musl's _init and _fini have symbols one byte long: crtn's pop and ret follow them.)
        want[owners.get(pc) or names[starts[bisect.bisect_right(starts, pc) - 1]]] += n
    assert {k: v for k, v in counted.items() if k not in skipped} == \
        {k: v for k, v in want.items() if v and k not in skipped}
    assert sum(want.values()) > 400
