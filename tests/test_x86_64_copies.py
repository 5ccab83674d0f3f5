"""x86-64 programs run from their copies (decision 0109): the same behaviour, the same
addresses, and the original code left only through the jumps written over it.

Each program is rewritten with every procedure copied into the region below the image
(``rewriter/emit/elf64_image.py``: rel32 and RIP-relative fix-ups, jumps over the entries,
original return addresses where the stack may be unwound) and run natively beside the
original, both with address-space randomisation off (``setarch -R``) from paths of the same
length: standard output, standard error and exit status must be the same, and with them
the C++ exceptions the samples throw through copied code and ``backtrace``'s return
addresses. Under ``qemu-x86_64 -singlestep -d exec,nochain`` (an oracle that knows nothing
of the rewriting) the copy's run executes the original code only at the places a jump was
written over and in the loader stub: every copied instruction ran from its copy.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rewriter.arch.x86_64.loader import piece_sizes
from rewriter.emit import elf64_image
from rewriter.emit.elf64_image import write_copied
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import trace_pcs
from tests.support import samples
from tests.support.run import assert_native_copies_behave
from tests.test_sanitizer_exits import ASAN_C
from tests.test_x86_64_counts import _assert_inscount_exact

ARGS = {"goto": ["7"], "calls": ["a", "b"], "addresses": ["x"]}
# What test_x86_64_counts does not run natively under setarch -R: C++ exceptions through
# copies with original return addresses, and the loader stub spread over dead runs (the two
# small unwind builds have no room after their text). The printed addresses of globals,
# heap and stack are that file's (the counted `addresses` sample, every build).
CASES = [("containers", "x64-gcc-O2-static"), ("unwind", "x64-gcc-O2"),
         ("unwind", "x64-clang-O2"), ("unwind", "x64-gcc-O3-nopie"),
         # code the program copies to run elsewhere (V8's builtins): left as it is (decision 0112)
         ("x64_code_as_data", "x64-gcc-O2")]


def _run(program: Path, args: list[str], cwd: Path) -> tuple[bytes, bytes, int]:
    done = subprocess.run(["setarch", "-R", str(program), *args], cwd=cwd, capture_output=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin"})
    return done.stdout, done.stderr, done.returncode


def _assert_same(original: Path, args: list[str], tmp_path: Path) -> Path:
    """Rewrite ``original`` and run both: the same output, errors and status. Returns the copy."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    shutil.copy(original, plain)
    write_copied(load_binary(str(plain)), str(copied))
    want = _run(plain, args, tmp_path)
    got = _run(copied, args, tmp_path)
    assert got[2] == want[2], f"exit status {got[2]}, the original's {want[2]}: {got[1][-400:]!r}"
    assert got[0] == want[0], "standard output differs"
    assert got[1] == want[1], "standard error differs"
    return copied


@pytest.mark.parametrize(("sample", "variant"), CASES, ids=[f"{s}-{v}" for s, v in CASES])
def test_copies_behave_as_the_original(sample: str, variant: str, tmp_path: Path) -> None:
    _assert_same(samples.build_x86_64(sample, variant), ARGS.get(sample, []), tmp_path)


#: Debian's own amd64 programs, stripped as shipped, with work to do.
DEBIAN = {  # (ls and sed run under QEMU in test_x86_64_counts)
    "bash": ["/bin/bash", "-c", "for i in $(seq 1 50); do x=$((x + i * i)); done; echo $x ${BASH_VERSION%%.*}; "
             "f() { local y=$1; echo ${y^^}; }; f abc"],
    "gzip": ["/bin/gzip", "-9c", str(samples.SAMPLES_DIR / "sort.c")],
}


@pytest.mark.parametrize("name", sorted(DEBIAN))
def test_debian_programs_run_from_their_copies(name: str, tmp_path: Path) -> None:
    program, *args = DEBIAN[name]
    _assert_same(Path(program), args, tmp_path)


