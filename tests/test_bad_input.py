"""Bad input gets a one-line error, exit status 2 and no output file."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.samples import build

ANVIL = shutil.which("anvil") or "anvil"


def _anvil(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ANVIL, *args], capture_output=True, text=True)


def _assert_clean_failure(proc: subprocess.CompletedProcess, out: Path, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("anvil: error:") and needle in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists()
    assert not list(out.parent.glob(".anvil-*")), "temporary output left behind"


def test_not_an_elf(tmp_path: Path) -> None:
    src = tmp_path / "notes.txt"
    src.write_text("just some text, not a program\n")
    out = tmp_path / "out"
    _assert_clean_failure(_anvil("instrument", "--tool", "inscount", str(src), "-o", str(out)), out, "not an ELF")


def test_truncated_elf(tmp_path: Path) -> None:
    data = build("sort", "O2-thumb-dyn").read_bytes()
    src = tmp_path / "truncated"
    src.write_bytes(data[: len(data) // 3])
    out = tmp_path / "out"
    _assert_clean_failure(_anvil("instrument", "--tool", "inscount", str(src), "-o", str(out)), out, "truncated")


def test_x86_elf(tmp_path: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.fail("host gcc is needed to make an x86-64 ELF (bootstrap installs build-essential)")
    src = tmp_path / "x86.c"
    src.write_text("int main(void) { return 0; }\n")
    exe = tmp_path / "x86"
    subprocess.run(["gcc", str(src), "-o", str(exe)], check=True)
    out = tmp_path / "out"
    # An x86-64 program's records go over a socket: a board's transport is refused in one
    # line; and such a program is no firmware image.
    for tool in ("inscount", "cachesim"):
        _assert_clean_failure(_anvil("instrument", "--tool", tool, "--mode", "rehost", "--transport", "uart", str(exe),
                                     "-o", str(out)), out, "Cortex-M")
    _assert_clean_failure(_anvil("run", "--board", "mps2-an385", str(exe)), out, "x86-64")
    # A 64-bit file is checked as one: cut short, it is said to be truncated.
    cut = tmp_path / "cut"
    cut.write_bytes(exe.read_bytes()[:3000])
    _assert_clean_failure(_anvil("instrument", "--tool", "inscount", str(cut), "-o", str(out)), out, "truncated")


def test_unknown_tool(tmp_path: Path) -> None:
    exe = build("sort", "O2-thumb-dyn")
    out = tmp_path / "out"
    _assert_clean_failure(_anvil("instrument", "--tool", "nosuchtool", str(exe), "-o", str(out)), out, "nosuchtool")


@pytest.mark.parametrize("opt, needle", [
    ("bogus=1", "unknown option"),
    ("size=3000", "power of two"),
    ("assoc=0", "power of two"),
    ("line=abc", "bad value"),
    ("size", "name=value"),
])
def test_bad_tool_option(tmp_path: Path, opt: str, needle: str) -> None:
    exe = build("sort", "O2-thumb-dyn")
    out = tmp_path / "out"
    proc = _anvil("instrument", "--tool", "cachesim", "--opt", opt, str(exe), "-o", str(out))
    _assert_clean_failure(proc, out, needle)


@pytest.mark.parametrize("args, needle", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--format", "xml"], "invalid choice: 'xml'"),
    (["--mode", "offsite"], "invalid choice: 'offsite'"),
])
def test_bad_command_line_option(tmp_path: Path, args: list[str], needle: str) -> None:
    exe = build("sort", "O2-thumb-dyn")
    out = tmp_path / "out"
    proc = _anvil("instrument", "--tool", "inscount", *args, str(exe), "-o", str(out))
    _assert_clean_failure(proc, out, needle)
    assert "anvil instrument --help" in proc.stderr


def test_missing_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _assert_clean_failure(_anvil("instrument", "--tool", "inscount", str(tmp_path / "nope"), "-o", str(out)), out,
                          "cannot read")


@pytest.mark.parametrize("where, needle", [("missing/out", "no directory"), ("", "it is a directory")])
def test_output_that_cannot_be_written(tmp_path: Path, where: str, needle: str) -> None:
    exe = build("sort", "O2-thumb-dyn")
    out = tmp_path / where
    proc = _anvil("instrument", "--tool", "inscount", str(exe), "-o", str(out))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"anvil: error: cannot write {out}") and needle in proc.stderr
    assert not list(tmp_path.rglob("*")), "output left behind"


def test_run_of_a_file_that_is_not_a_program(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    proc = _anvil("run", str(text))
    assert (proc.returncode, proc.stderr) == (2, f"anvil: error: {text}: not an ELF file\n")


@pytest.mark.parametrize("args, needle", [
    (["--listen", "127.0.0.1:99999999"], "is not HOST:PORT"),  # gRPC alone took port 57599 (modulo 65536)
    (["--listen", "192.0.2.1:5000"], "cannot listen on 192.0.2.1:5000: Cannot assign requested address"),
    (["--listen", "no-such-host.invalid:5000"], "cannot listen on no-such-host.invalid:5000"),
    (["--workers", "0"], "at least one worker"),
])
def test_server_that_cannot_start(args: list[str], needle: str) -> None:
    proc = subprocess.run([ANVIL, "rehost-server", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("anvil: error:") and needle in proc.stderr


def test_reader_that_stops_early() -> None:
    """``anvil inspect ... | head``: the reader closes the pipe; anvil stops quietly with the
    status a shell reports for SIGPIPE, not a traceback. (A static program: megabytes of
    listing, far more than the pipe holds, so anvil is still writing when the reader goes.)"""
    proc = subprocess.Popen([ANVIL, "inspect", str(build("sort", "Os-thumb-static")), "--proc", "*"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip()
    proc.stdout.close()
    errors = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in errors and not errors.strip(), errors


@pytest.mark.parametrize("jobs, env", [("0", {}), ("two", {}), (None, {"ANVIL_JOBS": "-1"})])
def test_bad_number_of_processes(tmp_path: Path, jobs: str | None, env: dict[str, str]) -> None:
    exe = build("sort", "O2-thumb-dyn")
    out = tmp_path / "out"
    given = ["--jobs", jobs] if jobs else []
    proc = subprocess.run([ANVIL, "instrument", "--tool", "inscount", *given, str(exe), "-o", str(out)],
                          capture_output=True, text=True, env={**os.environ, **env})
    _assert_clean_failure(proc, out, "not a positive number of processes")


def test_failure_after_writing_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An error after the instrumented file is written (here, in making the report) removes
    it: a failed command leaves no output. An exception that is not the input's fault is an
    internal error: one line, exit status 70, the traceback with -v (decision 0036)."""
    from rewriter import cli

    def broken(*args: object) -> bytes:
        raise ZeroDivisionError("no report")

    monkeypatch.setattr(cli, "_report_json", broken)
    exe, out = build("sort", "O2-thumb-dyn"), tmp_path / "out"
    assert cli.main(["instrument", "--tool", "inscount", str(exe), "-o", str(out), "-j", "1"]) == 70
    assert capsys.readouterr().err.splitlines() == [
        "anvil: error: internal error: ZeroDivisionError: no report (a bug in Anvil; -v shows the traceback)"]
    assert not list(tmp_path.iterdir())
    assert cli.main(["instrument", "--tool", "inscount", str(exe), "-o", str(out), "-j", "1", "-v"]) == 70
    lines = capsys.readouterr().err.splitlines()
    assert "Traceback (most recent call last):" in lines and lines[-1].startswith("anvil: error: internal error:")
    assert not list(tmp_path.iterdir())


