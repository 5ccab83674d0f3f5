"""Firmware linked in the common linker-script styles is placed by default from the
board's memory map (docs/decisions/0038-firmware-placement-from-the-memory-map.md).

The sort sample (it prints the addresses of a global, its malloc'd array and a local)
built with samples/boards/layouts/: newlib-style (``end`` only, .data loaded straight
into RAM), ST-style (``_estack``, ``_Min_Stack_Size``, a heap that stops at the stack's
reserve) and newlib's rdimon-crt0 start-up (stack and heap limit from the semihosting
SYS_HEAPINFO call, which QEMU answers with the top of the PSRAM). The boards' own
CMSIS-style script is test_firmware.py's.

For each: inscount and cachesim, InHost and ReHost, with no region given, print and exit
as the original under qemu-system-arm (same heap and stack addresses); inscount's total
is the instructions QEMU executes in the original, cachesim's figures are a reference
cache fed the data accesses unicorn records running the original, and ReHost's results
equal InHost's. The added RAM is in one of the board's RAMs and the original never
touches it (unicorn's record of its accesses), the added code is in the board's flash
after every byte the original loads there.

rdimon-crt0 reads its command line (SYS_GET_CMDLINE: QEMU gives the ``-kernel`` path) and
walks it, so every image runs as ``<tmp>/XX/fw``: paths of one length, the same work.

rdimon's cachesim figures are compared with the same tool's on regions given by hand
(code after the image, data at the bottom of the PSRAM) instead of unicorn's: at exit
newlib's __call_exitprocs runs ``ite eq; streq; strne; cmp; beq`` (branch not taken) and
then a load, and unicorn 2.1.4 calls no memory hook for the first instruction after such
a branch (it misses that one load; QEMU, and so the instrumented run, make it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.boards import BOARDS as ANVIL_BOARDS
from rewriter.boards import MemoryRegion
from tests.oracles.cache_model import simulate
from tests.oracles.qemu_trace import trace_firmware
from tests.oracles.unicorn_firmware import run_firmware_unicorn
from tests.support.boards import anvil_cli, build_layout, instrument, run_firmware
from tests.test_firmware import code_ranges, run_and_results

CASES = [("newlib", "mps2-an385"), ("st", "mps2-an386"), ("rdimon", "mps2-an385")]
GEOMETRY = "size=1024,assoc=2,line=32"


def loads(image: Path) -> list[tuple[int, int, int, int, int]]:
    """(vaddr, paddr, filesz, memsz, flags) of each PT_LOAD."""
    with open(image, "rb") as f:
        return [(s["p_vaddr"], s["p_paddr"], s["p_filesz"], s["p_memsz"], s["p_flags"])
                for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"]


def check_placement(original: Path, inst: Path, board: str, accesses: list[tuple]) -> None:
    """The two added segments: code in flash after the original's flash bytes, data in a
    RAM of the board that the original's run never reads or writes."""
    memory = ANVIL_BOARDS[board]
    before = loads(original)
    added = loads(inst)[len(before):]
    assert loads(inst)[:len(before)] == before and len(added) == 2
    (code, code_at, _, code_size, code_flags), (ram, ram_at, ram_file, ram_size, ram_flags) = added
    assert code == code_at and code_flags & 1 and code_size
    assert memory.flash.start <= code and code + code_size <= memory.flash.end
    assert all(code >= start + memsz for v, p, _, memsz, _ in before for start in (v, p) if start in memory.flash)
    assert ram == ram_at and ram_file == 0 and not ram_flags & 1 and ram_size
    assert any(bank.start <= ram and ram + ram_size <= bank.end for bank in memory.ram_banks)
    touched = [address for _, address, size, *_ in accesses if ram - size < address < ram + ram_size]
    assert not touched, f"the original touches the added RAM {ram:#x}+{ram_size:#x} at {touched[:4]}"


