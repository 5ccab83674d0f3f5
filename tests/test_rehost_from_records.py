"""ReHost records a firmware image wrote somewhere else, analysed afterwards:
``anvil rehost-listen IMAGE --from PATH``, as after a run on a real board under a
debugger (semihosting writes a host file) or with its UART wired to a serial port.

qemu-system-arm plays the board: the semihosting channel writes a regular file in the
working directory, the UART channel a file through ``-serial file:``, and a pseudo
terminal stands for the probe's serial port. Results must equal the InHost image's
(whose figures test_firmware checks against qemu's trace and the reference cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import termios
import time
from pathlib import Path

import pytest

from rewriter.boards import board as board_named
from tests.support.boards import anvil_cli, build_firmware, run_firmware
from tests.support.rehost import CLI

BOARD = "mps2-an385"
UART = 0x40004000


def _anvil(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return anvil_cli(*args, cwd=cwd, text=True)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """crc built for the board: the original's console and status, InHost cachesim results,
    and ReHost images over semihosting and over the UART, each run once on QEMU."""
    where = tmp_path_factory.mktemp("from-records")
    original = build_firmware("crc", BOARD, "-O2")
    expected = run_firmware(original, BOARD)
    for name, extra in (("fw.inst", []), ("fw.sh", ["--mode", "rehost"]),
                        ("fw.uart", ["--mode", "rehost", "--transport", "uart"])):
        done = _anvil("instrument", "--tool", "cachesim", "--format", "json", *extra, str(original), "-o", name,
                      cwd=where)
        assert done.returncode == 0, done.stderr
    assert run_firmware(where / "fw.inst", BOARD, cwd=where) == expected
    inhost = json.loads((where / "fw.inst.cachesim.out").read_text())
    assert run_firmware(where / "fw.sh", BOARD, cwd=where) == expected  # writes fw.sh.records
    uart = board_named(BOARD).qemu_command("fw.uart", serial=(UART, "file:uart.bin"))
    ran = subprocess.run(uart, capture_output=True, cwd=where, timeout=120, stdin=subprocess.DEVNULL)
    assert (ran.stdout, ran.returncode) == expected
    return {"dir": where, "inhost": inhost}


def _results(where: Path, image: str) -> dict:
    return json.loads((where / f"{image}.cachesim.out").read_text())


@pytest.mark.parametrize("image, records", [("fw.sh", "fw.sh.records"), ("fw.uart", "uart.bin")])
def test_records_file_gives_inhost_results(images: dict, image: str, records: str) -> None:
    where = images["dir"]
    (where / f"{image}.cachesim.out").unlink(missing_ok=True)
    done = _anvil("rehost-listen", image, "--from", records, cwd=where)
    assert done.returncode == 0, done.stderr
    assert _results(where, image) == images["inhost"]


def test_serial_port_gives_inhost_results(images: dict) -> None:
    """The UART's bytes arrive on a (pseudo) serial line in pieces; reading stops when it goes quiet."""
    where = images["dir"]
    stream = (where / "uart.bin").read_bytes()
    (where / "fw.uart.cachesim.out").unlink(missing_ok=True)
    board_end, host_end = os.openpty()

    def board() -> None:
        for at in range(0, len(stream), 4096):
            os.write(board_end, stream[at:at + 4096])

    listen = subprocess.Popen([*CLI, "rehost-listen", "fw.uart", "--from", os.ttyname(host_end), "--idle", "1"],
                              cwd=where, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The line is set raw once it is opened; wait for that before sending, as a board
        # would be reset only after the host listens.
        while termios.tcgetattr(host_end)[3] & termios.ICANON and listen.poll() is None:
            time.sleep(0.05)
        board()
        _, err = listen.communicate(timeout=120)
    finally:
        os.close(board_end)
        os.close(host_end)
    assert listen.returncode == 0, err
    assert _results(where, "fw.uart") == images["inhost"]


def test_truncated_records_are_reported(images: dict) -> None:
    where = images["dir"]
    stream = (where / "fw.sh.records").read_bytes()
    (where / "cut.records").write_bytes(stream[:len(stream) // 2])
    done = _anvil("rehost-listen", "fw.sh", "--from", "cut.records", cwd=where)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and done.stderr.strip(), done.stderr


@pytest.mark.parametrize("extra, message", [
    (["--from", "no-such.records"], "cannot read records from no-such.records"),
    (["--from", "fw.sh.records", "--idle", "0"], "--idle 0 must be more than 0 seconds"),
])
def test_bad_records_source(images: dict, extra: list[str], message: str) -> None:
    done = _anvil("rehost-listen", "fw.sh", *extra, cwd=images["dir"])
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"anvil: error: {message}"), lines