# Decision 0104: the CLI's other entry points, given bad input, must answer as instrument does.

def _one_line_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("anvil: error:"), proc.stderr
    assert needle in proc.stderr, proc.stderr


@pytest.mark.parametrize("cut, needle", [(40, "the ELF header runs past the end"), (3000, "segment 3 runs past")])
def test_run_of_a_truncated_program(tmp_path: Path, cut: int, needle: str) -> None:
    """qemu-arm says nothing of a file cut in its ELF header (status 1) and dies of SIGBUS
    itself on a segment cut short: ``anvil run`` checks what a loader reads first."""
    exe = tmp_path / "cut"
    exe.write_bytes(build("sort", "O2-thumb-dyn").read_bytes()[:cut])
    exe.chmod(0o755)
    _one_line_error(_anvil("run", str(exe)), f"{exe}: truncated ELF file ({needle}")


def _pem_pair(where: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate and its key, made by the openssl command."""
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is needed to make a certificate (bootstrap installs it)")
    cert, key = where / f"{name}.crt", where / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    return cert, key


@pytest.mark.parametrize("case, needle", [
    ("text", "--tls-cert TEXT: not a PEM certificate"),
    ("key as certificate", "--tls-cert KEY: not a PEM certificate"),
    ("another's key", "--tls-key OTHER: not the PEM private key of --tls-cert's certificate"),
])
def test_server_with_bad_tls_files(tmp_path: Path, case: str, needle: str) -> None:
    """gRPC's C core took these, wrote lines of its own on stderr and failed without a
    reason: an internal error (status 70) in four lines."""
    cert, key = _pem_pair(tmp_path, "a")
    _, other = _pem_pair(tmp_path, "b")
    text = tmp_path / "notes.txt"
    text.write_text("not a certificate\n")
    given = {"text": (text, text), "key as certificate": (key, key), "another's key": (cert, other)}[case]
    proc = subprocess.run([ANVIL, "rehost-server", "--listen", "127.0.0.1:0", "--tls-cert", str(given[0]),
                           "--tls-key", str(given[1])], capture_output=True, text=True, timeout=60)
    _one_line_error(proc, needle.replace("TEXT", str(text)).replace("KEY", str(key)).replace("OTHER", str(other)))


def test_server_with_a_library_that_does_not_load(tmp_path: Path) -> None:
    """A --lib .so that the host cannot load is refused at start, not served."""
    lib = tmp_path / "analysis.so"
    lib.write_bytes(b"not a shared library")
    proc = subprocess.run([ANVIL, "rehost-server", "--listen", "127.0.0.1:0", "--lib", str(lib)],
                          capture_output=True, text=True, timeout=60)
    _one_line_error(proc, f"{lib}: not a shared library this host can load")


TOOL_HEAD = "from rewriter.api import Arg, Point, Tool\n"


@pytest.mark.parametrize("body, needle", [
    ("import sys\nsys.exit(3)\n", "ImportError: exit(3) while it was imported"),
    ("class Broken(Tool):\n    name = 'broken'\n    def instrument(self, binary, opts):\n"
     "        raise KeyError('oops')\n", "broken.py: Broken.instrument() (line 5): KeyError: 'oops'"),
    ("class Broken(Tool):\n    name = 'broken'\n    def instrument(self, binary, opts):\n"
     "        raise SystemExit(4)\n", "broken.py: Broken.instrument() (line 5): exit(4)"),
    ("class Broken(Tool):\n    name = 'broken'\n    def instrument(self, binary, opts):\n"
     "        binary.call(Point.BEFORE, self.prototype('f', 'EFFADDR'))\n",
     "f: argument kind 'EFFADDR' is not an Arg"),
])
@pytest.mark.parametrize("mode", ["inhost", "rehost"])
def test_tool_file_whose_code_fails(tmp_path: Path, body: str, needle: str, mode: str) -> None:
    """A tool file's own mistakes are the user's (one line, status 2, naming the file), not
    a bug in Anvil (status 70) nor a silent exit with the file's own status."""
    tool = tmp_path / "broken.py"
    tool.write_text(TOOL_HEAD + body)
    (tmp_path / "broken.c").write_text("void f(unsigned a) { (void)a; }\n")
    out = tmp_path / "out"
    proc = _anvil("instrument", "--tool", str(tool), "--mode", mode, str(build("sort", "O2-thumb-dyn")), "-o", str(out))
    _assert_clean_failure(proc, out, needle)


def test_image_with_a_fill_that_is_not_a_byte(tmp_path: Path) -> None:
    """--fill is checked whatever the format (Intel HEX has no gaps to fill, and took any value)."""
    from tests.support.boards import build_firmware

    out = tmp_path / "out.hex"
    proc = _anvil("image", str(build_firmware("crc", "mps2-an385")), "--format", "hex", "--fill", "999",
                  "-o", str(out))
    _assert_clean_failure(proc, out, "--fill 0x3e7 is not a byte value")
