"""Go programs on x86-64 (decision 0121): Go's runtime looks up the code addresses it meets
(return addresses on goroutine stacks, a fault's PC, where a goroutine or a recovered panic
resumes) in the program's PC table. The copies push original return addresses, the PC
table gives the functions and the places the runtime resumes, and a fault's PC in the copy
becomes the original's at the entry of Go's signal handler.

Oracles: the original's behaviour (output, exit status) natively, and QEMU's log of the
original's run (``qemu-x86_64 -singlestep -d exec,nochain``) for the count of each of the
program's own functions (``main.*``; the runtime's scheduler, collector and monitor thread
vary from run to run). Samples are built by Debian's Go (``golang-go``, installed by
scripts/bootstrap.sh); Debian's own ``gofmt`` is the program nobody here wrote.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support.loops import only_loop_start
from tests.support.run import anvil_instrument


def _goroot() -> Path:
    """Where Debian's Go lives (``go env GOROOT``: /usr/lib/go-1.19 on Debian 12)."""
    go = shutil.which("go")
    assert go is not None, "Debian's Go is missing: scripts/bootstrap.sh installs golang-go"
    return Path(subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip())


def _run(program: Path, args: list[str], cwd: Path, qemu: bool = False) -> subprocess.CompletedProcess:
    command = ["qemu-x86_64", "-0", "prog", str(program), *args] if qemu else [str(program), *args]
    return subprocess.run(["env", "-i", *command], cwd=cwd, capture_output=True, timeout=300)


def _instrument(program: Path, tool: str, out: Path, *extra: str) -> Path:
    return anvil_instrument(program, out, "--tool", tool, "--format", "json", *extra)


def _placed(program: Path, tmp_path: Path) -> Path:
    plain = tmp_path / "a" / "prog"
    plain.parent.mkdir()
    shutil.copy(program, plain)
    return plain


def _detour(proc) -> int:
    """Instructions one stack growth adds to a Go function's count: its tail (spills,
    ``call runtime.morestack``, reloads, the jump back to the entry) and its check again
    (from the entry to the first conditional branch: ``cmp rsp, [r14+16]; jbe tail``,
    longer for large frames). 0 for a function without one."""
    instructions = list(proc.instructions())
    check = next((n for n, ins in enumerate(instructions, 1) if ins.is_branch and ins.branch_target is not None
                  and ins.falls_through), None)
    if check is None:
        return 0
    tail = instructions[check - 1].branch_target
    at = [ins.address for ins in instructions]
    if tail not in at:
        return 0
    back = next((n for n, ins in enumerate(instructions[at.index(tail):], 1)
                 if ins.branch_target == proc.address and not ins.falls_through), None)
    return check + back if back is not None else 0


def test_go_programs_counted_as_qemu_counts(tmp_path: Path) -> None:
    """samples/go_work.go (static): inscount's copy, run under the same emulator, behaves as
    the original, and counts each of the program's own functions as QEMU's log of the
    original does, main.framed too, whose nil dereference skips the rest of its block,
    which the block's counter counted as it started (the runtime takes them off when the
    fault reaches Go's handler). One difference is allowed: a function whose stack grew in
    one run and not the other (whole detours: when a goroutine's stack grows depends on the
    collector's shrinking of stacks)."""
    plain = _placed(samples.build_go("go_work", "go-x64"), tmp_path)
    copied = _instrument(plain, "inscount", tmp_path / "b" / "prog")
    oracle = trace_pcs(plain, [], cwd=tmp_path)
    assert oracle.returncode == 3 and oracle.stdout.count(b"recovered:") == 4
    run = _run(copied, [], tmp_path, qemu=True)
    assert (run.returncode, run.stdout) == (oracle.returncode, oracle.stdout)

    pcs = exe_pcs(oracle, plain)
    binary = load_binary(str(plain))
    owners = {ins.address: proc for proc in binary.procedures for ins in proc.instructions()}
    assert [hex(pc) for pc in pcs if pc not in owners][:10] == []  # every executed instruction found
    want: Counter[str] = Counter()
    for pc, n in pcs.items():
        want[owners[pc].name] += n
    own = {proc.name: proc for proc in binary.procedures if proc.name.startswith("main.")}
    assert {"main.main", "main.collatz", "main.framed", "main.try"} <= set(own)
    cut = {name: sum(pcs.get(b.address, 0) * len(b.instructions) - sum(pcs.get(i.address, 0) for i in b.instructions)
                     for b in proc.blocks) for name, proc in own.items()}
    assert {name for name, n in cut.items() if n} == {"main.framed"}  # the faults skip part of a block
    got = json.loads((tmp_path / "prog.inscount.out").read_text())["procedures"]
    assert got["main.collatz"] == want["main.collatz"] > 100_000
    # main.framed's faults skip part of its block (taken off its count) and, as any function
    # with a frame, it may take a stack-growth detour in one run and not the other: it is
    # checked with the others, below.
    differ = {name: (want[name], got.get(name, 0)) for name in own if got.get(name, 0) != want[name]}
    unexplained = {name: (n, m) for name, (n, m) in differ.items()
                   if not _detour(own[name]) or (m - n) % _detour(own[name])}
    assert not unexplained, unexplained


