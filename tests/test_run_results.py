"""``anvil run`` never presents a results file an earlier run left as this run's (decision 0037).

In each case a results file from an earlier run is there before the run, and this run
writes none:

- InHost on Linux, the program killed by SIGKILL while it waits for its input (a signal
  it cannot catch, so nothing writes results on the way);
- ReHost on Linux, the rehost-server killed mid-run; the server absent at start (nothing
  runs, nothing is touched);
- a firmware image on a board, InHost with QEMU killed, ReHost with the server killed.

Every time: no "results in" line, a line saying no results were written, the earlier
file gone (not left looking current), the program's own output and exit status those of
the original run the same way. And an InHost copy written where a ReHost copy was runs as
InHost (an earlier copy's site table never makes it look like one).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.boards import firmware_flags
from tests.support.boards import instrument as instrument_firmware
from tests.support.rehost import CLI, ServerProcess, line_while
from tests.support.run import LIB_ROOT, instrument, place
from tests.support.samples import build

STALE = b"results of an earlier run\n"
BOARD = "mps2-an385"
# Firmware that prints, waits for a character on its semihosting console (QEMU's stdin), works and exits.
WAITS_C = r"""
#include <stdio.h>
int main(void)
{
    printf("ready\n");
    fflush(stdout);
    int c = getchar();
    unsigned h = 5381;
    for (int i = 0; i < 20000; i++) h = h * 33 + (unsigned)i + (unsigned)c;
    printf("got %d hash %u\n", c, h);
    return 3;
}
"""


def anvil_run(*words: str, cwd: Path) -> subprocess.Popen:
    """``anvil run WORDS`` (not quiet) in ``cwd`` with an empty environment, pipes on all three streams."""
    return subprocess.Popen([*CLI, "run", *words], cwd=cwd, env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def kill_child(parent: subprocess.Popen, name: str, seconds: float = 60) -> None:
    """SIGKILL the process called ``name`` that ``parent`` started, once it has started."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and parent.poll() is None:
        for tid in os.listdir(f"/proc/{parent.pid}/task"):
            with open(f"/proc/{parent.pid}/task/{tid}/children") as f:
                for pid in map(int, f.read().split()):
                    with open(f"/proc/{pid}/comm") as comm:
                        if comm.read().strip() == name[:15]:
                            os.kill(pid, signal.SIGKILL)
                            return
        time.sleep(0.05)
    raise AssertionError(f"{name} was not started: {parent.communicate()}")


def killed_original(cmd: list[str], cwd: Path, lines: int = 0) -> tuple[bytes, bytes, int]:
    """Output and status of ``cmd`` (an emulator running the original, which waits for its
    input after printing ``lines`` lines) killed by SIGKILL then."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    first = b"".join(proc.stdout.readline() for _ in range(lines))
    proc.kill()
    out, err = proc.communicate(timeout=60)
    return first + out, err, proc.returncode


def stale(path: Path) -> Path:
    path.write_bytes(STALE)
    return path


def assert_no_results_claimed(err: bytes, missing: str, because: str) -> None:
    """Anvil's own lines: none says results are somewhere; one says ``missing`` was not written, and why."""
    notes = [line for line in err.decode().splitlines() if line.startswith("anvil:")]
    assert not any("results in" in line for line in notes), notes
    assert any("no results written" in line and missing in line and because in line for line in notes), notes