@pytest.mark.parametrize("layout, board", CASES)
def test_layout_placed_by_default(layout: str, board: str, tmp_path: Path) -> None:
    image = tmp_path / "or" / "fw"
    image.parent.mkdir()
    shutil.copy(build_layout(layout, "sort", board), image)
    expected = run_firmware(image, board)
    assert expected[1] == 0 and b"checksum=" in expected[0]
    trace = trace_firmware(image, board)
    assert (trace.stdout, trace.returncode) == expected
    ranges = code_ranges(image)
    instructions = sum(n for pc, n in trace.pcs.items() if any(lo <= pc < hi for lo, hi in ranges))
    oracle = run_firmware_unicorn(image, board)
    assert (oracle.output, oracle.status) == expected  # the same heap and stack addresses as QEMU's
    cache = simulate(oracle.accesses, 1024, 2, 32)
    if layout == "rdimon":
        by_hand = instrument(image, "cachesim", tmp_path / "ch" / "fw", "--opt", GEOMETRY,
                             "--flash-region", "0x200000:1M", "--ram-region", "0x21000000:64K")
        out, status, cache = run_and_results(by_hand, board, "cachesim")
        assert (out, status) == expected

    for tool, extra in (("inscount", []), ("cachesim", ["--opt", GEOMETRY])):
        inhost = instrument(image, tool, tmp_path / f"{tool[0]}i" / "fw", *extra)
        check_placement(image, inhost, board, oracle.accesses)
        out, status, got = run_and_results(inhost, board, tool)
        assert (out, status) == expected
        if tool == "inscount":
            assert got["total"] == instructions
        else:
            for key in ("loads", "stores", "load_misses", "store_misses"):
                assert got[key] == cache[key], (key, got, cache)
        rehost = instrument(image, tool, tmp_path / f"{tool[0]}r" / "fw", "--mode", "rehost", *extra)
        check_placement(image, rehost, board, oracle.accesses)
        run = anvil_cli("run", "--board", board, str(rehost), cwd=rehost.parent, timeout=120)
        assert (run.stdout, run.returncode) == expected, run.stderr
        assert json.loads((rehost.parent / f"fw.{tool}.out").read_text()) == got


def test_heapinfo_model_is_qemus(tmp_path: Path) -> None:
    """The board's SYS_HEAPINFO model gives the stack QEMU gives: rdimon-crt0 starts main
    on it, so the local sort prints lies just below its base; and with RAM added at the
    top of the PSRAM (--ram-region, not the default) the model says where QEMU moves the
    stack, which is why the default puts nothing there."""
    image = build_layout("rdimon", "sort", "mps2-an385")
    board = ANVIL_BOARDS["mps2-an385"]

    def local_and_base(elf: Path) -> tuple[int, int]:
        out, status = run_and_results(elf, "mps2-an385", "inscount")[:2] if elf != image else \
            run_firmware(image, "mps2-an385")
        assert status == 0
        local = int(out.split(b"local=")[1].split()[0], 16)
        return local, board.heapinfo([MemoryRegion(p, memsz) for _, p, _, memsz, _ in loads(elf) if memsz]).stack_base

    local, base = local_and_base(image)
    assert base - 256 < local < base
    psram = board.heapinfo_ram
    assert psram is not None
    moved = instrument(image, "inscount", tmp_path / "fw", "--ram-region", f"{psram.end - (64 << 10):#x}:64K")
    moved_local, moved_base = local_and_base(moved)
    assert moved_base < base and moved_local == local - (base - moved_base)


def test_ram_region_alone_keeps_the_code_in_flash(tmp_path: Path) -> None:
    """--ram-region alone on an image whose .data is loaded straight into RAM: the code
    still goes into flash (it went after .data, into RAM, and did not fit)."""
    image = build_layout("newlib", "sort", "mps2-an385")
    inst = instrument(image, "inscount", tmp_path / "fw", "--ram-region", "0x21000000:1M")
    (code, *_), (ram, _, _, ram_size, _) = loads(inst)[-2:]
    assert code in ANVIL_BOARDS["mps2-an385"].flash
    assert 0x21000000 <= ram and ram + ram_size <= 0x21100000
    assert run_and_results(inst, "mps2-an385", "inscount")[:2] == run_firmware(image, "mps2-an385")


@pytest.mark.parametrize("layout", ["cmsis", "newlib"])
def test_no_free_ram_is_one_line(layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """On a board whose only RAM is the bank heap and stack share up to each other (the
    boards' own script: __HeapLimit is __StackLimit; newlib's: no limit at all), no RAM is
    free: one line on stderr, status 2, no output file."""
    from dataclasses import replace

    from rewriter import boards as anvil_boards
    from rewriter.cli import main as anvil_main
    from tests.support.boards import build_firmware

    for name, board in list(anvil_boards.BOARDS.items()):
        monkeypatch.setitem(anvil_boards.BOARDS, name, replace(board, ram_banks=(board.ram,)))
    image = build_firmware("sort", "mps2-an385") if layout == "cmsis" else build_layout(layout, "sort", "mps2-an385")
    out = tmp_path / "fw"
    assert anvil_main(["instrument", "--tool", "inscount", str(image), "-o", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("anvil: error: no room for") and "--ram-region" in lines[0]
    assert not out.exists()
