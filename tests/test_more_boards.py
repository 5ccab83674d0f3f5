"""Firmware for every QEMU Cortex-M board Anvil knows besides MPS2 AN385/AN386 (decision 0091).

Each board's map in rewriter/boards.py is checked against what QEMU itself builds (the
monitor's ``info mtree``: flash, every RAM bank, the UARTs) and against a run: a sample
(samples/boards/, linked by board.ld from the board's flash and main RAM) runs on the
board, instrumented with inscount and cachesim (InHost; ReHost over semihosting on two
boards), and ``anvil run --board`` gives the original's console output and exit status;
inscount's total equals the instructions ``qemu-system-arm -singlestep -d exec,nochain``
executes in the original image on that board.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from rewriter import boards as anvil_boards
from rewriter.errors import AnvilError
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import trace_firmware
from tests.support.boards import (
    MORE_BOARDS,
    anvil_cli,
    build_firmware,
    build_on_board,
    instrument,
    run_firmware,
    small_ram,
)

#: ReHost over semihosting is run on these (one Stellaris, one TrustZone board).
REHOST_BOARDS = ("lm3s6965evb", "mps3-an547")


def program_for(board: str) -> str:
    """crc.c (4 KiB of data, a 1 KiB table) where the RAM holds it, else irq.c (SysTick interrupts)."""
    return "irq" if small_ram(board) else "crc"


def selection(board: str) -> list[str]:
    """What is instrumented: everything, or on a board with 8 KiB of RAM the program's own
    procedures (docs/boards.md: counters for the whole C library do not fit there)."""
    return ["--only", "main", "--only", "SysTick_Handler"] if small_ram(board) else []


def code_ranges(image: Path) -> list[tuple[int, int]]:
    return [(s.vaddr, s.vaddr + s.memsz) for s in load_binary(str(image)).segments if s.executable]


def anvil_run(image: Path, board: str) -> tuple[bytes, int]:
    """``anvil run --board BOARD IMAGE`` as a user runs it, in the image's directory."""
    proc = anvil_cli("run", "--board", board, image.name, cwd=image.parent, timeout=120)
    return proc.stdout, proc.returncode


def results(image: Path, tool: str) -> dict:
    path = image.parent / f"{image.name}.{tool}.out"
    assert path.exists(), f"{tool} wrote no results"
    return json.loads(path.read_text())


@pytest.mark.parametrize("board", sorted(MORE_BOARDS))
def test_tools_on_board(board: str, tmp_path: Path) -> None:
    """inscount and cachesim, InHost (and ReHost over semihosting on REHOST_BOARDS): the
    original's output and status through ``anvil run --board``, inscount's total = QEMU's count."""
    image = build_on_board(program_for(board), board)
    expected = run_firmware(image, board)
    assert expected[0], "the original printed nothing"
    trace = trace_firmware(image, board)
    assert (trace.stdout, trace.returncode) == expected
    only = selection(board)
    ranges = [(p.address, p.end) for p in load_binary(str(image)).procedures if p.name in only] if only \
        else code_ranges(image)
    executed = sum(n for pc, n in trace.pcs.items() if any(lo <= pc < hi for lo, hi in ranges))
    for mode in ("inhost", "rehost") if board in REHOST_BOARDS else ("inhost",):
        # ReHost: a 4 KiB ring of records, not 16, leaves room on a board with 64 KiB of RAM.
        extra = ["--mode", mode, "--board", board, *only, *(["--ring-size", "4k"] if mode == "rehost" else [])]
        out = instrument(image, "inscount", tmp_path / mode / "ins" / "fw", *extra)
        assert anvil_run(out, board) == expected, mode
        assert results(out, "inscount")["total"] == executed, mode
        out = instrument(image, "cachesim", tmp_path / mode / "cache" / "fw", *extra)
        assert anvil_run(out, board) == expected, mode
        got = results(out, "cachesim")
        assert got["hits"] + got["misses"] == got["loads"] + got["stores"] > 0, mode


def _mtree(board: str) -> str:
    """QEMU's own memory map of ``board`` (``info mtree -f``, the machine stopped before it starts)."""
    proc = subprocess.run(["qemu-system-arm", "-M", board, "-nographic", "-monitor", "stdio", "-serial", "null",
                           "-S"], input="info mtree -f\nquit\n", capture_output=True, text=True, timeout=60,
                          check=False)
    return proc.stdout


