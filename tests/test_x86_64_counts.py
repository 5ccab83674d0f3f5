"""inscount and bbcount on x86-64 programs (decision 0110), against QEMU's record of the
original's run, and the instrumented programs' behaviour against the original's.

The oracle: ``qemu-x86_64 -singlestep -d exec,nochain`` runs the original (``env -i``,
``argv[0]`` "prog") and logs every executed instruction; those in the program's own code
are its instruction count, and the executions of a block's first instruction its count.
The instrumented copy (same file name, a directory of the same length) runs under the
same emulator, so that the C library picks the same routines for the same processor, and
its results file must give the same total and the same count for every procedure; bbcount's
must give every block the count QEMU gives its first instruction. A ``rep`` instruction
runs once per element in QEMU's log (and in Valgrind's count): inscount counts it so too.
Natively, under ``setarch -R``, the instrumented program prints what the original prints
(the addresses of a global, a heap block and a local included) and exits the same way.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from rewriter.emit.sites import result_names
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support.run import anvil_instrument

ARGS = {"goto": ["7"], "calls": ["a", "b"], "addresses": ["x"]}
VARIANTS = ("x64-gcc-O0", "x64-gcc-O2", "x64-gcc-O3-nopie", "x64-gcc-Os-cet", "x64-clang-O2", "x64-gcc-O2-static")
CASES = [*(("sort", v) for v in VARIANTS), ("goto", "x64-gcc-O2"), ("calls", "x64-clang-O2"),
         ("unwind", "x64-gcc-O2"), ("containers", "x64-gcc-O2"), ("unwind", "x64-gcc-O2-static"),
         # a static PIE's PLT: an IFUNC entry after a slot of zeros starts a block
         ("unwind", "x64-gcc-O2-static-pie"),
         # `rep ret` is no string instruction: it runs once (decision 0112; it returned to RCX)
         ("x64_rep_ret", "x64-gcc-O2"),
         # code in two executable segments with a hole between: the jumps are written in each
         ("x64_far_code", "x64-gcc-O2-far-code"),
         # a switch table read past its end into the next (its bound in another block)
         ("x64_adjacent_tables", "x64-gcc-O2"),
         # threads counting the same blocks: the counters become locked adds as the first starts
         ("x64_thread_counts", "x64-gcc-O2"),
         # code, data and .bss in one segment (lld -N): the .bss read back zero (decision 0130)
         ("bss_zero", "x64-clang-O2-omagic-static-lld"),
         # the large code model's switch tables: 64-bit offsets added to the table's address
         ("x64_big_switch", "x64-gcc-O2-large"), ("x64_big_switch", "x64-clang-O2-large"),
         ("x64_big_switch", "x64-gcc-O2"),
         # gcc's large model in a loop: 64-bit offsets read whole, the table's address added (0175)
         ("x64_switch_in_loop", "x64-gcc-O2-large"),
         # clang's large model: a function's GOT anchor (lea rax, [rip - 7]) is no entry (0175)
         ("x64_switch_in_loop", "x64-clang-O2-large"),
         # clang's cases of one instruction and a ret, too short for a jump (decision 0133)
         ("x64_big_switch", "x64-clang-O2"),
         # split stacks: __morestack runs the rest of a function from its return address + 1
         ("x64_split_stack", "x64-gcc-O2-split-stack"),
         # functions shorter than a jump, entered through pointers in data, padded by mold
         # with zeros: the padding holds the jump (decision 0141)
         ("x64_short_pointer_targets", "x64-gcc-O2-sections-mold"),
         # the same stripped: the zeros before a place a pointer names hold the jump too (0167)
         ("x64_short_pointer_targets", "x64-gcc-O2-sections-mold-stripped"),
         # no unwind tables, stripped: main (given to __libc_start_main by a lea, or by an
         # immediate in a fixed-address program) and qsort's comparator are found only from
         # the code that computes their addresses
         ("sort", "x64-gcc-Os-nounwind-stripped"), ("calls", "x64-gcc-Os-nounwind-stripped"),
         ("sort", "x64-clang-O2-nounwind-static-stripped"),
         # stripped: a call that raises, then only padding, which the descent decodes as the
         # caller's: its return address stays the original, which the unwinder knows (0189)
         ("raise_past_padding", "x64-gcc-O2-static-stripped")]
#: Debian's own stripped programs, with work to do.
DEBIAN = {
    "ls": ["/bin/ls", "-la", str(samples.SAMPLES_DIR)],
    "sed": ["/bin/sed", "-e", "s/[aeiou]/_/g", str(samples.SAMPLES_DIR / "sort.c")],
    "bash": ["/bin/bash", "-c", "for i in 1 2 3; do echo $((i * 7)); done; x=abc; echo ${x^^}"],
    # libgcrypt's S-expression dumper: its parser's switch table is in r13, loaded before a
    # loop whose early exits pop r13 between the load and the jump (decision 0123)
    "dumpsexp": ["/usr/bin/dumpsexp", str(samples.SAMPLES_DIR / "sort.c")],
}


def _instrumented(original: Path, tool: str, tmp_path: Path, *options: str) -> tuple[Path, Path]:
    """The original as ``a/prog`` and its instrumented copy as ``b/prog`` (``options``: more
    of ``anvil instrument``'s)."""
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    plain.parent.mkdir()
    copied.parent.mkdir()
    shutil.copy(original, plain)
    anvil_instrument(plain, copied, "--tool", tool, "--format", "json", *options)
    return plain, copied


def _run_under_qemu(copied: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["env", "-i", "qemu-x86_64", "-0", "prog", str(copied), *args], cwd=cwd,
                          capture_output=True, timeout=600)


def _owners(program: Path) -> dict[int, str]:
    """Each instruction's procedure, by its name in the results (sites.result_names)."""
    binary = load_binary(str(program))
    return {ins.address: name for proc, name in zip(binary.procedures, result_names(binary))
            for ins in proc.instructions()}


def _assert_inscount_exact(original: Path, args: list[str], tmp_path: Path) -> None:
    plain, copied = _instrumented(original, "inscount", tmp_path)
    oracle = trace_pcs(plain, args, cwd=tmp_path, reuse=True)
    pcs = exe_pcs(oracle, plain)
    run = _run_under_qemu(copied, args, tmp_path)
    assert run.returncode == oracle.returncode and run.stdout == oracle.stdout, "the copy behaved otherwise"
    results = json.loads((tmp_path / "prog.inscount.out").read_text())  # where it ran
    assert results["total"] == sum(pcs.values())
    owners = _owners(plain)
    per_procedure = Counter()
    for pc, n in pcs.items():
        per_procedure[owners[pc]] += n
    assert results["procedures"] == {name: n for name, n in per_procedure.items() if n}


@pytest.mark.parametrize(("sample", "variant"), CASES, ids=[f"{s}-{v}" for s, v in CASES])
def test_inscount_is_qemus_count(sample: str, variant: str, tmp_path: Path) -> None:
    _assert_inscount_exact(samples.build_x86_64(sample, variant), ARGS.get(sample, []), tmp_path)


@pytest.mark.parametrize("name", sorted(DEBIAN))
def test_inscount_of_debian_programs(name: str, tmp_path: Path) -> None:
    program, *args = DEBIAN[name]
    _assert_inscount_exact(Path(program), args, tmp_path)


@pytest.mark.parametrize("variant", ["x64-gcc-O2"])
def test_bbcount_is_qemus_count(variant: str, tmp_path: Path) -> None:
    plain, copied = _instrumented(samples.build_x86_64("sort", variant), "bbcount", tmp_path)
    pcs = exe_pcs(trace_pcs(plain, [], cwd=tmp_path, reuse=True), plain)
    assert _run_under_qemu(copied, [], tmp_path).returncode == 0
    text = (tmp_path / "prog.bbcount.out").read_text()
    counted = {entry["address"]: entry["count"] for entry in json.loads(text)["counts"]}
    binary = load_binary(str(plain))
    repeated = {b.address for b in binary.blocks() if re.match(r"rep", b.instructions[0].mnemonic)}
    want = {b.address: pcs.get(b.address, 0) for b in binary.blocks() if b.address not in repeated}
    got = {address: counted.get(address, 0) for address in want}
    assert got == want
    assert sum(want.values()) > 1000


@pytest.mark.parametrize("options", [("--skip", "insertion_sort"), ("--only", "quicksort*", "--only", "main")])
def test_only_and_skip_choose_the_counted_procedures(options: tuple[str, ...], tmp_path: Path) -> None:
    """Every procedure is copied on x86-64; ``--only``/``--skip`` choose which get the tool's
    calls: the chosen ones count what QEMU counts, the others nothing, and the report says
    how many were chosen (it said every procedure copied was instrumented)."""
    plain, copied = _instrumented(samples.build_x86_64("sort", "x64-gcc-O2"), "inscount", tmp_path, *options)
    pcs = exe_pcs(trace_pcs(plain, [], cwd=tmp_path, reuse=True), plain)
    assert _run_under_qemu(copied, [], tmp_path).returncode == 0
    binary = load_binary(str(plain))
    chosen = {p.name for p in binary.select([options[i + 1] for i, o in enumerate(options) if o == "--only"] or None,
                                            [options[i + 1] for i, o in enumerate(options) if o == "--skip"] or None)}
    owners = _owners(plain)
    want = Counter()
    for pc, n in pcs.items():
        if owners[pc] in chosen:
            want[owners[pc]] += n
    got = json.loads((tmp_path / "prog.inscount.out").read_text())["procedures"]
    assert got == {name: n for name, n in want.items() if n}
    assert 0 < len(got) < len({owners[pc] for pc in pcs})  # some counted, some executed ones not
    report = json.loads(Path(f"{copied}.anvil.json").read_text())
    assert (report["instrumented"], report["copied"]) == (len(chosen), len(binary.procedures))


@pytest.mark.parametrize("stripped", [False, True], ids=["symbols", "stripped"])
def test_a_static_programs_threads_are_counted_to_their_end(stripped: bool, tmp_path: Path) -> None:
    """A static program's threads end with an ``exit`` system call in its own (copied) code,
    which was taken for the program's end: the first thread to end wrote the results, the
    others' counts missing (decision 0112). The program's own procedures (its C library's
    locks and waits spin as the threads' timing falls, so the total is not exact run to
    run) against QEMU's count. Stripped, the program names no thread start: its counters
    stayed unlocked while four threads added to them (a third of the threads' counts lost)
    until its clone flags told (decision 0147)."""
    built = samples.build_x86_64("x64_thread_counts", "x64-gcc-O2-static")
    program = built
    if stripped:
        program = tmp_path / "stripped"
        subprocess.run(["strip", "-o", str(program), str(built)], check=True)
    plain, copied = _instrumented(program, "inscount", tmp_path)
    pcs = exe_pcs(trace_pcs(plain, [], cwd=tmp_path, reuse=True), plain)
    assert _run_under_qemu(copied, [], tmp_path).returncode == 0
    named = load_binary(str(built))
    owners = {ins.address: proc.name for proc in named.procedures for ins in proc.instructions()}
    want = Counter()
    for pc, n in pcs.items():
        want[owners[pc]] += n
    got = json.loads((tmp_path / "prog.inscount.out").read_text())["procedures"]
    # A stripped program's procedures are named by their addresses.
    label = {proc.name: f"sub_{proc.address:x}" if stripped else proc.name for proc in named.procedures}
    for name in ("work", "worker", "main"):
        assert got.get(label.get(name, name), 0) == want[name], name
    assert want["worker"] > 4 * 10**6  # the four threads' work (work is inlined there)


@pytest.mark.parametrize("variant", VARIANTS)
def test_counted_programs_behave_as_the_original(variant: str, tmp_path: Path) -> None:
    plain, copied = _instrumented(samples.build_x86_64("addresses", variant), "inscount", tmp_path)
    runs = [subprocess.run(["setarch", "-R", str(p), "x"], cwd=tmp_path, capture_output=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin"}) for p in (plain, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    assert json.loads((tmp_path / "prog.inscount.out").read_text())["total"] > 0


LIBRARY = """extern int program_hook(int);
static int seen;
__attribute__((constructor)) static void early(void) { seen = program_hook(20); }
int library_seen(void) { return seen; }
"""
PROGRAM = """#include <stdio.h>
int library_seen(void);
int program_hook(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }
int main(void) { printf("%d %d\\n", library_seen(), program_hook(5)); return 0; }
"""


def test_a_library_calls_into_the_program_before_its_entry(tmp_path: Path) -> None:
    """A library's constructor runs before the program's entry, where the loader stub maps
    the region, and calls a function the program exports (Debian's gdb: its source
    highlighting library): it runs the original code there, and the jumps to the copies are
    written once the region is mapped (decision 0110). The copy prints what the original
    prints, and counts the program after its entry."""
    (tmp_path / "lib.c").write_text(LIBRARY)
    (tmp_path / "prog.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "lib.c", "-o", "libearly.so"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-O2", "-rdynamic", "prog.c", "-L.", "-learly", "-Wl,-rpath,$ORIGIN", "-o", "built"],
                   cwd=tmp_path, check=True)
    plain, copied = _instrumented(tmp_path / "built", "inscount", tmp_path)
    for directory in (plain.parent, copied.parent):
        shutil.copy(tmp_path / "libearly.so", directory)
    runs = [subprocess.run([str(p)], cwd=tmp_path, capture_output=True, timeout=60) for p in (plain, copied)]
    assert runs[0].stdout == b"2470 30\n"
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    counts = json.loads((tmp_path / "prog.inscount.out").read_text())["procedures"]
    assert counts["main"] > 0


def test_entries_without_room_are_reported(tmp_path: Path) -> None:
    """Functions shorter than a jump, each followed at once by the next (no padding) and
    entered only through pointers in data: one with room for a 2-byte jump gets one, to a
    trampoline in a neighbour's dead bytes (``add``, ``first``: counted); one without (a
    1-byte ``ret``) runs in place, uncounted, and the report lists it
    (``entries_run_in_place``, decision 0141). The count is QEMU's less exactly the
    instructions QEMU ran there. Oracles: the symbol table's sizes, QEMU's log."""
    plain, copied = _instrumented(samples.build_x86_64("x64_short_pointer_targets", "x64-gcc-O2-packed"),
                                  "inscount", tmp_path)
    functions = _functions(plain)
    short = {address: (name, size) for address, (name, size) in functions.items()
             if name in ("add", "first", "nothing")}
    assert all(size < 5 for _, size in short.values()) and len(short) == 3, short
    without_room = {address: (name, size) for address, (name, size) in short.items() if size < 2}
    assert [name for name, _ in without_room.values()] == ["nothing"]
    report = json.loads(copied.with_name("prog.anvil.json").read_text())
    assert sorted(int(a, 16) for a in report["entries_run_in_place"]) == sorted(without_room)
    oracle = trace_pcs(plain, [], cwd=tmp_path, reuse=True)
    pcs = exe_pcs(oracle, plain)
    run = _run_under_qemu(copied, [], tmp_path)
    assert (run.returncode, run.stdout) == (oracle.returncode, oracle.stdout)
    in_place = sum(n for pc, n in pcs.items() if any(a <= pc < a + size for a, (_, size) in without_room.items()))
    assert in_place == 100  # each of the 100 calls of ``nothing`` runs its ret there
    assert json.loads((tmp_path / "prog.inscount.out").read_text())["total"] == sum(pcs.values()) - in_place


def _functions(program: Path) -> dict[int, tuple[str, int]]:
    from elftools.elf.elffile import ELFFile

    with program.open("rb") as f:
        symbols = ELFFile(f).get_section_by_name(".symtab")
        return {s["st_value"]: (s.name, s["st_size"]) for s in symbols.iter_symbols()
                if s["st_info"]["type"] == "STT_FUNC"}
