"""Bad input other than malformed ELF files, one case of each class the sweep of decision
0124 found (benchmarks/bad_input_sweep.py has them all): one line on stderr, exit status 2,
no output file, no hang; a signal ends a command without a partial file or an orphan.

Each case runs the real command line in a process of its own, in a directory of its own
holding copies of samples instrumented once for the module.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.samples import build, build_x86_64

ROOT = Path(__file__).resolve().parent.parent
TOOL_HEAD = "from rewriter.api import Arg, Option, Point, Tool\n"


def _anvil(where: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60,
           limit_file_size: int | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:  # a full disk: writes past the limit fail (EFBIG; Python ignores SIGXFSZ)
        if limit_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))

    return subprocess.run([sys.executable, "-m", "rewriter.cli", *args], cwd=where, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, preexec_fn=limit,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _refused(proc: subprocess.CompletedProcess, where: Path, before: set[str], needle: str) -> None:
    """One 'anvil: error:' line holding ``needle``, status 2, no traceback, no new file."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("anvil: error:"), proc.stderr
    assert needle in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr
    assert set(os.listdir(where)) == before, "files left behind"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ARM and x86-64 sort samples, InHost and ReHost copies of them, the ARM calls
    sample (which waits for stdin when given 'stdin') instrumented, a library without routines."""
    where = tmp_path_factory.mktemp("base")
    shutil.copy(build("sort", "O2-thumb-dyn"), where / "arm")
    shutil.copy(build_x86_64("sort", "x64-gcc-O2"), where / "x64")
    shutil.copy(build("calls", "O2-thumb-dyn"), where / "waits")
    for src, tool, mode, out in [("arm", "inscount", "inhost", "arm.inst"), ("arm", "cachesim", "rehost", "arm.rh"),
                                 ("x64", "cachesim", "rehost", "x64.rh"),
                                 ("waits", "inscount", "inhost", "waits.inst")]:
        proc = _anvil(where, "instrument", "-t", tool, "--mode", mode, src, "-o", out)
        assert proc.returncode == 0, proc.stderr
    (where / "empty.c").write_text("int nothing_here;\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(where / "empty.c"), "-o", str(where / "empty.so")], check=True)
    return where


def _case_dir(base: Path, tmp_path: Path, *names: str) -> Path:
    for name in names:
        for path in base.iterdir():
            if path.name == name or path.name.startswith(name + "."):
                shutil.copy(path, tmp_path / path.name)
    return tmp_path


# Options: checked by their argparse types as the command line is read (before any work),
# or against the input once it is loaded; none is ignored.
@pytest.mark.parametrize("args, needle", [
    (["instrument", "-t", "cachesim", "--mode", "rehost", "x64", "--ring-size", "0"], "--ring-size 0 is out of range"),
    (["instrument", "-t", "inscount", "x64", "-o", ""], "'' is not a file name"),
    (["instrument", "-t", "inscount", "x64", "--out", "x" * 300], "longer than a file name can be"),
    (["instrument", "-t", "inscount", "x64", "--ram-region", "0x20000000:64K"], "--ram-region is for Cortex-M images"),
    (["instrument", "-t", "inscount", "arm", "--only", "no_such_procedure*"], "no procedure of arm matches"),
    (["instrument", "-t", "cachesim", "arm", "--opt", "size=16k,size=32k"], "'size' given twice"),
    (["rehost-server", "--workers", "99999999999999999999"], "--workers 99999999999999999999: a server needs"),
    (["rehost-listen", "x64.rh", "--timeout", "nan"], "--timeout nan must be more than 0 seconds"),
    (["rehost-listen", "x64.rh", "--from", "x64", "--idle", "inf"], "--idle inf must be more than 0 seconds"),
    (["run", "x64.rh", "--server", ""], "'' is not HOST:PORT"),
    (["run", "x64.rh", "--server", "127.0.0.1:70000"], "is not HOST:PORT"),
])
def test_option_out_of_range_or_not_applying(base: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    where = _case_dir(base, tmp_path, "x64", "x64.rh", "arm")
    before = set(os.listdir(where))
    if args[0] == "instrument" and "-o" not in args:
        args = [*args, "-o", "out"]
    _refused(_anvil(where, *args), where, before, needle)


# Inputs that are not regular files: a FIFO would block the read for ever, /dev/zero never end it.
@pytest.mark.parametrize("command", [["instrument", "-t", "inscount"], ["inspect"], ["image"], ["run"]])
@pytest.mark.parametrize("given", ["fifo", "/dev/zero"])
def test_input_that_is_not_a_file(tmp_path: Path, command: list[str], given: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    before = set(os.listdir(tmp_path))
    kind = "a FIFO" if given == "fifo" else "a character device"
    _refused(_anvil(tmp_path, *command, given, timeout=30), tmp_path, before, f"cannot read {given}: it is {kind}")


# Outputs: never a FIFO or device replaced (as root, /dev/null), never the input overwritten,
# never a partial file, whatever ends the writing.
@pytest.mark.parametrize("args, needle", [
    (["instrument", "-t", "inscount", "arm", "-o", "fifo"], "cannot write fifo: it is a FIFO"),
    (["instrument", "-t", "inscount", "arm", "-o", "arm"], "it is the input file arm"),
    (["image", "arm", "-o", "arm"], "it is the input file arm"),
    (["run", "arm.inst", "--out", "nodir/results"], "cannot write nodir/results: no directory"),
])
def test_output_that_must_not_be_written(base: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    where = _case_dir(base, tmp_path, "arm", "arm.inst")
    os.mkfifo(where / "fifo")
    before = set(os.listdir(where))
    data = (where / "arm").read_bytes()
    _refused(_anvil(where, *args, timeout=30), where, before, needle)
    assert (where / "arm").read_bytes() == data


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
def test_disk_full(base: Path, tmp_path: Path, mode: str) -> None:
    """A write the file system refuses (here: past RLIMIT_FSIZE, EFBIG with no file name, as
    ENOSPC comes) is the machine's: one line naming the file, no partial file; it was an
    internal error (status 70). (The x86-64 copies are linked with no linker run, which the
    limit would stop first.)"""
    where = _case_dir(base, tmp_path, "x64")
    before = set(os.listdir(where))
    proc = _anvil(where, "instrument", "-t", "cachesim", "--mode", mode, "x64", "-o", "out", limit_file_size=100000)
    _refused(proc, where, before, "out: File too large")


# Tool files whose classes or calls do not fit the API: one line naming the file (and the
# line of the call), found where the mistake is made; they were internal errors (status
# 70) or calls placed nowhere without a word.
TOOLS = {
    "no instrument method": ("class T(Tool):\n    name = 't'\n", "defines no instrument(self, binary, opts)"),
    "instrument's arguments": ("class T(Tool):\n    name = 't'\n    def instrument(self):\n        pass\n",
                               "has instrument(self): it is called as instrument(self, binary, opts)"),
    "options not Options": ("class T(Tool):\n    name = 't'\n    options = 5\n    def instrument(self, b, o):\n"
                            "        pass\n", "has options that are not a list of rewriter.api.Option"),
    "a point that is not one": ("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                "        b.call('before', self.prototype('f', Arg.CONST), 1)\n",
                                "t.py: T.instrument() (line 5): a call on the program takes Point.BEFORE or "
                                "Point.AFTER, not 'before'"),
    "a prototype that is not one": ("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                    "        b.call(Point.BEFORE, 'f', 1)\n",
                                    "(line 5): a call on the program takes a prototype"),
    "an unsupported point": ("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                             "        b.procedures[0].call(Point.AFTER, self.prototype('f', Arg.CONST), 1)\n",
                             "(line 5): a call on a procedure takes Point.BEFORE, not <Point.AFTER"),
    "a constant too wide": ("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                            "        b.call(Point.BEFORE, self.prototype('f', Arg.CONST), 1 << 70)\n",
                            "(line 5): f: argument 1180591620717411303424 does not fit kind CONST"),
    "a routine name that is not C": ("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                     "        b.call(Point.BEFORE, self.prototype('f-1'))\n",
                                     "prototype name 'f-1' is not a C identifier"),
}


@pytest.mark.parametrize("case", TOOLS)
def test_tool_file_that_misuses_the_api(base: Path, tmp_path: Path, case: str) -> None:
    body, needle = TOOLS[case]
    where = _case_dir(base, tmp_path, "arm")
    (where / "t.py").write_text(TOOL_HEAD + body)
    (where / "t.c").write_text("void f(unsigned a) { (void)a; }\n")
    before = set(os.listdir(where))
    _refused(_anvil(where, "instrument", "-t", "./t.py", "arm", "-o", "out"), where, before, needle)


# `anvil run` of what it cannot run as it is asked to: said before the program starts.
@pytest.mark.parametrize("case, args, needle", [
    ("report damaged", ["run", "arm.inst"], "arm.inst.anvil.json: not an Anvil report"),
    ("site table of another program", ["run", "arm.rh"], "arm.rh.sites.json is not arm.rh's site table"),
    ("Linux program on a board", ["run", "--board", "mps2-an385", "arm.inst"], "is a Linux program, not a firmware"),
    ("no loader in the sysroot", ["run", "arm.inst"], "dynamic loader /lib/ld-linux-armhf.so.3 is not in"),
    ("library without the routines", ["run", "arm.rh", "--lib", "./empty.so"], "does not define routine"),
    ("a file name with a line break", ["run", "a\nb"], "cannot read a\\nb: No such file"),
    # Moved without its site table and report: it ran, its records going nowhere.
    ("ReHost copy alone", ["run", "arm.rh"], "arm.rh is a ReHost copy, but its site table arm.rh.sites.json is"),
    ("x86-64 ReHost copy alone", ["run", "x64.rh"], "x64.rh is a ReHost copy, but its site table"),
])
def test_run_refused_before_the_program_starts(base: Path, tmp_path: Path, case: str, args: list[str],
                                               needle: str) -> None:
    where = _case_dir(base, tmp_path, "arm.inst", "arm.rh", "x64.rh", "empty.so")
    if case == "report damaged":
        (where / "arm.inst.anvil.json").write_text("{oops")
    if case == "site table of another program":
        shutil.copy(where / "x64.rh.sites.json", where / "arm.rh.sites.json")
    if case.endswith("ReHost copy alone"):
        name = args[1]
        (where / f"{name}.sites.json").unlink()
        (where / f"{name}.anvil.json").unlink()
    before = set(os.listdir(where))
    env = {"QEMU_LD_PREFIX": str(tmp_path)} if case == "no loader in the sysroot" else None
    _refused(_anvil(where, *args, env=env, timeout=60), where, before, needle)


def test_firmware_for_another_board(tmp_path: Path) -> None:
    """An image linked for MPS2's map, run on a Netduino 2 (flash at 0x08000000): QEMU spun
    on the lockup for ever."""
    from tests.support.boards import build_firmware

    shutil.copy(build_firmware("crc", "mps2-an385"), tmp_path / "fw")
    _refused(_anvil(tmp_path, "run", "--board", "netduino2", "fw", timeout=60), tmp_path, {"fw"},
             "where netduino2 has no memory")


def _started(where: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rewriter.cli", *args], cwd=where, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _group_gone(pid: int) -> bool:
    """Whether nothing of the process group ``pid`` started (qemu) outlived it."""
    time.sleep(0.3)
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    os.killpg(pid, signal.SIGKILL)
    return False


def test_sigterm_during_instrument_leaves_nothing(tmp_path: Path) -> None:
    """``kill PID`` while a static program is rewritten: the command ends by SIGTERM (status
    143 in a shell), one line, and neither the output, its report nor a temporary file."""
    shutil.copy(build("sort", "Os-thumb-static"), tmp_path / "big")
    proc = _started(tmp_path, "instrument", "-t", "cachesim", "-j", "1", "big", "-o", "out")
    time.sleep(1.0)  # (the rewrite takes 2 s on a quiet machine: 2 s let it finish first)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    assert err in ("", "anvil: stopped by SIGTERM\n"), err  # "" if it came before main() started
    assert os.listdir(tmp_path) == ["big"]


def test_sigterm_during_run_reaches_the_program(base: Path, tmp_path: Path) -> None:
    """``kill PID`` of ``anvil run`` goes to the program it runs (qemu-arm passes it on):
    anvil ends as the program does, and leaves no qemu running without it."""
    where = _case_dir(base, tmp_path, "waits.inst")
    proc = _started(where, "run", "waits.inst", "stdin")  # reads stdin until it ends: it waits
    time.sleep(3.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    assert "Traceback" not in err and "internal error" not in err
    assert _group_gone(proc.pid), "the program was left running"


def test_sigterm_before_the_program_starts(base: Path, tmp_path: Path) -> None:
    """``kill PID`` while ``anvil run`` waits for a server that does not answer (a listener
    that says nothing): there is no program to forward it to, so anvil stops at once."""
    import socket

    where = _case_dir(base, tmp_path, "x64.rh")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        proc = _started(where, "run", "x64.rh", "--server", f"127.0.0.1:{silent.getsockname()[1]}")
        time.sleep(2.0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=3)  # the health check alone waits longer
    assert proc.returncode == -signal.SIGTERM, err
    assert err in ("", "anvil: stopped by SIGTERM\n"), err
    assert sorted(os.listdir(where)) == ["x64.rh", "x64.rh.anvil.json", "x64.rh.sites.json"]


@pytest.mark.parametrize("compiler", ["arm-linux-gnueabihf-gcc", "gcc"])
def test_a_shared_library_is_not_a_program(compiler: str, tmp_path: Path) -> None:
    """A shared library given to ``anvil instrument`` (no program interpreter, not marked PIE,
    no entry): one line, status 2, no output. The ARM one was rewritten (its "entry" 0
    pointed at the stub) and crashed every program that loaded it; the x86-64 one was
    refused for a reason that was not it."""
    (tmp_path / "lib.c").write_text("int twice(int x) { return 2 * x; }\n")
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "lib.c", "-o", "lib.so"], cwd=tmp_path, check=True)
    before = set(os.listdir(tmp_path))
    _refused(_anvil(tmp_path, "instrument", "-t", "inscount", "lib.so", "-o", "lib.inst.so"), tmp_path, before,
             "a shared library, not a program")


@pytest.mark.parametrize("command", [["run"], ["instrument", "-t", "inscount"]])
@pytest.mark.parametrize("name", ["arm", "x64"])
def test_a_file_of_debug_information_is_not_a_program(base: Path, tmp_path: Path, name: str,
                                                      command: list[str]) -> None:
    """``objcopy --only-keep-debug`` keeps the program headers but no bytes under them (an
    empty PT_INTERP): one line and status 2 (``anvil run`` handed the ARM one to qemu-arm,
    which died of SIGSEGV itself: status 139, no message)."""
    objcopy = "arm-linux-gnueabihf-objcopy" if name == "arm" else "objcopy"
    subprocess.run([objcopy, "--only-keep-debug", str(base / name), str(tmp_path / "prog.debug")], check=True)
    before = set(os.listdir(tmp_path))
    _refused(_anvil(tmp_path, *command, "prog.debug"), tmp_path, before, "program interpreter")


def test_an_x86_64_program_linked_above_4_gib(tmp_path: Path) -> None:
    """A PIE that lld links at 4 GiB runs, but its copy's library cannot be linked there:
    one line naming that, not the linker's first line of complaint."""
    (tmp_path / "high.c").write_text("int main(void) { return 3; }\n")
    subprocess.run(["clang", "-O2", "-fuse-ld=lld", "-Wl,--image-base=0x100000000", "high.c", "-o", "high"],
                   cwd=tmp_path, check=True)
    assert subprocess.run([str(tmp_path / "high")]).returncode == 3
    before = set(os.listdir(tmp_path))
    _refused(_anvil(tmp_path, "instrument", "-t", "inscount", "high", "-o", "high.inst"), tmp_path, before,
             "linked at or above 4 GiB")