@pytest.mark.parametrize(("sample", "variant"), [("unwind", "x64-gcc-O2"), ("sort", "x64-gcc-O2-static")])
def test_original_code_runs_only_where_jumps_were_written(sample: str, variant: str, tmp_path: Path) -> None:
    original = samples.build_x86_64(sample, variant)
    binary = load_binary(str(original))
    copied = tmp_path / "prog"
    report = write_copied(binary, str(copied))
    result = trace_pcs(copied, ARGS.get(sample, []), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-400:]
    ran = {pc - result.load_bias for pc in result.pcs}
    in_region = {pc for pc in ran if report.region <= pc < report.region + report.region_size}
    procs, _ = elf64_image.copyable(binary)
    copied_code = {ins.address for proc in procs for ins in proc.instructions()}
    # The loader stub's pieces may lie in dead runs of the original code: they run there.
    stub = {a for start, size in zip(report.loader_stub, piece_sizes())
            for a in range(int(start, 16), int(start, 16) + size)}
    in_place = sorted((ran & copied_code) - report.jumps - stub)
    assert in_region, "nothing ran in the region"
    assert not in_place, f"{len(in_place)} copied instructions ran in place: {[hex(p) for p in in_place[:8]]}"
    assert len(in_region) > 10 * len((ran & copied_code) - stub), "the copies ran less than the jumps into them"


