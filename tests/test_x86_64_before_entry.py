"""Code of an x86-64 program that runs before its entry runs in the copies (decision 0176).

The dynamic linker calls the program's own preinit functions (clang's UBSan, SafeStack and
ASan runtimes have one) and the libraries' initialisers before the program's entry, and
those may call into the program (with -pg, libm's _init calls its __gmon_start__; a C++
program's own malloc). The loader stub was the entry: all that ran the original code,
uncounted, and where the stub's pieces went into dead code of the copied procedures (a
text segment ending at a page's end leaves no room after it) the entries' jumps were in
the file, so the first such call jumped into a region not mapped yet: SIGSEGV before main.
Now the dynamic linker calls the stub first, from the preinit array, as on ARM.

samples/x64_before_entry.c, built as a PIE (its preinit word relocated by RELA), at a
fixed address (not relocated) and with -pg, each twice: as built, and padded so that its
text ends at a page's end. The oracle: qemu's count of the original's own instructions,
which the inscount copy's total and its procedures' counts must equal; the copies behave
as the original (its exit status says the preinit function ran once, before main).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.emit.sites import result_names
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.samples import SAMPLES_DIR

BUILDS = {"pie": ["-O2"], "fixed": ["-O2", "-no-pie"], "pg": ["-O2", "-pg"]}
PAGE = 0x1000


def _text_end(program: Path) -> tuple[int, int]:
    """The end of the segment holding the entry, and the start of the segment after it."""
    with program.open("rb") as f:
        elf = ELFFile(f)
        entry = elf["e_entry"]
        loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        text = next(s for s in loads if s["p_vaddr"] <= entry < s["p_vaddr"] + s["p_memsz"])
        end = text["p_vaddr"] + text["p_memsz"]
        return end, min(s["p_vaddr"] for s in loads if s["p_vaddr"] >= end)


def _build(flags: list[str], pad: int, out: Path) -> Path:
    subprocess.run(["gcc", *flags, f"-DPAD={pad}", str(SAMPLES_DIR / "x64_before_entry.c"), "-o", str(out), "-lm"],
                   check=True, capture_output=True)
    return out


def _program(build: str, at_page_end: bool, tmp_path: Path) -> Path:
    """The sample built so, padded where asked until its text ends within 32 bytes of the
    next segment's page."""
    program = _build(BUILDS[build], 16, tmp_path / "built")
    if at_page_end:
        end, following = _text_end(program)
        room = (end + PAGE - 1 & ~(PAGE - 1)) - end
        program = _build(BUILDS[build], 16 + room - 8, tmp_path / "built")
        end, following = _text_end(program)
        assert following - end < 32 and following % PAGE == 0, "the padding did not end the text at a page's end"
    return program


@pytest.mark.parametrize("at_page_end", [False, True], ids=["room-after-text", "text-at-page-end"])
@pytest.mark.parametrize("build", sorted(BUILDS))
def test_code_before_the_entry_runs_in_the_copies(build: str, at_page_end: bool, tmp_path: Path) -> None:
    program = _program(build, at_page_end, tmp_path)
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    for path in (plain, copied):
        path.parent.mkdir()
    shutil.copy(program, plain)
    done = subprocess.run(["anvil", "instrument", "--tool", "inscount", "--format", "json", str(plain),
                           "-o", str(copied)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(Path(f"{copied}.anvil.json").read_text())
    assert report["started_from"] == "preinit array"
    end, _ = _text_end(plain)
    pieces = [int(address, 16) for address in report["loader_stub"]]
    assert (min(pieces) < end) == at_page_end, "the stub's pieces are not where the case needs them"

    oracle = trace_pcs(plain, ["x"], cwd=tmp_path / "a", reuse=False)
    assert oracle.returncode == 0 and oracle.stdout.startswith(b"before main: 999000 in 1 call")
    run = subprocess.run(["env", "-i", "qemu-x86_64", "-0", "prog", str(copied), "x"], cwd=tmp_path / "b",
                         capture_output=True, timeout=120)
    assert (run.returncode, run.stdout) == (oracle.returncode, oracle.stdout)
    pcs = exe_pcs(oracle, plain)
    results = json.loads((tmp_path / "b" / "prog.inscount.out").read_text())
    binary = load_binary(str(plain))
    owners = {ins.address: name for proc, name in zip(binary.procedures, result_names(binary))
              for ins in proc.instructions()}
    per_procedure = Counter()
    for pc, n in pcs.items():
        per_procedure[owners[pc]] += n
    assert results["procedures"] == {name: n for name, n in per_procedure.items() if n}
    assert results["total"] == sum(pcs.values())
    assert per_procedure["early"] > 9000 and (build != "pg" or per_procedure["__gmon_start__"] > 0)

    # Natively too, with the cache simulator's calls as well.
    native = subprocess.run([str(plain), "x"], cwd=tmp_path / "a", capture_output=True, timeout=60)
    for tool in ("inscount", "cachesim"):
        done = subprocess.run(["anvil", "instrument", "--tool", tool, str(plain), "-o", str(copied)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        again = subprocess.run([str(copied), "x"], cwd=tmp_path / "b", capture_output=True, timeout=60)
        assert (again.returncode, again.stdout, again.stderr) == (native.returncode, native.stdout, native.stderr)
