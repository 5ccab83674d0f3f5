"""Programs of other compilers and runtimes, as Debian ships them for armhf (decision 0060).

hexyl is Rust: rustc's armv7 target emits A32 code, and most of it is reached through
vtables, whose entries a PIE keeps as relocated words without the Thumb bit. Every tool
must leave its behaviour unchanged, and the descent must find every instruction qemu
runs in the executable. Go programs (decision 0089) are found from their PC table and
rewritten with original return addresses, which their runtime looks up; one whose table
cannot be read is refused with one line. Free Pascal's ptop, all A32, must be found and
counted exactly. The whole set (ripgrep, sd, gfortran's TM-align,
Free Pascal's ptop, nimgrep, seven Go programs) is benchmarks/corpus.py's.
"""

from __future__ import annotations

import bisect
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rehost.server import Library, start_server
from rewriter.ir.elf_loader import load_binary
from rewriter.ir.go_runtime import go_functions
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import corpus
from tests.support.loops import only_loop_start
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, instrument_ir, place, results, run_prog
from tests.support.samples import build, build_go

R_ARM_RELATIVE = 23


def _relocated_words(path: Path) -> set[int]:
    """The link-time values of the words a PIE's R_ARM_RELATIVE relocations adjust."""
    with path.open("rb") as f:
        elf = ELFFile(f)
        words = set()
        for section in elf.iter_sections():
            if section["sh_type"] != "SHT_REL":
                continue
            for rel in section.iter_relocations():
                if rel["r_info_type"] == R_ARM_RELATIVE:
                    offset = next(elf.address_offsets(rel["r_offset"], 4))
                    f.seek(offset)
                    words.add(int.from_bytes(f.read(4), "little"))
    return words