@pytest.mark.parametrize(("variant", "tools"), [
    ("go-x64", ("memtrace",)),
    ("go-x64-stripped", ("cachesim",)),
    ("go-x64-pie", ("cachesim",)),
    ("go-x64-cgo-pie-stripped", ("cachesim",)),
])
def test_go_programs_behave_as_the_original(variant: str, tools: tuple[str, ...], tmp_path: Path) -> None:
    """Every build (static, stripped, PIE, cgo: the C library's threads and TLS) under tools
    that count, call at every access (the lock, on threads Go starts by clone) and write
    records: the recovered faults (their PC given back as the original's; without it Go's
    unwinder stops at an unknown return PC), goroutines on several threads, exit status 3.
    A run of each, natively, as the original."""
    plain = _placed(samples.build_go("go_work", variant), tmp_path)
    original = _run(plain, [], tmp_path)
    assert original.returncode == 3 and original.stdout.count(b"recovered:") == 4
    for tool in tools:
        copied = _instrument(plain, tool, tmp_path / tool[:4] / "prog")
        run = _run(copied, [], copied.parent)
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
        assert (copied.parent / f"prog.{tool}.out").stat().st_size > 0


def test_go_loops_preempted_in_the_copy(tmp_path: Path) -> None:
    """samples/go_preempt.go: two goroutines loop without a call while main collects garbage,
    which waits until the runtime's preemption signal has stopped both loops (the original
    never ends without it: GODEBUG=asyncpreemptoff=1). The copy's loop heads ask whether Go
    wants the goroutine stopped and raise its signal where they are; a signal that stops the
    copy there (or at the start of any instruction's copy) is given the original's PC, and
    a preempted goroutine resumes in the copy (decision 0134; before, every copy waited for
    ever): every copy ends as the original does, and bbcount counts as many runs of the
    loop's first block as the program reports iterations (a resumption in the original
    would lose them)."""
    program = samples.build_go("go_preempt", "go-x64")
    plain = _placed(program, tmp_path)
    original = _run(plain, ["iterations"], plain.parent)
    assert original.returncode == 4 and original.stdout.startswith(b"collected three times")
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(["env", "-i", "GODEBUG=asyncpreemptoff=1", str(plain)], cwd=plain.parent,
                       capture_output=True, timeout=3)
    loop = only_loop_start(next(proc for proc in load_binary(str(program)).procedures if proc.name == "main.spin"))
    for tool in ("inscount", "bbcount", "cachesim"):  # (memtrace: a record each iteration, GBs)
        copied = _instrument(plain, tool, tmp_path / tool[:4] / "prog")
        for _ in range(2 if tool == "bbcount" else 1):  # where the signals fall differs from run to run
            run = _run(copied, ["iterations"], copied.parent)
            assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
            if tool == "bbcount":
                iterations = sum(map(int, (copied.parent / "iterations").read_text().split()))
                blocks = json.loads((copied.parent / "prog.bbcount.out").read_text())["counts"]
                assert {block["address"]: block["count"] for block in blocks}[loop] == iterations