def test_inhost_program_killed(tmp_path: Path) -> None:
    binary = build("calls", "O2-thumb-dyn")
    orig = place(binary, tmp_path, "orig")
    expected = killed_original(["qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(orig), "stdin"], orig.parent)
    assert expected[2] == -signal.SIGKILL
    inst = instrument(binary, "cachesim", tmp_path)
    results, child = stale(inst.parent / "prog.cachesim.out"), stale(inst.parent / "prog.cachesim.out.4242")
    proc = anvil_run("--argv0", "prog", str(inst), "stdin", cwd=inst.parent)
    kill_child(proc, "qemu-arm")
    out, err = proc.communicate(timeout=60)
    assert (out, proc.returncode) == (expected[0], expected[2])  # anvil ends by the program's signal
    assert_no_results_claimed(err, "prog.cachesim.out", "killed by SIGKILL")
    assert not results.exists() and not child.exists()

    # The same program given its input writes results, and they are said to be there.
    proc = anvil_run("--argv0", "prog", str(inst), "stdin", cwd=inst.parent)
    out, err = proc.communicate(b"abc", timeout=120)
    assert proc.returncode == 3 and b"stdin bytes=3" in out
    assert err.decode().splitlines()[-1] == "anvil: results in prog.cachesim.out"
    assert results.read_bytes() != STALE


def test_rehost_server_killed_mid_run(tmp_path: Path) -> None:
    binary = build("calls", "O2-thumb-dyn")
    words = ["stdin", "two words"]
    orig = place(binary, tmp_path, "orig")
    original = subprocess.run(["qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(orig), *words], input=b"x" * 1000,
                              capture_output=True, cwd=orig.parent, timeout=120)
    rehost = instrument(binary, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    results, out_file = stale(rehost.parent / "prog.cachesim.out"), stale(rehost.parent / "moved.out")
    srv = ServerProcess()
    proc = anvil_run("--argv0", "prog", "--server", srv.address, "--out", "moved.out", str(rehost), *words,
                     cwd=rehost.parent)
    assert srv.proc.stderr is not None
    opened = line_while(srv.proc.stderr, proc)
    srv.proc.kill()  # the program waits for its input: the server dies mid-run
    srv.stop()
    assert "opened" in opened, (opened, proc.communicate())
    time.sleep(0.2)
    out, err = proc.communicate(b"x" * 1000, timeout=120)
    assert (out, proc.returncode) == (original.stdout, original.returncode)
    assert err.startswith(original.stderr)
    notes = err[len(original.stderr):].decode().splitlines()
    # One line says it all (the records lost, no results); nothing claims results.
    assert len(notes) == 1 and "not analysed" in notes[0] and "no results written" in notes[0], notes
    assert not results.exists() and not out_file.exists()


def test_rehost_server_absent(tmp_path: Path) -> None:
    """No server: one line, exit status 2, the program not started and nothing touched."""
    rehost = instrument(build("calls", "O2-thumb-dyn"), "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    results = stale(rehost.parent / "prog.cachesim.out")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens there
    proc = anvil_run("--server", f"127.0.0.1:{port}", str(rehost), cwd=rehost.parent)
    out, err = proc.communicate(timeout=60)
    lines = err.decode().splitlines()
    assert proc.returncode == 2 and out == b""
    assert len(lines) == 1 and lines[0].startswith("anvil: error: no rehost server"), lines
    assert results.read_bytes() == STALE  # no run happened: the earlier run's file is as it was


@pytest.fixture(scope="module")
def waits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The firmware image of WAITS_C for BOARD."""
    tmp = tmp_path_factory.mktemp("waits")
    source = tmp / "waits.c"
    source.write_text(WAITS_C)
    startup = Path(__file__).resolve().parents[1] / "samples" / "boards" / "startup.c"
    image = tmp / "waits.elf"
    subprocess.run(["arm-none-eabi-gcc", *firmware_flags(BOARD), str(startup), str(source), "-o", str(image)],
                   check=True)
    return image


def firmware_original(image: Path, stdin: bytes) -> tuple[bytes, int]:
    from rewriter.boards import board

    proc = subprocess.run(board(BOARD).qemu_command(str(image)), input=stdin, capture_output=True, timeout=60)
    return proc.stdout, proc.returncode


def test_firmware_inhost_killed(waits: Path, tmp_path: Path) -> None:
    from rewriter.boards import board

    expected = killed_original(board(BOARD).qemu_command(str(waits)), tmp_path, lines=1)
    assert expected[2] == -signal.SIGKILL
    instrument_firmware(waits, "inscount", tmp_path / "fw")
    results = stale(tmp_path / "fw.inscount.out")
    proc = anvil_run("--board", BOARD, "fw", cwd=tmp_path)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"  # it waits for its input now
    kill_child(proc, "qemu-system-arm")
    out, err = proc.communicate(timeout=60)
    assert (b"ready\n" + out, proc.returncode) == (expected[0], expected[2])
    assert_no_results_claimed(err, "fw.inscount.out", "killed by SIGKILL")
    assert not results.exists()


def test_firmware_rehost_server_killed(waits: Path, tmp_path: Path) -> None:
    expected = firmware_original(waits, b"x")
    assert expected[1] == 3
    instrument_firmware(waits, "inscount", tmp_path / "fw", "--mode", "rehost")
    results = stale(tmp_path / "fw.inscount.out")
    srv = ServerProcess()
    proc = anvil_run("--board", BOARD, "--server", srv.address, "fw", cwd=tmp_path)
    assert srv.proc.stderr is not None and proc.stdout is not None
    opened = line_while(srv.proc.stderr, proc)
    ready = proc.stdout.readline()  # the image waits for its input
    srv.proc.kill()
    srv.stop()
    assert "opened" in opened and ready == b"ready\n", (opened, ready, proc.communicate())
    time.sleep(0.2)
    out, err = proc.communicate(b"x", timeout=120)
    assert (ready + out, proc.returncode) == expected
    notes = err.decode().splitlines()
    assert len(notes) == 1 and "not analysed" in notes[0] and "no results written" in notes[0], notes
    assert not results.exists()


def test_inhost_copy_written_over_a_rehost_copy(tmp_path: Path) -> None:
    """An InHost copy written under the name of an earlier ReHost copy runs as InHost: the old
    site table is removed, and one put back beside it does not make ``anvil run`` take the
    copy for ReHost (its report says which mode it is)."""
    binary = build("calls", "O2-thumb-dyn")
    orig = place(binary, tmp_path, "orig")
    original = subprocess.run(["qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(orig), "stdin"], input=b"abc",
                              capture_output=True, cwd=orig.parent, timeout=120)
    copy = tmp_path / "prog"
    for mode in ("rehost", "inhost"):
        subprocess.run([*CLI, "instrument", "--tool", "cachesim", "--mode", mode, str(binary), "-o", str(copy)],
                       check=True, capture_output=True, timeout=600)
        if mode == "rehost":
            table = Path(f"{copy}.sites.json").read_bytes()
    assert not Path(f"{copy}.sites.json").exists()
    Path(f"{copy}.sites.json").write_bytes(table)  # as a copy of the directory made before might bring back
    proc = anvil_run("--argv0", "prog", str(copy), "stdin", cwd=tmp_path)
    out, err = proc.communicate(b"abc", timeout=120)
    assert (out, proc.returncode) == (original.stdout, original.returncode)
    assert err.decode().splitlines()[-1] == "anvil: results in prog.cachesim.out", err
    assert (tmp_path / "prog.cachesim.out").stat().st_size > 0