def _run_and_trace(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Corpus program ``name`` (its file, environment), its original run and what qemu's
    trace of the same run executes in the executable (address -> times)."""
    program = corpus.CORPUS[name]
    exe, root = corpus.fetch(program)
    env = corpus.environment(program, root)
    placed = place(exe, tmp_path, "orig")
    corpus.prepare(program, placed.parent, exe, env)
    original = run_prog(placed, program.args, env=env)
    assert original.returncode == 0, original.stderr
    monkeypatch.chdir(placed.parent)  # the workload names its input relative to the run directory
    trace = trace_pcs(placed, program.args, env=env)  # the oracle of what code runs
    assert trace.stdout == original.stdout
    return program, exe, env, original, exe_pcs(trace, placed)


def _rehost(exe: Path, tool: str, tmp_path: Path, slot: str, args, env=None, program=None, ir=None):
    """Run ``exe`` instrumented with ``tool`` in ReHost mode against a server on loopback
    (its run directory prepared for corpus ``program``): the run and the session's outcome.
    ``ir``: ``exe`` loaded already (a big program's load is seconds)."""
    srv, port = start_server(Library(None), log=None)
    try:
        if ir is None:
            copy = instrument(exe, tool, tmp_path, "--mode", "rehost", slot=slot)
        else:
            copy = instrument_ir(ir, tool, tmp_path, mode="rehost", slot=slot)
        if program is not None:
            corpus.prepare(program, copy.parent, exe, env)
        return run_rehost(copy, f"127.0.0.1:{port}", list(args), env=env)
    finally:
        srv.stop(None)


def test_rust_program_identical_and_fully_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program, exe, env, original, executed = _run_and_trace("hexyl", tmp_path, monkeypatch)
    assert len(original.stdout) > 10_000

    binary = load_binary(str(exe))
    found = {ins.address for proc in binary.procedures for ins in proc.instructions()}
    missed = sorted(pc for pc in executed if pc not in found)
    assert not missed, f"executed but not found by the descent: {[hex(pc) for pc in missed[:10]]}"
    # The functions its vtables name (relocated words, read here with pyelftools) are
    # procedures of their own, so their original entries get a jump.
    entries = {proc.address for proc in binary.procedures}
    called = _relocated_words(exe) & set(executed)
    assert len(called) > 10 and called <= entries, sorted(hex(pc) for pc in called - entries)[:10]

    # Rust's start-up included: it asks for SIGSEGV's and SIGBUS's actions and installs its
    # stack-overflow handler over the default that it is told of (told of Anvil's handler,
    # it skipped that: 205 instructions short). Within a few instructions, not exact: Rust's
    # hash maps take random keys (getrandom), and a probe may run a few more or fewer
    # instructions from run to run (19 more in one run of three, 74 fewer in another; qemu's
    # own runs agreed); a block missed or counted twice is thousands.
    inscount = instrument_ir(binary, "inscount", tmp_path, slot="inst")
    corpus.prepare(program, inscount.parent, exe, env)
    counted = run_prog(inscount, program.args, env=env)
    assert_same_behaviour(original, counted)
    assert abs(results(counted, "inscount")["total"] - sum(executed.values())) <= 200

    run, outcome = _rehost(exe, "cachesim", tmp_path, "rhst", program.args, env, program, binary)
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error


def test_free_pascal_program_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ptop (Free Pascal, static, stripped, A32 only): its frames are APCS frames (``push
    {fp, ip, lr, pc}``, ``ldmdb fp, {..., sp, pc}``), its case statements jump through
    tables of addresses indexed from their lowest case, its handlers are stored from literal
    pools, and its data is full of odd numbers that read as Thumb addresses. Every
    instruction qemu runs in it must be found, in A32, and counted (decision 0069)."""
    program, exe, env, original, executed = _run_and_trace("ptop", tmp_path, monkeypatch)
    assert b"program demo" in original.stdout.lower()

    binary = load_binary(str(exe))
    found = {ins.address: proc.thumb for proc in binary.procedures for ins in proc.instructions()}
    assert [hex(pc) for pc in executed if pc not in found][:10] == []
    assert not any(found[pc] for pc in executed), "A32 code read as Thumb"

    inscount = instrument(exe, "inscount", tmp_path, slot="inst")
    corpus.prepare(program, inscount.parent, exe, env)
    counted = run_prog(inscount, program.args, env=env)
    assert_same_behaviour(original, counted)
    assert results(counted, "inscount")["total"] == sum(executed.values())


# Packages whose counts follow from the input alone: the runtime's (its scheduler, garbage
# collector and monitor thread) and the atomics it calls vary from run to run.
_GO_RUNTIME = ("runtime", "sync", "internal/", "kernelcas", "memory_barrier", "indexbytebody", "time.")


def _stack_check(proc) -> tuple[int, int | None]:
    """A Go function's stack check: its instructions from the entry to its first conditional
    branch (``ldr r1, [sl, #8]; cmp sp, r1; bls tail``, longer for large frames) and that
    branch's target, the tail that calls morestack."""
    for n, ins in enumerate(proc.instructions(), 1):
        if ins.branch_target is not None and ins.cond != 14:
            return n, ins.branch_target
    return 0, None


def test_go_programs_identical_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """shfmt (Go 1.19, static, stripped): every function the PC table names is found, in
    A32, under its name; every tool's copy behaves as the original, the runtime's threads
    included; inscount counts the program's own functions as qemu does (decision 0089)."""
    program, exe, env, original, executed = _run_and_trace("shfmt", tmp_path, monkeypatch)
    assert original.stdout.count(b"\n") > 10

    binary = load_binary(str(exe))
    found = {ins.address: proc for proc in binary.procedures for ins in proc.instructions()}
    assert [hex(pc) for pc in executed if pc not in found][:10] == []
    assert not any(found[pc].thumb for pc in executed), "A32 code read as Thumb"
    names = {proc.name for proc in binary.procedures}
    assert {"main.main", "runtime.mallocgc", "runtime.goexit"} <= names

    # The copy's counts against qemu's, function by function, for the program's own
    # functions. A goroutine's stack grows when a call finds it too small: the function's
    # check (its first block) fails, its tail calls morestack and branches back to the
    # entry (3 instructions), and the check runs again. When that happens depends on the
    # garbage collector's shrinking of stacks, and varies from run to run (qemu's own runs
    # differ so too): a function's counts may differ by whole detours, nothing else. The
    # copy may grow a stack fewer times than qemu's run did (as often as qemu's run reached
    # the tail) or a few times more.
    inscount = instrument_ir(binary, "inscount", tmp_path, slot="inst")
    corpus.prepare(program, inscount.parent, exe, env)
    counted = run_prog(inscount, program.args, env=env)
    assert_same_behaviour(original, counted)
    per_function: dict[str, int] = {}
    for pc, times in executed.items():
        per_function[found[pc].name] = per_function.get(found[pc].name, 0) + times
    checks = {proc.name: _stack_check(proc) for proc in binary.procedures}
    detour = {name: length + 3 for name, (length, _) in checks.items()}
    grown = {name: executed.get(tail, 0) for name, (_, tail) in checks.items()}  # in qemu's run
    own = {name: n for name, n in per_function.items() if "." in name and not name.startswith(_GO_RUNTIME)}
    got = results(counted, "inscount")["procedures"]
    differ = {name: (n, got.get(name, 0)) for name, n in own.items() if got.get(name, 0) != n}
    assert len(own) > 300 and len(differ) <= len(own) // 4, sorted(differ.items())
    unexplained = {name: (n, m) for name, (n, m) in differ.items()
                   if (n - m) % detour[name] or not -4 <= (n - m) // detour[name] <= max(4, grown[name])}
    assert not unexplained, unexplained

    cachesim = instrument_ir(binary, "cachesim", tmp_path, slot="cach")  # calls into the analysis: the lock
    corpus.prepare(program, cachesim.parent, exe, env)
    for _ in range(3):  # threads meet differently in each run
        assert_same_behaviour(original, run_prog(cachesim, program.args, env=env))


# In the extended tier: gron's rewrite is half a minute, and age's test below covers a
# program that links the C library and ends by Go's own exit_group.
@pytest.mark.extended
def test_cgo_program_ended_by_go_writes_rehost_results(tmp_path: Path) -> None:
    """gron (Go with cgo, dynamic), which ends by Go's own exit_group though it links the C
    library: its ReHost copy behaves as the original and its results reach the server
    (decision 0089)."""
    gron = corpus.CORPUS["gron"]
    exe, root = corpus.fetch(gron)
    env = corpus.environment(gron, root)
    placed = place(exe, tmp_path, "gorg")
    corpus.prepare(gron, placed.parent, exe, env)
    original = run_prog(placed, gron.args, env=env)
    assert original.returncode == 0 and original.stdout.startswith(b"json = {};")
    run, outcome = _rehost(exe, "inscount", tmp_path, "grhs", gron.args, env, gron)
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error


def test_go_faults_recovered_and_threads_kept(tmp_path: Path) -> None:
    """samples/go_faults.go (Debian's Go, static, stripped): nil dereferences in the copy,
    which Go's handler turns into panics that fmt and a deferred recover catch, once the
    handler is given the original instruction's PC (before: "unexpected return pc", exit
    status 2); goroutines that end; the runtime's preemption signals arriving while a
    thread is inside the analysis (before: its handler's calls ran over the interrupted
    call's stack, and Go read its goroutine from an r10 the analysis had used: SIGSEGV in
    most of bbcount's runs, as it wrote its results). Every copy prints and exits as the
    original (decision 0089)."""
    exe = build_go("go_faults")
    original = run_prog(place(exe, tmp_path, "orig"), [])
    assert original.returncode == 3 and original.stdout.count(b"recovered: runtime error") == 3
    for tool, slot in (("inscount", "insc"), ("bbcount", "bbco"), ("cachesim", "cach")):
        copy = instrument(exe, tool, tmp_path, slot=slot)
        for _ in range(4):  # the runtime's threads and signals fall differently in each run
            assert_same_behaviour(original, run_prog(copy, []))
    run, outcome = _rehost(exe, "cachesim", tmp_path, "rhst", [])
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error


# Go 1.15 (decision 0135) in the extended tier: its own toolchain and standard library are
# built for the one test (about 45 CPU s).
@pytest.mark.parametrize("toolchain", [None, pytest.param("go1.15", marks=pytest.mark.extended)])
def test_go_loops_preempted_in_the_copy(tmp_path: Path, toolchain: str | None) -> None:
    """samples/go_preempt.go: two goroutines loop without a stack check while main collects
    garbage, which waits until the runtime's preemption signal has stopped both loops (the
    original never ends without it: GODEBUG=asyncpreemptoff=1). In a copy the signal found
    the copy's PC, which Go's PC table does not know, and the collection waited for ever,
    under every tool. Now the copy's loop heads ask whether Go wants the goroutine stopped
    and raise its signal where they are; a signal that stops the copy there (or at the
    start of any instruction's copy) is given the original's PC, and a preempted goroutine
    resumes in the copy (decision 0134): every copy ends as the original does (memtrace's
    too, whose calls took nearly all the time), and bbcount counts as many runs of the
    loop's first block as the program reports iterations (a resumption in the original
    would lose one for each preemption). Built by Debian's Go and by Go 1.15 (Debian 11's,
    whose PC table names frame maps by pointer: decision 0135; its memtrace copy had not
    ended after 5 minutes without the polls)."""
    exe = build_go("go_preempt", toolchain=toolchain)
    placed = place(exe, tmp_path, "orig")
    original = run_prog(placed, ["iterations"])
    assert original.returncode == 4 and original.stdout.startswith(b"collected three times")
    with pytest.raises(subprocess.TimeoutExpired):
        run_prog(placed, [], env={"GODEBUG": "asyncpreemptoff=1"}, timeout=4)

    loop = only_loop_start(next(proc for proc in load_binary(str(exe)).procedures if proc.name == "main.spin"))
    for tool, slot in (("bbcount", "bbco"), ("cachesim", "cach"), ("memtrace", "memt")):
        copy = instrument(exe, tool, tmp_path, slot=slot)
        for _ in range(2 if tool == "bbcount" else 1):  # where the signals fall differs from run to run
            run = run_prog(copy, ["iterations"], timeout=120)
            assert_same_behaviour(original, run)
            if tool == "bbcount":
                iterations = sum(map(int, (copy.parent / "iterations").read_text().split()))
                counts = {block["address"]: block["count"] for block in results(run, "bbcount")["counts"]}
                assert counts[loop] == iterations
    run, outcome = _rehost(exe, "inscount", tmp_path, "rhst", ["iterations"])
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error


def test_go_preempted_where_the_flags_are_live(tmp_path: Path) -> None:
    """samples/go_flags.go: a loop whose branches read the flags of the comparison before
    them, stopped by Go's preemption signal at every collection main makes while it runs
    (asyncPreempt gives the flags back as it returns: decision 0136, where x86-64's
    cachesim lost them): cachesim's copy prints the original's checksum."""
    exe = build_go("go_flags")
    original = run_prog(place(exe, tmp_path, "orig"), [])
    assert original.returncode == 5 and original.stdout.startswith(b"checksum ")
    assert_same_behaviour(original, run_prog(instrument(exe, "cachesim", tmp_path, slot="cach"), [], timeout=120))


def _branch_targets_in(program: Path, start: int, end: int) -> list[int]:
    """The targets of the A32 ``b`` instructions in ``program``'s bytes at [start, end)."""
    with program.open("rb") as f:
        elf = ELFFile(f)
        segment = next(s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD" and s["p_vaddr"] <= start
                       and end <= s["p_vaddr"] + s["p_filesz"])
        f.seek(segment["p_offset"] + start - segment["p_vaddr"])
        code = f.read(end - start)
    words = (int.from_bytes(code[k:k + 4], "little") for k in range(0, len(code) - 3, 4))
    return [start + 4 * k + 8 + ((word & 0xFFFFFF ^ 0x800000) - 0x800000) * 4
            for k, word in enumerate(words) if word >> 24 == 0xEA]


def test_go_preempted_on_a_trampoline_in_another_functions_code(tmp_path: Path) -> None:
    """samples/go_caves.go: the loop's calls return through trampolines in caves, the
    original code of other functions that Go may preempt (checked first, in the copy).
    Go's preemption signal that found a thread on such a trampoline was taken for one in
    that function: the goroutine was preempted there and resumed in that function's copy
    (every run died: "unexpected return pc"; Debian's hugo on most runs). Now the jump is
    taken before Go's handler looks (decision 0137)."""
    exe = build_go("go_caves")
    original = run_prog(place(exe, tmp_path, "orig"), [])
    assert original.returncode == 3 and original.stdout.startswith(b"collected twenty times")
    copy = instrument(exe, "inscount", tmp_path, slot="insc")
    functions = sorted(go_functions(ELFFile(exe.open("rb"))), key=lambda f: f.entry)
    entries = [f.entry for f in functions]
    spin = next(f for f in functions if f.name == "main.spin")
    hosts = {functions[bisect.bisect_right(entries, target) - 1] for target in _branch_targets_in(copy, spin.entry,
                                                                                                 spin.end)}
    assert any(host.preemptible and host is not spin for host in hosts), \
        f"no trampoline of main.spin's in a preemptible function ({hosts}): GO_CAVES_FUNCTIONS wants changing"
    for _ in range(3):  # where the signals fall differs from run to run
        assert_same_behaviour(original, run_prog(copy, [], timeout=120))


def test_go_program_without_a_pc_table_refused_in_one_line(tmp_path: Path) -> None:
    """shfmt with its PC table's header spoilt: exit status 2, one line naming the program
    and why, no output file."""
    exe, _ = corpus.fetch(corpus.CORPUS["shfmt"])
    spoilt = tmp_path / "shfmt"
    data = bytearray(exe.read_bytes())
    with exe.open("rb") as f:
        offset = ELFFile(f).get_section_by_name(".gopclntab")["sh_offset"]
    data[offset: offset + 4] = b"\0\0\0\0"
    spoilt.write_bytes(data)
    out = tmp_path / "shfmt.inst"
    proc = subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "--tool", "inscount", str(spoilt),
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"anvil: error: {spoilt}: a Go program (go1.") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
    assert not out.exists() and sorted(tmp_path.iterdir()) == [spoilt]


def test_position_independent_go_program_found_and_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """age (Go 1.19 with cgo, -buildmode=pie, stripped): its PC table is no section of its
    own but part of .data.rel.ro, found by its header; every instruction qemu runs in the
    executable is found, in A32, and the copy decrypts as the original (decision 0090).
    Before: refused as a Go program without a PC table."""
    program, exe, env, original, executed = _run_and_trace("age", tmp_path, monkeypatch)
    assert original.stdout == corpus.input_text()

    binary = load_binary(str(exe))
    assert binary.is_pie
    found = {ins.address: proc for proc in binary.procedures for ins in proc.instructions()}
    assert len(executed) > 1000
    assert [hex(pc) for pc in executed if pc not in found][:10] == []
    # Go's code is A32; the C of cgo and of the C library's start, linked in, is Debian's Thumb-2.
    with exe.open("rb") as f:
        go = go_functions(ELFFile(f))
    entries = [fn.entry for fn in go]
    in_go = [pc for pc in executed if (i := bisect.bisect_right(entries, pc) - 1) >= 0 and pc < go[i].end]
    assert len(in_go) > 1000 and not any(found[pc].thumb for pc in in_go), "A32 code read as Thumb"
    assert {"main.main", "runtime.goexit", "filippo.io/age.Decrypt"} <= {proc.name for proc in binary.procedures}

    # Go ends the program by its own exit_group, though the C library is linked: the
    # results are written all the same (decision 0089). The runtime's work varies from run
    # to run (its threads, the collector), so the total is near qemu's, not equal.
    inscount = instrument_ir(binary, "inscount", tmp_path, slot="inst")
    corpus.prepare(program, inscount.parent, exe, env)
    counted = run_prog(inscount, program.args, env=env)
    assert_same_behaviour(original, counted)
    assert abs(results(counted, "inscount")["total"] - sum(executed.values())) < sum(executed.values()) // 2


def test_pie_jump_through_a_literal_to_the_kernel_helpers(tmp_path: Path) -> None:
    """samples/kuser_jump.c (a PIE): ``ldr pc`` from a literal holding __kuser_cmpxchg's
    and __kuser_get_tls's fixed addresses, in A32 and Thumb. The copies jump to those
    absolute addresses, as the original does (they jumped to them moved by the image's
    load address: SIGSEGV, as age's copy did in runtime/internal/atomic.Cas; decision 0090).
    The oracle: the original's output, whose sum and thread pointer the program checks."""
    program = build("kuser_jump", "O2-thumb-dyn")
    original = run_prog(place(program, tmp_path, "orig"))
    assert (original.returncode, original.stdout) == (0, b"4250 1\n")
    counted = run_prog(instrument(program, "inscount", tmp_path, slot="inst"))
    assert_same_behaviour(original, counted)
    assert_same_behaviour(original, run_prog(instrument(program, "cachesim", tmp_path, slot="cach")))