def _regions(text: str, address_space: str) -> list[tuple[int, int, str, str]]:
    """(start, end, kind, name) of each region of the flat view that ``address_space`` shows."""
    found: list[tuple[int, int, str, str]] = []
    spaces: list[str] = []
    for line in text.splitlines():
        if line.startswith("FlatView"):
            spaces = []
        elif match := re.match(r' AS "([^"]+)"', line):
            spaces.append(match.group(1))
        elif (match := re.match(r"\s+([0-9a-f]+)-([0-9a-f]+) \(prio -?\d+, ([\w/]+)\): (\S+)", line)) and \
                address_space in spaces:
            found.append((int(match.group(1), 16), int(match.group(2), 16) + 1, match.group(3), match.group(4)))
    return found


def _covered(regions: list[tuple[int, int, str, str]], memory: anvil_boards.MemoryRegion, kinds: set[str]) -> bool:
    """Whether ``memory`` lies wholly in regions of ``kinds``, one after another."""
    at = memory.start
    for start, end, kind, _ in sorted(regions):
        if kind in kinds and start <= at < end:
            at = end
    return at >= memory.end


@pytest.mark.parametrize("board", sorted(MORE_BOARDS))
def test_memory_map_is_qemus(board: str) -> None:
    """Flash and RAM banks are memory in QEMU's map (RAM banks: writable RAM; the flash: ROM or
    RAM), as the CPU sees them (its Secure view on the TrustZone boards, whose RAMs sit behind
    protection controllers: memory there is the controller's region); the UARTs are there."""
    target = anvil_boards.board(board)
    text = _mtree(board)
    secure = target.secure
    regions = _regions(text, "cpu-secure-memory-0" if secure else "cpu-memory-0")
    assert regions, text[:2000]
    memory = {"ram", "rom", "i/o"} if secure else {"ram", "rom"}
    # A memory behind a controller shows as the controller's upstream side.
    memories = [r for r in regions if r[2] != "i/o" or r[3] == "tz-mpc-upstream"]
    assert _covered(memories, target.flash, memory), target.flash
    for bank in target.ram_banks:
        assert _covered(memories, bank, memory - {"rom"}), bank
    # A UART behind a protection controller shows as the controller's port (test_rehost_over_uart runs one).
    uart = {anvil_boards.CMSDK_UART: "uart", anvil_boards.PL011: "pl011", anvil_boards.STM32_USART: "stm32f2xx-usart"}
    for base in target.uarts:
        assert any(start == base and (name.startswith("tz-ppc-port[") if secure else name == uart[target.uart_kind])
                   for start, _, _, name in regions), hex(base)
    # SYS_HEAPINFO's RAM: the largest RAM of the CPU's (Non-secure) view, the first of equal ones; none: no answer.
    ram = [(start, end) for start, end, kind, _ in _regions(text, "cpu-memory-0") if kind == "ram"]
    largest = max(ram, key=lambda r: r[1] - r[0], default=None)
    assert largest == (None if target.heapinfo_ram is None else (target.heapinfo_ram.start, target.heapinfo_ram.end))


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an505", "mps3-an547", "mps2-an511", "lm3s6965evb", "lm3s811evb",
                                   "stm32vldiscovery", "netduinoplus2"])
def test_image_board_is_the_one_built_for(board: str) -> None:
    """Without --board, an image is placed for the board it was linked for: its map, what its
    CPU must run (AN500's double-precision FPU, which AN386's lacks), its architecture, and
    the RAM whose end is its initial stack pointer pick it among those it fits."""
    from rewriter.emit.firmware_placement import image_board

    image = build_on_board(program_for(board), board)
    chosen = image_board(load_binary(str(image)))
    assert chosen is not None and chosen.name == board