def test_go_preempted_where_the_flags_are_live(tmp_path: Path) -> None:
    """samples/go_flags.go: a loop without calls whose branches read the flags of the
    comparison before them, stopped by Go's preemption signal at every collection main
    makes while it runs; Go's asyncPreempt gives it back the flags with ``popfq`` and
    returns. cachesim's calls before asyncPreempt's last ``pop`` and ``ret`` took the flags
    for dead there (a return's, by the calling convention) and changed them: the checksum
    differed in 8 of 10 runs. A function that restores flags it saved keeps them live
    where it returns (decision 0136): every copy prints the original's checksum, run after
    run (cachesim, InHost and ReHost)."""
    plain = _placed(samples.build_go("go_flags", "go-x64"), tmp_path)
    original = _run(plain, [], plain.parent)
    assert original.returncode == 5 and original.stdout.startswith(b"checksum ")
    for tool, mode in (("cachesim", "inhost"), ("cachesim", "rehost")):
        copied = _instrument(plain, tool, tmp_path / f"{tool[:4]}-{mode[:4]}" / "prog", "--mode", mode)
        for _ in range(3):  # where the signals stop the loop differs from run to run
            run = subprocess.run(["anvil", "run", "-q", str(copied)], cwd=copied.parent, capture_output=True,
                                 timeout=300)
            assert (run.returncode, run.stdout) == (original.returncode, original.stdout), run.stderr


def test_go_program_rehost(tmp_path: Path) -> None:
    """ReHost's records of a Go program (cgo: its threads are the C library's) through
    ``anvil run``: behaviour as the original's, and inscount's count of the program's own
    functions as InHost's."""
    plain = _placed(samples.build_go("go_work", "go-x64-cgo"), tmp_path)
    original = _run(plain, [], tmp_path)
    counts = []
    for mode in ("inhost", "rehost"):
        copied = _instrument(plain, "inscount", tmp_path / mode[:4] / "prog", "--mode", mode)
        run = subprocess.run(["anvil", "run", str(copied)], cwd=copied.parent, capture_output=True, timeout=300)
        assert (run.returncode, run.stdout) == (original.returncode, original.stdout), run.stderr
        procedures = json.loads((copied.parent / "prog.inscount.out").read_text())["procedures"]
        counts.append({name: n for name, n in procedures.items() if name.startswith("main.")})
    assert counts[0] == counts[1] and counts[0]["main.collatz"] > 0


def test_debian_gofmt(tmp_path: Path) -> None:
    """Debian's gofmt (Go 1.19 on Debian 12, static, stripped): cachesim's copy rewrites one
    of Go's own packages as the original does."""
    goroot = _goroot()
    gofmt = goroot / "bin" / "gofmt"
    sources = sorted(str(p) for p in (goroot / "src" / "sort").glob("*.go"))
    args = ["-s", "-r", "a+b -> b+a", *sources]
    original = _run(gofmt, args, tmp_path)
    assert original.returncode == 0 and len(original.stdout) > 50_000
    copied = _instrument(gofmt, "cachesim", tmp_path / "cach" / "gofmt")
    run = _run(copied, args, copied.parent)
    assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)


def test_go_program_without_a_pc_table_refused_in_one_line(tmp_path: Path) -> None:
    """A Go program whose PC table cannot be read (its header's magic spoilt): exit status 2,
    one line naming the program and why, no output file."""
    program = tmp_path / "prog"
    shutil.copy(samples.build_go("go_work", "go-x64"), program)
    with open(program, "r+b") as f:
        table = ELFFile(f).get_section_by_name(".gopclntab")["sh_offset"]
        f.seek(table)
        f.write(struct.pack("<I", 0x12345678))
    out = tmp_path / "out"
    done = subprocess.run(["anvil", "instrument", "--tool", "inscount", str(program), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "PC table" in done.stderr and len(done.stderr.splitlines()) == 1
    assert not out.exists()