@pytest.mark.parametrize("name", ["arm", "x64"])
def test_a_dynamic_table_out_of_place(base: Path, tmp_path: Path, name: str) -> None:
    """PT_DYNAMIC's address moved off its bytes (a fuzzer's mutant; the dynamic linker would
    read the table elsewhere): one line naming it, status 2 (it was an internal error as
    the rewrite went to edit the table there)."""
    data = bytearray((base / name).read_bytes())
    is64 = data[4] == 2
    phoff = struct.unpack_from("<Q" if is64 else "<I", data, 32 if is64 else 28)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54 if is64 else 42)
    for i in range(phnum):
        at = phoff + i * phentsize
        if struct.unpack_from("<I", data, at)[0] == 2:  # PT_DYNAMIC: move p_vaddr by 0x1000 + 3
            field = at + (16 if is64 else 8)
            fmt = "<Q" if is64 else "<I"
            struct.pack_into(fmt, data, field, struct.unpack_from(fmt, data, field)[0] + 0x1003)
    (tmp_path / "moved").write_bytes(bytes(data))
    before = set(os.listdir(tmp_path))
    _refused(_anvil(tmp_path, "instrument", "-t", "inscount", "moved", "-o", "moved.inst"), tmp_path, before,
             "dynamic table (PT_DYNAMIC)")