@pytest.mark.parametrize("board", ["lm3s6965evb", "netduino2", "stm32vldiscovery"])
def test_uart_transport_is_refused_where_it_cannot_work(board: str, tmp_path: Path) -> None:
    """A board whose UARTs ReHost cannot drive refuses --transport uart in one line naming
    the transports it supports, when instrumenting for it and when running a UART image on
    it (semihosting works there: test_tools_on_board)."""
    image = build_on_board(program_for(board), board)
    out = tmp_path / "fw"
    proc = anvil_cli("instrument", "--tool", "inscount", "--mode", "rehost", "--transport", "uart", "--board", board,
                     str(image), "-o", str(out), cwd=tmp_path, text=True)
    assert proc.returncode != 0
    assert re.fullmatch(rf"anvil: error: {board} supports --transport semihosting only: [^\n]*\n", proc.stderr)
    assert not out.exists()
    # An MPS2 image sending through its UART, run on this board: the same line.
    mps2 = instrument(build_firmware("crc", "mps2-an385"), "inscount", tmp_path / "uart" / "fw", "--mode", "rehost",
                      "--transport", "uart")
    proc = anvil_cli("run", "--board", board, mps2.name, cwd=mps2.parent, text=True)
    assert proc.returncode != 0
    assert re.fullmatch(rf"anvil: error: {board} supports --transport semihosting only: [^\n]*\n", proc.stderr)


def test_named_boards() -> None:
    """microbit is refused with the reason (its Cortex-M0); an unknown name lists the boards."""
    with pytest.raises(AnvilError, match="Cortex-M0 .ARMv6-M."):
        anvil_boards.board("microbit")
    with pytest.raises(AnvilError, match="lm3s6965evb"):
        anvil_boards.board("no-such-board")
    proc = anvil_cli("run", "--board", "microbit", str(build_on_board("irq", "lm3s6965evb")), cwd=Path.cwd(), text=True)
    assert proc.returncode != 0 and "Cortex-M0" in proc.stderr


@pytest.mark.parametrize("board, uart", [("mps2-an511", 0x4002C000), ("mps2-an500", None),
                                         ("mps2-an505", 0x50202000), ("mps3-an524", None)])
def test_rehost_over_uart(board: str, uart: int | None, tmp_path: Path) -> None:
    """ReHost over a CMSDK UART on the boards that have them, besides AN385/AN386: AN511's
    third UART (QEMU's serial port 2, at its own address), AN505's third (a Secure alias
    behind a protection controller), AN500's and AN524's UART0 (the default): the
    original's output, and inscount's total = QEMU's count."""
    image = build_on_board(program_for(board), board)
    expected = run_firmware(image, board)
    trace = trace_firmware(image, board)
    ranges = code_ranges(image)
    executed = sum(n for pc, n in trace.pcs.items() if any(lo <= pc < hi for lo, hi in ranges))
    base = [] if uart is None else ["--uart-base", hex(uart)]
    out = instrument(image, "inscount", tmp_path / "fw", "--mode", "rehost", "--transport", "uart", *base,
                     "--ring-size", "4k", "--board", board)
    assert json.loads(Path(f"{out}.sites.json").read_text())["channel"]["uart_base"] == \
        (anvil_boards.board(board).uart if uart is None else uart)
    assert anvil_run(out, board) == expected
    assert results(out, "inscount")["total"] == executed


def test_no_room_names_a_board_with_more_flash(tmp_path: Path) -> None:
    """An image linked for a board with little flash (mps2-an511's 256 KiB), whose cachesim
    copy does not fit there: the one-line error names the board it placed the image on and
    a known board whose flash has room (mps2-an385's 4 MiB at the same address), and with
    ``--board`` that one the copy is made and runs as the original does there."""
    image = build_on_board("big", "mps2-an511")
    refused = anvil_cli("instrument", "--tool", "cachesim", str(image), "-o", str(tmp_path / "a.inst"),
                        cwd=tmp_path, text=True)
    lines = refused.stderr.splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert "mps2-an511's flash" in lines[0] and "--board mps2-an385" in lines[0]
    assert not list(tmp_path.iterdir())
    out = instrument(image, "cachesim", tmp_path / "fw", "--board", "mps2-an385")
    expected = run_firmware(image, "mps2-an385")
    run = anvil_cli("run", "-q", "--board", "mps2-an385", out.name, cwd=out.parent, timeout=300)
    assert (run.stdout, run.returncode) == expected, run.stderr
