"""Sweep of the bad input a user can give Anvil's command line, other than malformed ELF
files (benchmarks/fuzz_elf.py has those): options out of range or of the wrong type, tool
files and analysis libraries that fail, files that are not what a command needs, ReHost
servers that are not there or go away, signals, the environment (decision 0124).

Each case runs ``python3 -m rewriter.cli ...`` in a directory of its own (the samples it
needs copied in) and is judged as a user sees it: the exit status, stderr's lines, a
Python traceback, files left behind, a hang (past --timeout). Bad input must get one
line on stderr starting ``anvil: error:``, exit status 2 and no file::

    python3 benchmarks/bad_input_sweep.py [--only SUBSTRING] [--keep DIR]

prints a table (Markdown) of every case and ends with status 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARM_TOOLCHAIN = "arm-linux-gnueabihf-gcc"


@dataclass
class Case:
    """One command line: ``argv`` after ``anvil``, run in a directory holding ``files``
    (base files, each with its side files: ``arm.rh`` brings ``arm.rh.sites.json``)."""

    group: str
    name: str
    argv: list[str]
    files: tuple[str, ...] = ()
    setup: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: "refused": status 2, one line, no file. "signal": ended by the signal the action
    #: sends (status 128+N or -N), at most one line, no file. "status N": that status,
    #: no traceback (the program's own, e.g. a ReHost run whose server died). "serves": a
    #: server that runs until it is stopped (good input given among the bad).
    expect: str = "refused"
    action: Callable[[subprocess.Popen, Path], None] | None = None
    #: None: stdin is a pipe the action may close (a program that waits for it); else /dev/null.
    stdin: bytes | None = b""
    timeout: float = 60.0
    #: Files the command may leave (the case's directory, a name in it): a cache's finished
    #: entries, a killed program's results.
    may_leave: Callable[[Path, str], bool] = lambda where, name: False


@dataclass
class Outcome:
    case: Case
    status: int | None
    first_line: str
    lines: int
    traceback: bool
    left: list[str]
    seconds: float
    orphans: bool = False  # a process it started (qemu) still ran after it ended

    @property
    def problems(self) -> list[str]:
        c, found = self.case, []
        if self.status is None and self.case.expect != "serves":
            return ["hang"]
        if self.traceback:
            found.append("traceback")
        if self.orphans:
            found.append("left its program running")
        if c.expect == "refused":
            if self.status != 2:
                found.append(f"status {self.status}")
            if self.lines != 1 or not self.first_line.startswith("anvil: error:"):
                found.append(f"{self.lines} lines")
            if "internal error" in self.first_line:
                found.append("internal error")
        elif c.expect == "signal":
            if self.status in (0, 2, 70):
                found.append(f"status {self.status}")
            said = self.lines - self.first_line.startswith("anvil: waiting")  # rehost-listen's address
            if said > 1:
                found.append(f"{self.lines} lines")
        elif c.expect.startswith("status "):
            if self.status != int(c.expect.split()[1]):
                found.append(f"status {self.status}")
        elif c.expect == "serves":  # a server given good input: it runs until it is stopped
            if self.status is not None or "serving" not in self.first_line:
                found.append(f"status {self.status}")
        if self.left and c.expect in ("refused", "signal"):
            found.append("left " + ",".join(self.left))
        return found


# --- the base files: samples and their instrumented copies ---------------------------------

def make_base(base: Path) -> None:
    """Samples (ARM Linux, x86-64 Linux, a Cortex-M image, a program that waits for stdin)
    and their InHost and ReHost copies, into ``base``."""
    from tests.support.boards import build_firmware
    from tests.support.samples import build, build_x86_64

    base.mkdir(parents=True, exist_ok=True)
    for name, path in [("arm", build("sort", "O2-thumb-dyn")), ("x64", build_x86_64("sort", "x64-gcc-O2")),
                       ("fw", build_firmware("crc", "mps2-an385")), ("waits", build("calls", "O2-thumb-dyn")),
                       ("waits64", build_x86_64("calls", "x64-gcc-O2")),
                       ("big", build("sort", "Os-thumb-static"))]:
        shutil.copy(path, base / name)
    for src, tool, mode, out, extra in [
            ("arm", "inscount", "inhost", "arm.inst", []), ("arm", "cachesim", "rehost", "arm.rh", []),
            ("x64", "inscount", "inhost", "x64.inst", []), ("x64", "cachesim", "rehost", "x64.rh", []),
            ("fw", "inscount", "inhost", "fw.inst", []), ("fw", "cachesim", "rehost", "fw.rh", []),
            ("waits", "cachesim", "rehost", "waits.rh", ["--ring-size", "256"]),
            ("waits64", "cachesim", "rehost", "waits64.rh", ["--ring-size", "256"])]:
        subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "-t", tool, "--mode", mode, src,
                        "-o", out, *extra], cwd=base, check=True, env=_env({}), capture_output=True)
    # The same analysis as shared libraries: for this host, for ARM (another ISA), without
    # the routines (a library that loads but lacks them).
    cachesim = ROOT / "analysis_libs" / "cachesim" / "cachesim.c"
    (base / "empty.c").write_text("int nothing_here;\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(base / "empty.c"), "-o", str(base / "empty.so")], check=True)
    if shutil.which(ARM_TOOLCHAIN):
        subprocess.run([ARM_TOOLCHAIN, "-shared", "-fPIC", str(base / "empty.c"), "-o", str(base / "arm.so")],
                       check=True)
    del cachesim


#: The checkout whose Anvil is swept (--code): this one, or another to compare with.
CODE = ROOT


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(CODE), **extra}
    env.pop("ANVIL_REHOST_CONNECT", None)
    return env


# --- helpers the cases use -----------------------------------------------------------------

def _write(name: str, text: str | bytes) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        (d / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return setup


def _tool(body: str, c: str | None = "void f(unsigned a) { (void)a; }\n", name: str = "t") -> Callable[[Path], None]:
    """A tool file t.py (with the Tool imports) and its C file t.c."""
    def setup(d: Path) -> None:
        (d / f"{name}.py").write_text("from rewriter.api import Arg, Point, Tool\n" + body)
        if c is not None:
            (d / f"{name}.c").write_text(c)
    return setup


def _both(*setups: Callable[[Path], None] | None) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        for s in setups:
            if s is not None:
                s(d)
    return setup


def _fifo(name: str) -> Callable[[Path], None]:
    return lambda d: os.mkfifo(d / name)


def _mkdir(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).mkdir()


def _truncate(name: str, keep: int) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        data = (d / name).read_bytes()
        (d / name).write_bytes(data[:keep])
    return setup


def _edit(name: str, change: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        (d / name).write_bytes(change((d / name).read_bytes()))
    return setup


def _mount_tmpfs(name: str, options: str) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        (d / name).mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d / name)], check=True)
    return setup


def _results(where: Path, name: str) -> bool:
    """A results file (``<program>.<tool>.out``)."""
    return name.endswith(".out")


def _whole_elf(path: Path) -> bool:
    """Whether ``path`` is an ELF file with all its section headers (written to its end)."""
    data = path.read_bytes()
    if len(data) < 64 or data[:4] != b"\x7fELF":
        return False
    wide = data[4] == 2
    shoff = int.from_bytes(data[40:48] if wide else data[32:36], "little")
    entsize, count = (int.from_bytes(data[o:o + 2], "little") for o in ((58, 60) if wide else (46, 48)))
    return len(data) >= shoff + entsize * count


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Listener:
    """A TCP listener that is no gRPC server: it accepts and says ``reply`` (or nothing)."""

    def __init__(self, reply: bytes | None) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.reply is not None:
                try:
                    conn.sendall(self.reply)
                except OSError:
                    pass


SILENT = _Listener(None)
CHATTY = _Listener(b"HTTP/1.0 200 OK\r\n\r\nhello\r\n")
BUSY_PORT = SILENT.port  # a port in use (by the silent listener)
CLOSED_PORT = _free_port()


def _signal_after(signum: int, seconds: float) -> Callable[[subprocess.Popen, Path], None]:
    """Ctrl-C (SIGINT to the terminal's whole process group) or ``kill PID`` (SIGTERM to
    anvil alone) after ``seconds``."""
    def action(proc: subprocess.Popen, d: Path) -> None:
        time.sleep(seconds)
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
    return action


def _server_dies(port: int) -> Callable[[subprocess.Popen, Path], None]:
    """Start a rehost-server on ``port`` before the run; kill it once the program waits on stdin."""
    def action(proc: subprocess.Popen, d: Path) -> None:
        time.sleep(4)
        SERVERS[port].kill()
        SERVERS[port].wait()
        time.sleep(1)
        assert proc.stdin is not None
        proc.stdin.close()
    return action


SERVERS: dict[int, subprocess.Popen] = {}


def _start_server(port: int) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        server = subprocess.Popen([sys.executable, "-m", "rewriter.cli", "rehost-server", "--listen",
                                   f"127.0.0.1:{port}"], env=_env({}), stderr=subprocess.PIPE)
        SERVERS[port] = server
        assert server.stderr is not None
        server.stderr.readline()  # "serving ..." once it listens
    return setup


# --- the cases ------------------------------------------------------------------------------

def cases() -> list[Case]:
    out: list[Case] = []

    def add(group: str, name: str, argv: list[str], files: tuple[str, ...] = (), **kw: object) -> None:
        out.append(Case(group, name, argv, files, **kw))  # type: ignore[arg-type]

    inst = ["instrument", "-t", "inscount"]
    # Options of `instrument`, on ARM and x86-64 programs.
    for prog in ("arm", "x64"):
        rh = ["instrument", "-t", "cachesim", "--mode", "rehost", prog, "-o", "out"]
        for size in ("0", "-4", "1001", "abc", "99999999999999999999", "1e3", "", "16q", "0x100000000"):
            add("instrument options", f"{prog}: --ring-size {size!r}", [*rh, "--ring-size", size], (prog,))
        for jobs in ("0", "-1", "abc", "1.5", "", "99999999999999999999999"):
            add("instrument options", f"{prog}: --jobs {jobs!r}", [*inst, prog, "-o", "out", "--jobs", jobs], (prog,),
                expect="refused" if jobs != "99999999999999999999999" else "status 0")
        for opt in ("--mode bogus", "--format xml", "--return-addresses bogus", "--board nosuch",
                    "--board mps2-an385", "--flash-region 0x0:64K", "--ram-region 0x20000000:64K",
                    "--transport uart", "--uart-base 0x40004000", "--ring-size 1k"):
            add("instrument options", f"{prog}: {opt}", [*inst, prog, "-o", "out", *opt.split()], (prog,))
        for opt in ("size=0", "size=3000", "size=-1", "size=abc", "size=1e9", "assoc=0", "assoc=3", "line=0",
                    "line=3", "line=1", "line=1m", "assoc=1024", "size=64,line=128", "kept=3", "kept=abc",
                    "nosuch=1", "size", "=1", "size=", ",", "size=16k,size=32k"):
            expect = "status 0" if opt in (",",) else "refused"
            add("tool options", f"{prog}: cachesim --opt {opt}", ["instrument", "-t", "cachesim", "--opt", opt, prog,
                                                                  "-o", "out"], (prog,), expect=expect)
        for opt in ("top=-1", "top=0", "top=abc", "top=99999999999999999999"):
            add("tool options", f"{prog}: bbcount --opt {opt}", ["instrument", "-t", "bbcount", "--opt", opt, prog,
                                                                 "-o", "out"], (prog,))
        add("tool options", f"{prog}: inscount --opt x=1", [*inst, "--opt", "x=1", prog, "-o", "out"], (prog,))
        add("instrument options", f"{prog}: --only nomatch", [*inst, "--only", "no_such_proc*", prog, "-o", "out"],
            (prog,))
        add("instrument options", f"{prog}: --skip '*'", [*inst, "--skip", "*", prog, "-o", "out"], (prog,),
            expect="status 0")  # asked for in so many words: nothing instrumented, and the report says so
        add("instrument options", f"{prog}: --out ''", [*inst, "--out", "", prog, "-o", "out"], (prog,))
        add("instrument options", f"{prog}: --out with a newline", [*inst, "--out", "a\nb", prog, "-o", "out"],
            (prog,), expect="status 0")
        add("instrument options", f"{prog}: --out 5000 bytes", [*inst, "--out", "x" * 5000, prog, "-o", "out"],
            (prog,))
    fw = ["instrument", "-t", "cachesim", "fw", "-o", "out"]
    for opt in ("--board nosuch", "--board microbit", "--board lm3s811evb", "--ram-region abc",
                "--ram-region 0x20000000", "--ram-region 0x20000000:0", "--ram-region 0x20000000:-4",
                "--ram-region 0xffffff00:1M", "--ram-region 0x0:64K", "--ram-region 0x20000000:4",
                "--ram-region 0x20000000:0x400000", "--flash-region abc", "--flash-region 0x0:64K",
                "--flash-region 0x20000000:64K --ram-region 0x20000000:64K", "--flash-region 0x400000:4",
                "--ram-region 0x20000000:16K --flash-region 0x20000000:16K",
                "--mode rehost --transport uart --uart-base 0x3", "--mode rehost --transport uart --uart-base abc",
                "--mode rehost --transport uart --uart-base 0xfffffff0", "--mode rehost --transport bogus",
                "--mode rehost --ring-size 64m", "--mode rehost --ring-size 1m"):
        add("firmware options", f"fw: {opt}", [*fw, *opt.split()], ("fw",),
            expect="status 0" if opt.endswith("1m") else "refused")

    # Tool files.
    tf = [*inst[:2], "t.py", "arm", "-o", "out"]
    tools = {
        "syntax error": _tool("class T(Tool:\n"),
        "import error": _tool("import no_such_module_here\n"),
        "no Tool subclass": _tool("x = 1\n"),
        "two Tool subclasses": _tool("class A(Tool):\n    name='a'\n    def instrument(self, b, o): pass\n"
                                     "class B(Tool):\n    name='b'\n    def instrument(self, b, o): pass\n"),
        "no instrument method": _tool("class T(Tool):\n    name = 't'\n"),
        "instrument not callable": _tool("class T(Tool):\n    name = 't'\n    instrument = 3\n"),
        "instrument with wrong arity": _tool("class T(Tool):\n    name = 't'\n    def instrument(self):\n"
                                             "        pass\n"),
        "name not a string": _tool("class T(Tool):\n    name = 42\n    def instrument(self, b, o): pass\n"),
        "raises in instrument": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                      "        raise ValueError('boom')\n"),
        "returns a wrong type": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                      "        return 42\n"),
        "no calls at all": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                 "        pass\n", None),
        "prototype name not a string": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                             "        b.call(Point.BEFORE, self.prototype(3))\n"),
        "call with a non-Point": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                       "        b.call('before', self.prototype('f', Arg.CONST), 1)\n"),
        "call with too few arguments": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                             "        b.call(Point.BEFORE, self.prototype('f', Arg.CONST))\n"),
        "call with too many arguments": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                              "        b.call(Point.BEFORE, self.prototype('f', Arg.CONST), 1, 2)\n"),
        "constant not a number": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                       "        b.call(Point.BEFORE, self.prototype('f', Arg.CONST), 'x')\n"),
        "constant too wide": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                   "        b.call(Point.BEFORE, self.prototype('f', Arg.CONST), 1 << 70)\n"),
        "call with a non-prototype": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                           "        b.call(Point.BEFORE, 'f', 1)\n"),
        "routine missing from its C": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                            "        b.call(Point.BEFORE, self.prototype('g', Arg.CONST), 1)\n"),
        "C that does not compile": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                                         "        b.call(Point.BEFORE, self.prototype('f', Arg.CONST), 1)\n",
                                         "void f(unsigned a) { oops }\n"),
        "no C file": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                           "        b.call(Point.BEFORE, self.prototype('f', Arg.CONST), 1)\n", None),
        "options declared wrong": _tool("class T(Tool):\n    name = 't'\n    options = 5\n"
                                        "    def instrument(self, b, o): pass\n"),
        "exits at import": _tool("import os\nos._exit(0)\n") if False else _tool("raise SystemExit(0)\n"),
        "binary bytes": _write("t.py", b"\x00\xff\xfe garbage\x00"),
        "empty file": _write("t.py", b""),
        "recursion": _tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                           "        self.instrument(b, o)\n"),
    }
    for what, setup in tools.items():
        for mode in ("inhost", "rehost"):
            # ReHost builds the tool's C where the analysis runs (anvil run, a rehost-server),
            # which says so in one line before the program starts.
            built_later = mode == "rehost" and what in ("routine missing from its C", "C that does not compile")
            expect = "status 0" if what == "returns a wrong type" or built_later else "refused"
            add("tool files", f"{what} ({mode})", [*tf, "--mode", mode], ("arm",), setup=setup, expect=expect)
    add("tool files", "a directory as --tool", ["instrument", "-t", "./d", "arm", "-o", "out"], ("arm",),
        setup=_mkdir("d"))
    add("tool files", "--tool a .txt file", ["instrument", "-t", "./t.txt", "arm", "-o", "out"], ("arm",),
        setup=_write("t.txt", "x"))
    add("tool files", "--tool ''", ["instrument", "-t", "", "arm", "-o", "out"], ("arm",))
    add("tool files", "x64: tool with two run-time arguments",
        ["instrument", "-t", "./t.py", "x64", "-o", "out"], ("x64",),
        setup=_tool("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                    "        p = self.prototype('f', Arg.INST_ADDR, Arg.EFFADDR)\n"
                    "        for proc in b.procedures():\n            for blk in proc.blocks:\n"
                    "                for i in blk.instructions:\n"
                    "                    if i.is_load: i.call(Point.BEFORE, p, Arg.INST_ADDR, Arg.EFFADDR)\n",
                    "void f(unsigned long a, unsigned long b) { (void)a; (void)b; }\n"))
    add("tool files", "tools: a file that fails", ["tools", "./t.py"], setup=_tool("class T(Tool:\n"))
    add("tool files", "tools: no such file", ["tools", "./nope.py"])

    # Python analyses and libraries for ReHost runs.
    analysis_head = ("class T(Tool):\n    name = 't'\n    def instrument(self, b, o):\n"
                     "        p = self.prototype('f', Arg.CONST)\n"
                     "        for proc in b.procedures:\n            proc.call(Point.BEFORE, p, 1)\n"
                     "        b.call(Point.AFTER, self.prototype('done', Arg.STRING), o.out)\n")
    c_ok = "void f(unsigned a) { (void)a; }\nvoid done(const char *p) { (void)p; }\n"
    analyses = {
        "raises at analysis time": "class Analysis:\n    def __init__(self, s): pass\n"
                                   "    def f(self, a): raise ValueError('boom')\n    def done(self, p): pass\n",
        "missing a routine": "class Analysis:\n    def __init__(self, s): pass\n    def done(self, p): pass\n",
        "wrong arity": "class Analysis:\n    def __init__(self, s): pass\n    def f(self): pass\n"
                       "    def done(self, p): pass\n",
        "raises in __init__": "class Analysis:\n    def __init__(self, s): raise KeyError('x')\n"
                              "    def f(self, a): pass\n    def done(self, p): pass\n",
        "no Analysis class": "",
        "writes to a path not its own": "class Analysis:\n    def __init__(self, s): self.s = s\n"
                                        "    def f(self, a): pass\n"
                                        "    def done(self, p):\n        with self.s.open_output('/tmp/x') as f:\n"
                                        "            f.write('x')\n",
        "exits at analysis time": "class Analysis:\n    def __init__(self, s): pass\n"
                                  "    def f(self, a): raise SystemExit(5)\n    def done(self, p): pass\n",
        "returns a wrong type": "class Analysis:\n    def __init__(self, s): pass\n"
                                "    def f(self, a): return object()\n    def done(self, p): return 'x'\n",
    }
    for what, body in analyses.items():
        setup = _both(_tool(analysis_head + body, c_ok),
                      lambda d: subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "-t", "./t.py",
                                                "--mode", "rehost", "arm", "-o", "t.rh"], cwd=d, env=_env({}),
                                               check=True, capture_output=True))
        # Found as records arrive, after the program has run: its status, and one line.
        expect = "status 0" if what in ("returns a wrong type", "raises at analysis time", "wrong arity",
                                        "raises in __init__", "exits at analysis time") else "refused"
        add("python analyses", what, ["run", "t.rh", "--lib", "./t.py"], ("arm",), setup=setup, expect=expect)
    for prog in ("arm.rh", "x64.rh"):
        for lib, setup in [("./nope.so", None), ("./d.so", _mkdir("d.so")), ("./empty.so", None),
                           ("./arm.so", None), ("./junk.so", _write("junk.so", b"\x7fELF junk")),
                           ("./bad.c", _write("bad.c", "int x = ;\n")), ("./bad.py", _write("bad.py", "def (\n")),
                           ("nosuchtool", None), ("./t.txt", _write("t.txt", "x"))]:
            add("analysis libraries", f"run {prog} --lib {lib}", ["run", prog, "--lib", lib],
                (prog, "empty.so", "arm.so"), setup=setup)
    for lib, setup in [("./empty.so", None), ("./arm.so", None), ("./bad.c", _write("bad.c", "int x = ;\n"))]:
        # A library is checked against a program's routines when a session opens: served.
        add("analysis libraries", f"rehost-server --lib {lib}", ["rehost-server", "--listen", "127.0.0.1:0", "--lib",
                                                                 lib], ("empty.so", "arm.so"), setup=setup,
            timeout=5, expect="serves" if lib == "./empty.so" else "refused")

    # Files given to commands.
    for cmd, extra in [("instrument", [*inst[1:], "-o", "out"]), ("inspect", []), ("image", ["-o", "out"]),
                       ("run", []), ("rehost-listen", ["--timeout", "1"])]:
        args = [cmd, *extra]
        add("input files", f"{cmd}: a directory", [*args, "d"], setup=_mkdir("d"))
        add("input files", f"{cmd}: empty file", [*args, "e"], setup=_write("e", b""))
        add("input files", f"{cmd}: /dev/null", [*args, "/dev/null"])
        add("input files", f"{cmd}: /dev/zero", [*args, "/dev/zero"], timeout=30)
        add("input files", f"{cmd}: a FIFO nobody writes", [*args, "p"], setup=_fifo("p"), timeout=30)
        add("input files", f"{cmd}: missing", [*args, "nope"])
        add("input files", f"{cmd}: unreadable (/proc/self/mem)", [*args, "/proc/self/mem"], timeout=30)
        add("input files", f"{cmd}: a name with a newline", [*args, "a\nb"])
    out_cases = {
        "in a missing directory": ("nodir/out", None),
        "an existing directory": ("d", _mkdir("d")),
        "same as the input": ("arm", None),
        "a FIFO": ("p", _fifo("p")),
        "a character device": ("dev", lambda d: os.mknod(d / "dev", 0o600 | 0o020000, os.makedev(1, 3))),
        "in a read-only file system": ("ro/out", _mount_tmpfs("ro", "ro,size=1m")),
        "on a full disk": ("full/out", _mount_tmpfs("full", "size=16k")),
        "in /proc": ("/proc/anvil-out", None),
        "a name ending in /": ("out/", None),
        "empty name": ("", None),
    }
    for what, (path, setup) in out_cases.items():
        same = what == "same as the input"
        add("output files", f"instrument -o {what}", [*inst, "arm", "-o", path], ("arm",), setup=setup)
        add("output files", f"instrument rehost -o {what}",
            ["instrument", "-t", "cachesim", "--mode", "rehost", "arm", "-o", path], ("arm",), setup=setup)
        add("output files", f"image -o {what}", ["image", "fw", "-o", "fw" if same else path], ("fw",), setup=setup)
        # --out naming a directory moves the results into it, as mv does; the results of a
        # small program fit the full disk's last blocks.
        add("output files", f"run --out {what}", ["run", "arm.inst", "--out", "arm.inst" if same else path],
            ("arm.inst",), setup=setup,
            expect="status 0" if what in ("an existing directory", "on a full disk") else "refused")
    add("output files", "instrument: report path is a directory", [*inst, "arm", "-o", "out"], ("arm",),
        setup=_mkdir("out.anvil.json"))
    add("output files", "instrument rehost: site table path is a directory",
        ["instrument", "-t", "cachesim", "--mode", "rehost", "arm", "-o", "out"], ("arm",),
        setup=_mkdir("out.sites.json"))

    # `anvil run` of what it cannot run.
    add("run", "not instrumented, --server", ["run", "arm", "--server", "127.0.0.1:1"], ("arm",))
    add("run", "not instrumented, --lib", ["run", "x64", "--lib", "cachesim"], ("x64",))
    for prog in ("arm.rh", "x64.rh"):
        sites = prog + ".sites.json"
        add("run", f"{prog}: site table missing", ["run", prog], (prog,), setup=lambda d, s=sites: (d / s).unlink())
        add("run", f"{prog}: site table truncated", ["run", prog], (prog,), setup=_truncate(sites, 100))
        add("run", f"{prog}: site table empty", ["run", prog], (prog,), setup=_truncate(sites, 0))
        add("run", f"{prog}: site table not JSON", ["run", prog], (prog,), setup=_write(sites, b"\x00\x01garbage"))
        add("run", f"{prog}: site table a JSON list", ["run", prog], (prog,), setup=_write(sites, "[1, 2]"))
        add("run", f"{prog}: site table a directory", ["run", prog], (prog,),
            setup=lambda d, s=sites: ((d / s).unlink(), (d / s).mkdir()))
        add("run", f"{prog}: site table of another program", ["run", prog], (prog, "arm.rh" if prog != "arm.rh"
                                                                            else "x64.rh"),
            setup=lambda d, s=sites, o=("x64.rh" if prog == "arm.rh" else "arm.rh"):
            shutil.copy(d / f"{o}.sites.json", d / s))
        add("run", f"{prog}: site table with its sites cut", ["run", prog], (prog,),
            setup=_edit(sites, lambda b: b.replace(b'"sites"', b'"nosites"', 1)))
        add("run", f"{prog}: report not JSON", ["run", prog], (prog,), setup=_write(prog + ".anvil.json", "{oops"))
        add("run", f"{prog}: report a JSON list", ["run", prog], (prog,), setup=_write(prog + ".anvil.json", "[]"))
        add("run", f"{prog}: program truncated", ["run", prog], (prog,), setup=_truncate(prog, 3000))
        for server, what in [("127.0.0.1:1", "a closed port"), (f"127.0.0.1:{CLOSED_PORT}", "nothing listening"),
                             ("nonsense", "not HOST:PORT"), ("127.0.0.1:99999", "port out of range"),
                             ("127.0.0.1:-1", "negative port"), (f"127.0.0.1:{SILENT.port}", "a silent TCP listener"),
                             (f"127.0.0.1:{CHATTY.port}", "a non-gRPC TCP listener"),
                             ("no-such-host.invalid:5000", "an unknown host"), ("", "empty")]:
            add("run", f"{prog}: --server {what}", ["run", prog, "--server", server], (prog,), timeout=60)
        add("run", f"{prog}: --tls-ca not a certificate", ["run", prog, "--server", "127.0.0.1:1", "--tls-ca", "t"],
            (prog,), setup=_write("t", "x"))
    add("run", "inst: report not JSON", ["run", "arm.inst"], ("arm.inst",),
        setup=_write("arm.inst.anvil.json", "{oops"))
    add("run", "inst: report a directory", ["run", "x64.inst"], ("x64.inst",),
        setup=lambda d: ((d / "x64.inst.anvil.json").unlink(), (d / "x64.inst.anvil.json").mkdir()))
    add("run", "linux program with --board", ["run", "--board", "mps2-an385", "arm.inst"], ("arm.inst",))
    add("run", "firmware without --board", ["run", "fw.inst"], ("fw.inst",), timeout=30)
    add("run", "firmware on another board", ["run", "--board", "netduino2", "fw.inst"], ("fw.inst",), timeout=30)
    add("run", "firmware --board nosuch", ["run", "--board", "nosuch", "fw.inst"], ("fw.inst",))
    for icount in ("-1", "11", "abc", ""):
        add("run", f"--icount {icount!r}", ["run", "--board", "mps2-an385", "--icount", icount, "fw.inst"],
            ("fw.inst",))
    add("run", "--sysroot missing", ["run", "--sysroot", "nope", "arm.inst"], ("arm.inst",))
    add("run", "--sysroot a file", ["run", "--sysroot", "arm.inst", "arm.inst"], ("arm.inst",))
    add("run", "x64 with --sysroot", ["run", "--sysroot", "/", "x64.inst"], ("x64.inst",))
    add("run", "firmware rehost, site table truncated", ["run", "--board", "mps2-an385", "fw.rh"], ("fw.rh",),
        setup=_truncate("fw.rh.sites.json", 1000))
    for prog in ("waits.rh", "waits64.rh"):
        port = _free_port()
        add("run", f"{prog}: the server dies mid-run", ["run", prog, "--server", f"127.0.0.1:{port}", "stdin"],
            (prog,), setup=_start_server(port), action=_server_dies(port), stdin=None, expect="status 3")
        # A program killed by a signal still writes its results (README).
        add("signals", f"{prog}: SIGINT during run", ["run", prog, "stdin"], (prog,),
            action=_signal_after(signal.SIGINT, 3), stdin=None, expect="signal", may_leave=_results)
        add("signals", f"{prog}: SIGTERM during run", ["run", prog, "stdin"], (prog,),
            action=_signal_after(signal.SIGTERM, 3), stdin=None, expect="signal", may_leave=_results)
    add("signals", "SIGINT during run (InHost)", ["run", "waits", "stdin"], ("waits",),
        action=_signal_after(signal.SIGINT, 2), stdin=None, expect="signal", may_leave=_results)
    add("signals", "SIGTERM during run (InHost)", ["run", "waits", "stdin"], ("waits",),
        action=_signal_after(signal.SIGTERM, 2), stdin=None, expect="signal", may_leave=_results)
    for signum in (signal.SIGINT, signal.SIGTERM):
        for when in (0.5, 1.5, 3.0):
            add("signals", f"{signum.name} at {when} s during instrument",
                ["instrument", "-t", "cachesim", "big", "-o", "out"], ("big",),
                action=_signal_after(signum, when), expect="signal")
            add("signals", f"{signum.name} at {when} s during instrument -j1 rehost",
                ["instrument", "-t", "cachesim", "--mode", "rehost", "-j", "1", "big", "-o", "out"], ("big",),
                action=_signal_after(signum, when), expect="signal")
    add("signals", "SIGTERM to rehost-listen", ["rehost-listen", "arm.rh"], ("arm.rh",),
        action=_signal_after(signal.SIGTERM, 2), expect="signal")
    add("signals", "SIGINT to rehost-listen", ["rehost-listen", "arm.rh"], ("arm.rh",),
        action=_signal_after(signal.SIGINT, 2), expect="signal")

    # Servers and listeners.
    for listen in (f"127.0.0.1:{BUSY_PORT}", "127.0.0.1:70000", "127.0.0.1:-1", "nonsense", "127.0.0.1:",
                   ":5000", "1.2.3.4.5:80"):
        add("servers", f"rehost-server --listen {listen}", ["rehost-server", "--listen", listen], timeout=20)
        add("servers", f"rehost-listen --listen {listen}", ["rehost-listen", "arm.rh", "--listen", listen,
                                                           "--timeout", "2"], ("arm.rh",), timeout=20)
    for workers in ("-1", "abc", "0"):
        add("servers", f"rehost-server --workers {workers}", ["rehost-server", "--listen", "127.0.0.1:0",
                                                              "--workers", workers], timeout=20)
    add("servers", "rehost-server --workers huge", ["rehost-server", "--listen", "127.0.0.1:0", "--workers",
                                                     "99999999999999999999"], timeout=20)
    add("servers", "rehost-server --workers 1 (good)", ["rehost-server", "--listen", "127.0.0.1:0", "--workers", "1"],
        timeout=5, expect="serves")
    for opt in ("--timeout -1", "--timeout abc", "--timeout nan", "--timeout 0", "--idle 0", "--idle nan",
                "--idle -1", "--idle inf"):
        add("servers", f"rehost-listen {opt}", ["rehost-listen", "arm.rh", *opt.split(),
                                                *(["--from", "r"] if "idle" in opt else [])], ("arm.rh",),
            setup=_write("r", b""), timeout=20)
    add("servers", "rehost-listen --from missing", ["rehost-listen", "arm.rh", "--from", "nope"], ("arm.rh",))
    add("servers", "rehost-listen --from a directory", ["rehost-listen", "arm.rh", "--from", "d"], ("arm.rh",),
        setup=_mkdir("d"))
    add("servers", "rehost-listen --from garbage", ["rehost-listen", "arm.rh", "--from", "g"], ("arm.rh",),
        setup=_write("g", os.urandom(4096)), expect="status 1")
    add("servers", "rehost-listen of an InHost program", ["rehost-listen", "arm.inst", "--timeout", "1"],
        ("arm.inst",))
    add("servers", "rehost-server --tls-cert alone", ["rehost-server", "--tls-cert", "x"], setup=_write("x", "x"))

    # Environment.
    for jobs in ("abc", "0", "-1", " 2", "2.0"):
        add("environment", f"ANVIL_JOBS={jobs!r}", [*inst, "arm", "-o", "out"], ("arm",), env={"ANVIL_JOBS": jobs})
    for cache, setup in [("/proc/anvil-cache", None), ("f", _write("f", "x")), ("ro", _mount_tmpfs("ro", "ro")),
                         ("full", _mount_tmpfs("full", "size=16k"))]:
        # The cache may keep the entries it finished, never a part of one (nor a temporary file).
        def cached(where: Path, name: str, cache: str = cache) -> bool:
            path = where / name
            return name.startswith(cache + "/") and (path.is_dir() or _whole_elf(path))

        add("environment", f"ANVIL_CACHE={cache} (instrument)", ["instrument", "-t", "cachesim", "arm", "-o", "out"],
            ("arm",), env={"ANVIL_CACHE": cache}, setup=setup, timeout=120, may_leave=cached)
        add("environment", f"ANVIL_CACHE={cache} (run rehost)", ["run", "x64.rh"], ("x64.rh",),
            env={"ANVIL_CACHE": cache}, setup=setup, timeout=120, may_leave=cached)
    for connect in ("nonsense", "1.2.3.4", "127.0.0.1:99999", f"127.0.0.1:{CLOSED_PORT}", ""):
        add("environment", f"ANVIL_REHOST_CONNECT={connect!r} (run)", ["run", "x64.rh"], ("x64.rh",),
            env={"ANVIL_REHOST_CONNECT": connect}, expect="status 0")
    add("environment", "ANVIL_ADDRESS_MAP unwritable", [*inst, "arm", "-o", "out"], ("arm",),
        env={"ANVIL_ADDRESS_MAP": "/proc/anvil-map"})
    add("environment", "QEMU_LD_PREFIX nowhere", ["run", "arm.inst"], ("arm.inst",),
        env={"QEMU_LD_PREFIX": "/nonexistent"})
    return out


def run_case(case: Case, base: Path, where: Path) -> Outcome:
    d = where
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for name in case.files:
        for path in base.glob(name + "*"):
            if path.name == name or path.name.startswith(name + "."):
                shutil.copy(path, d / path.name)
    if case.setup is not None:
        case.setup(d)
    before = _listing(d)
    env = _env(case.env)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "rewriter.cli", *case.argv], cwd=d, env=env,
                            stdin=subprocess.DEVNULL if case.stdin is not None else subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stderr is not None
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stderr.read()))  # type: ignore[union-attr]
    reader.start()
    if case.action is not None:
        case.action(proc, d)
    status: int | None
    try:
        status = proc.wait(timeout=case.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # and what it started (qemu)
        proc.wait()
        status = None
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    time.sleep(0.3)
    try:  # anything still in the command's process group (qemu) outlived it
        os.killpg(proc.pid, 0)
        orphans = True
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        orphans = False
    finally:
        for server in SERVERS.values():
            if server.poll() is None:
                server.kill()
                server.wait()
    seconds = time.monotonic() - started
    reader.join()
    text = b"".join(chunks).decode(errors="replace")
    lines = text.splitlines()
    after = _listing(d)
    left = sorted(k for k in after if after[k] != before.get(k) and not case.may_leave(d, k))
    for mount in ("ro", "full"):
        if (d / mount).is_mount():
            subprocess.run(["umount", str(d / mount)], check=False)
    return Outcome(case, status, lines[0] if lines else "", len(lines), "Traceback" in text, left, seconds, orphans)


def _listing(d: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for root, dirs, files in os.walk(d):
        for name in files + dirs:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            # A directory counts by its presence: a failed write may touch its time.
            found[os.path.relpath(path, d)] = (st.st_ino, 0 if name in dirs else st.st_mtime_ns)
    return found


def table(outcomes: list[Outcome]) -> str:
    rows = ["| group | case | command | status | stderr's first line | traceback | files left | verdict |",
            "|---|---|---|---:|---|---|---|---|"]
    for o in outcomes:
        cmd = "anvil " + " ".join(a if a and " " not in a and "\n" not in a else repr(a) for a in o.case.argv)
        env = " ".join(f"{k}={v!r}" for k, v in o.case.env.items())
        verdict = "FAILURE: " + ", ".join(o.problems) if o.problems else "ok"
        first = o.first_line.replace("|", "\\|")[:140]
        rows.append(f"| {o.case.group} | {o.case.name} | `{(env + ' ' if env else '') + cmd[:90]}` | "
                    f"{'hang' if o.status is None else o.status} | {first} | {'yes' if o.traceback else 'no'} | "
                    f"{', '.join(o.left)[:60]} | {verdict} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="the cases whose group or name holds this text")
    parser.add_argument("--keep", help="keep the cases' directories here")
    parser.add_argument("--first", type=int, default=0, help="start at this case (a number the listing gave)")
    parser.add_argument("--code", help="sweep the Anvil of this checkout (default: this one), e.g. the main "
                                       "branch's, to count what a change fixed")
    args = parser.parse_args()
    global CODE
    CODE = Path(args.code).resolve() if args.code else ROOT
    work = Path(args.keep or tempfile.mkdtemp(prefix="anvil-sweep-"))
    base = work / "base"
    if not (base / "waits64.rh").exists():
        make_base(base)
    selected = [c for c in cases() if not args.only or args.only in c.group or args.only in c.name]
    outcomes = []
    for n, case in enumerate(selected):
        if n < args.first:
            continue
        outcome = run_case(case, base, work / f"case{n:03d}")
        outcomes.append(outcome)
        mark = "FAIL " + ",".join(outcome.problems) if outcome.problems else "ok"
        print(f"{n:3d} {case.group}: {case.name}: {outcome.status} {outcome.first_line[:100]!r} [{mark}]",
              file=sys.stderr, flush=True)
    print(table(outcomes))
    failed = [o for o in outcomes if o.problems]
    print(f"\n{len(outcomes)} cases, {len(failed)} failed", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