def test_the_region_has_room_for_the_jumps_it_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The region ends with the table of jumps the runtime writes over the original code (16
    bytes a jump): it was placed below the image without that room, and a program with many
    entries (Debian's cmake: 2.4 MiB of them, more than the 2 MiB left below the image)
    could not map it (decision 0112). With the room below the image cut to a page, a static
    program's thousands of entries show the same: the instrumented program must still run
    as the original does, and count."""
    from rewriter import cli

    monkeypatch.setattr(elf64_image, "GAP", 0x1000)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    shutil.copy(samples.build_x86_64("sort", "x64-gcc-O2-static"), plain)
    assert cli.main(["instrument", "--tool", "inscount", str(plain), "-o", str(copied)]) == 0
    assert _run(copied, [], tmp_path) == _run(plain, [], tmp_path)
    assert (tmp_path / "prog.inscount.out").read_text().startswith("inscount: ")


def test_code64_displacements_reach_what_they_name() -> None:
    """The copies' code (``Code64``, decision 0118) fills each displacement so that capstone,
    decoding the finished bytes, finds the instruction reaching what it named: a copied
    instruction's copy (the first, where one is copied twice; copies not made in address
    order), an original address where there is no copy, a link-time address, a symbol
    looked up at the end plus an addend; all after the code is moved."""
    import capstone

    from rewriter.arch.x86_64.code64 import Code64
    from rewriter.errors import RangeError

    code = Code64(0)
    copies: dict[int, int] = {}
    for original in (0x5000, 0x4000, 0x6000, 0x4000):  # out of order, 0x4000 twice
        copies.setdefault(original, code.size)
        code.copy_label(original)
        code.emit(b"\x90")
    symbols: dict[str, int] = {}
    wanted = []  # (offset of the instruction, what it must reach, as a function of the base)
    for original in (0x4000, 0x5000, 0x6000, 0x7000):
        wanted.append((code.size, (lambda base, o=original: base + copies[o] if o in copies else o)))
        code.rel32_copy(b"\xe8", b"", original)  # call
    wanted.append((code.size, lambda base: 0x123456))
    code.rel32(b"\x48\x8d\x3d", b"", 0x123456)  # lea rdi, [rip + ...]
    wanted.append((code.size, lambda base: symbols["table"] + 24))
    code.rel32_lookup(b"\x48\x83\x05", b"\x01", symbols.__getitem__, "table", 24)  # add qword [rip + ...], 1
    base = 0x10000000
    code.rebase(base)
    symbols["table"] = 0x10400000
    data = bytes(code.finish(lambda key: code.labels[key]))
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    for offset, target in wanted:
        ins = next(md.disasm(data[offset:], base + offset, 1))
        operand = ins.operands[-1] if ins.mnemonic == "lea" else ins.operands[0]
        got = operand.imm if operand.type == capstone.x86.X86_OP_IMM else ins.address + ins.size + operand.mem.disp
        assert got == target(base), (ins.mnemonic, ins.op_str)
    far = Code64(0)
    far.rel32(b"\xe9", b"", 1 << 40)
    with pytest.raises(RangeError):
        far.finish(lambda key: far.labels[key])


RETURN_ADDRESS_C = r"""
#include <stdio.h>
__attribute__((noinline)) void *called(void) { return __builtin_return_address(0); }
int main(void) { printf("%p\n", called()); return 0; }
"""


def test_return_addresses_as_asked(tmp_path: Path) -> None:
    """``--return-addresses original``: a program that reads its return address (no name the
    loader knows of unwinding, so relocated by default) reads the original's; by default it
    reads the copy's (the option was ignored for x86-64 programs: an ASan program's reports
    named the copies)."""
    source = tmp_path / "ret.c"
    source.write_text(RETURN_ADDRESS_C)
    program = tmp_path / "ret"
    subprocess.run(["gcc", "-O1", "-no-pie", str(source), "-o", str(program)], check=True)
    want = _run(program, [], tmp_path)
    printed = {}
    for returns in ("auto", "original"):
        copy = tmp_path / f"ret.{returns}"
        done = subprocess.run(["anvil", "instrument", "--tool", "inscount", "--return-addresses", returns,
                               str(program), "-o", str(copy)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        printed[returns] = _run(copy, [], tmp_path)
    assert printed["original"] == want
    assert printed["auto"][0] != want[0] and printed["auto"][2] == 0


@pytest.mark.parametrize(("tool", "mode"), [("cachesim", "inhost"), ("memtrace", "rehost")])
def test_split_stacks_behave_as_the_original(tool: str, mode: str, tmp_path: Path) -> None:
    """gcc -fsplit-stack: __morestack runs the rest of a function from the return address of
    its call + 1, past the ``ret`` there; in the copy that ``ret`` is copied bare (the code
    after it follows at once) and its call pushes the copy's return address. Before: wrong
    results (inscount) or SIGSEGV (cachesim). Every run of the recursion grows the stack."""
    plain = tmp_path / "prog"
    shutil.copy(samples.build_x86_64("x64_split_stack", "x64-gcc-O2-split-stack"), plain)
    want = _run(plain, [], tmp_path)
    assert want[0].startswith(b"r=") and want[2] == 0
    copy = tmp_path / "copy" / "prog"
    copy.parent.mkdir()
    done = subprocess.run(["anvil", "instrument", "--tool", tool, "--mode", mode, str(plain), "-o", str(copy)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run(["anvil", "run", "-q", str(copy)], cwd=copy.parent, capture_output=True, timeout=300)
    assert (run.stdout, run.returncode) == (want[0], 0), run.stderr[-400:]


def test_a_sanitizer_report_names_the_original_frames(tmp_path: Path) -> None:
    """An ASan program's report (a heap overflow) walks the stack's return addresses and
    prints them, symbolised: the copy returns to the original addresses (``__asan_init``
    asks for them, as the profilers' names do) and its report is the original's, frame for
    frame (before: the copy's addresses, unsymbolised, the stack cut short)."""
    source = tmp_path / "asan_bug.c"
    source.write_text(ASAN_C)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address", str(source), "-o",
                    str(plain)], check=True)
    done = subprocess.run(["anvil", "instrument", "--tool", "inscount", str(plain), "-o", str(copied)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    def report(program: Path) -> tuple[bytes, bytes, int]:
        out, err, status = _run(program, ["overflow"], program.parent)
        err = re.sub(rb"==\d+==", b"==PID==", err).replace(str(program).encode(), b"PROGRAM")
        return out, err, status

    want = report(plain)
    assert b"heap-buffer-overflow" in want[1] and b"in peek" in want[1] and want[2] != 0
    assert report(copied) == want


#: Debian's busybox-static: a stripped static glibc program, its shell's SIGCHLD handler
#: returning through ``__restore_rt`` at every child's end (decision 0149).
BUSYBOX_SCRIPT = ("x=$(echo abc | tr a-c x-z); echo $x; true | cat; /bin/true && echo external; "
                  "trap 'echo trapped' USR1; kill -USR1 $$; for i in 1 2 3; do echo $i | sed s/$/!/; done")


def test_debian_busybox_shell_runs_from_its_copy(tmp_path: Path) -> None:
    """Pipelines, command substitution, an external command and a trapped signal in
    busybox's shell: every copy crashed as the first child's SIGCHLD handler returned. The
    copy's output and status are the original's."""
    root = samples.debian_packages("busybox-static-amd64", ["busybox-static:amd64"], "bin/busybox")
    runs = []
    for name, make in (("a", shutil.copy), ("b", lambda src, dst: write_copied(load_binary(src), dst))):
        program = tmp_path / name / "busybox"  # (busybox runs the applet its name or first argument names)
        program.parent.mkdir()
        make(str(root / "bin" / "busybox"), str(program))
        runs.append(subprocess.run([str(program), "sh", "-c", BUSYBOX_SCRIPT], capture_output=True, cwd=tmp_path,
                                   env={"PATH": "/usr/bin:/bin"}, timeout=120))
    original, copy = runs
    assert original.returncode == 0 and b"trapped" in original.stdout and b"3!" in original.stdout, original
    assert (copy.returncode, copy.stdout, copy.stderr) == (original.returncode, original.stdout, original.stderr)


def test_programs_klibc_calls_as_main(tmp_path: Path) -> None:
    """klibc's programs (Debian's klibc-utils) name klibc's library as their interpreter,
    which calls their entry as main(argc, argv, envp): the loader stub took the stack it
    found there for the kernel's and every copy crashed; calls into the library ran from the
    original code, and the copy of such a call jumped to itself. Now the copy's output is
    the original's, and inscount, whose results are written as main returns, counts the
    program's instructions as qemu runs them; klibc's shell runs a pipeline."""
    for name in ("uname", "sh"):
        (tmp_path / name).mkdir()
    _assert_inscount_exact(Path("/usr/lib/klibc/bin/uname"), ["-a"], tmp_path / "uname")
    _assert_same(Path("/usr/lib/klibc/bin/sh"), ["-c", "x=$(echo abc); echo $x; echo def | cat; exit 3"],
                 tmp_path / "sh")


@pytest.mark.parametrize("strip", [False, True])
def test_tables_in_the_text_stay_data(strip: bool, tmp_path: Path) -> None:
    """samples/text_tables.c keeps constants in its text section, between two functions,
    and reads them through RIP-relative ``lea``s, one into the table's middle, as OpenSSL's
    assembly reads its SHA-2 and AES tables. Such an address, computed by the code and
    outside every function, was taken for code: its entry's jump was written over the table
    at start and the copy's sum differed (Debian's node printed wrong SHA-256 and SHA-512
    digests). Now a computed address outside what the unwind tables and symbols describe
    is not code (decision 0209); with the symbols stripped the unwind tables still tell."""
    program = samples.build_x86_64("text_tables", "x64-gcc-O2")
    if strip:
        bare = tmp_path / "stripped"
        subprocess.run(["objcopy", "--strip-all", str(program), str(bare)], check=True)
        program = bare
    original = assert_native_copies_behave(program, ["inscount", "cachesim"], tmp_path)
    assert original.returncode == 0 and original.stdout.endswith(b" 42\n"), original


def test_openssl_linked_in_gives_its_digests(tmp_path: Path) -> None:
    """Debian's libcrypto.a linked statically into samples/openssl_digests.c, stripped: OpenSSL's SHA-1,
    SHA-2 and AES assembly reads its tables from the text through RIP-relative ``lea``s
    (text_tables above, in a real library). The copies print the original's digests, which
    are Python's own (hashlib), and the original's AES block (the rewrite's fault is the same
    under every tool: inscount alone)."""
    program = tmp_path / "stripped"  # as distributions ship programs
    subprocess.run(["objcopy", "--strip-all", str(samples.build_x86_64("openssl_digests", "x64-gcc-O2-static",
                                                                        ["-lcrypto"])), str(program)], check=True)
    original = assert_native_copies_behave(program, ["inscount"], tmp_path)
    lines = original.stdout.decode().split()
    assert lines[:3] + lines[4:] == [hashlib.sha256(b"x").hexdigest(), hashlib.sha512(b"abc").hexdigest(),
                                     hashlib.sha1(b"abc").hexdigest(), hashlib.sha256(b"hello").hexdigest()]
