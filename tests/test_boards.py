"""The bare-metal Cortex-M firmware samples (samples/boards/) built and run on QEMU's MPS2 boards.

Every program's printed results are checked against a model computed here in Python
from the program's inputs (seeds, sizes, coefficients: mirrored from the C sources),
never against recorded outputs.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.support import boards

OPTS = ("-O0", "-O2")
MASK32 = 0xFFFFFFFF


def lcg(seed: int) -> Callable[[], int]:
    """The programs' LCG: state = state * 1664525 + 1013904223 (mod 2^32); each call returns the new state."""
    state = seed

    def step() -> int:
        nonlocal state
        state = (state * 1664525 + 1013904223) & MASK32
        return state

    return step


# ---------------------------------------------------------------------------------------------
# Models of the programs.  Each returns (expected stdout lines, expected exit status); a
# line given as a compiled pattern is matched instead of compared (addresses).


def crc_model() -> tuple[list[str | re.Pattern[str]], int]:
    """crc.c: CRC-32 of 4096 bytes, each the top byte of the next LCG state (seed 0x2545F491)."""
    seed, length = 0x2545F491, 4096
    step = lcg(seed)
    data = bytes(step() >> 24 for _ in range(length))
    crc = zlib.crc32(data)
    return [f"seed={seed:08x} len={length} crc={crc:08x}"], crc & 0x7F


def sort_model() -> tuple[list[str | re.Pattern[str]], int]:
    """sort.c: 1000 LCG states (seed 20240611) sorted; checksum = sum (i + 1) * a[i] mod 2^32."""
    step = lcg(20240611)
    values = sorted(step() for _ in range(1000))
    checksum = sum((i + 1) * v for i, v in enumerate(values)) & MASK32
    address = re.compile(r"addr global=0x[0-9a-f]{8} heap=0x[0-9a-f]{8} local=0x[0-9a-f]{8}")
    return [address, f"n={len(values)} checksum={checksum:08x} min={values[0]:08x} max={values[-1]:08x}"], 0


def fir_q15(signal: list[int], coeffs: list[int]) -> tuple[list[int], int]:
    """Q15 FIR: y(n) = saturate16((sum_k h[k] x(n - k) + 2^14) >> 15), x(n < 0) = 0; also count saturations."""
    out, saturated = [], 0
    for n in range(len(signal)):
        acc = (1 << 14) + sum(h * signal[n - k] for k, h in enumerate(coeffs) if n - k >= 0)
        assert -(2**31) <= acc < 2**31  # the C code accumulates in int32_t
        y = acc >> 15  # arithmetic shift, as GCC does for int32_t
        if not -32768 <= y <= 32767:
            saturated += 1
            y = max(-32768, min(32767, y))
        out.append(y)
    return out, saturated


def filter_model() -> tuple[list[str | re.Pattern[str]], int]:
    """filter.c: 15-tap triangular Q15 FIR over sawtooth + square wave + LCG noise (seed 0xC0FFEE11)."""
    samples, taps = 512, 15
    coeffs = [(min(k, taps - 1 - k) + 1) * 896 for k in range(taps)]
    step = lcg(0xC0FFEE11)
    signal = []
    for i in range(samples):
        noise = (step() >> 19) - 4096
        saw = (i * 700) % 32768 - 16384
        square = 8192 if (i // 37) % 2 == 0 else -8192
        signal.append(saw + square + noise)
    assert all(-32768 <= x <= 32767 for x in signal)
    out, saturated = fir_q15(signal, coeffs)
    checksum = 0
    for y in out:
        checksum = (checksum * 31 + (y & 0xFFFF)) & MASK32
    lines: list[str | re.Pattern[str]] = [f"n={samples} taps={taps} checksum={checksum:08x} saturated={saturated}"]
    lines += [f"y[{i}]={out[i]}" for i in (0, 1, 7, 14, 100, 255, 511)]
    return lines, 0


def irq_model() -> tuple[list[str | re.Pattern[str]], int]:
    """irq.c: TARGET = 20 SysTick interrupts; acc starts at 7, acc = acc * 33 + tick in each."""
    target, acc = 20, 7
    for tick in range(1, target + 1):
        acc = (acc * 33 + tick) & MASK32
    return [f"target={target} ticks={target} acc={acc:08x}"], target


MODELS: dict[str, Callable[[], tuple[list[str | re.Pattern[str]], int]]] = {
    "crc": crc_model,
    "sort": sort_model,
    "filter": filter_model,
    "irq": irq_model,
}


def symbols(elf: Path) -> dict[str, int]:
    """Return the ELF's symbol table as name -> value."""
    with elf.open("rb") as f:
        table = ELFFile(f).get_section_by_name(".symtab")
        return {sym.name: sym["st_value"] for sym in table.iter_symbols() if sym.name}


# ---------------------------------------------------------------------------------------------


def test_every_program_has_a_model() -> None:
    """The test covers every program tests/support/boards.py knows."""
    assert sorted(MODELS) == sorted(boards.PROGRAMS)


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("board", sorted(boards.BOARDS))
@pytest.mark.parametrize("name", boards.PROGRAMS)
def test_firmware_output(name: str, board: str, opt: str) -> None:
    """Each program prints what its Python model computes and exits with the modelled status."""
    elf = boards.build_firmware(name, board, opt)
    stdout, status = boards.run_firmware(elf, board)
    lines = stdout.decode().splitlines()
    expected_lines, expected_status = MODELS[name]()
    assert len(lines) == len(expected_lines), stdout
    for line, expected in zip(lines, expected_lines):
        if isinstance(expected, re.Pattern):
            assert expected.fullmatch(line), line
        else:
            assert line == expected
    assert status == expected_status, stdout


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("board", sorted(boards.BOARDS))
def test_addresses_are_in_their_regions(board: str, opt: str) -> None:
    """sort.c's &global lies in .data/.bss, its malloc block in the heap and its local in the stack."""
    elf = boards.build_firmware("sort", board, opt)
    stdout, status = boards.run_firmware(elf, board)
    assert status == 0
    match = re.search(rb"addr global=0x([0-9a-f]+) heap=0x([0-9a-f]+) local=0x([0-9a-f]+)", stdout)
    assert match, stdout
    global_addr, heap_addr, local_addr = (int(group, 16) for group in match.groups())
    syms = symbols(elf)
    assert global_addr == syms["sort_calls"]
    assert syms["_sdata"] <= global_addr < syms["_ebss"]
    assert syms["__HeapBase"] <= heap_addr and heap_addr + 4000 <= syms["__HeapLimit"]
    assert syms["__StackLimit"] <= local_addr < syms["__StackTop"]


@pytest.mark.parametrize("board", sorted(boards.BOARDS))
def test_image_layout(board: str) -> None:
    """Vector table first at 0 (SP = __StackTop, Thumb handlers), RAM symbols consistent, float ABI per board."""
    elf = boards.build_firmware("irq", board, "-O2")
    syms = symbols(elf)
    with elf.open("rb") as f:
        image = ELFFile(f)
        vectors = image.get_section_by_name(".vectors")
        assert vectors["sh_addr"] == 0
        assert min(s["sh_addr"] for s in image.iter_sections() if s["sh_flags"] & 2) == 0  # SHF_ALLOC
        words = [int.from_bytes(vectors.data()[i : i + 4], "little") for i in range(0, 16 * 4, 4)]
        hard_float = bool(image.header["e_flags"] & 0x400)  # EF_ARM_ABI_FLOAT_HARD
        text = image.get_section_by_name(".text")
        data = image.get_section_by_name(".data")
        data_lma = next(
            seg["p_paddr"]
            for seg in image.iter_segments()
            if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] == 0x20000000
        )
    assert words[0] == syms["__StackTop"] == syms["_estack"] == 0x20400000
    assert words[1] == syms["Reset_Handler"] | 1
    assert words[2] == words[3] == syms["Default_Handler"] | 1  # NMI, HardFault: weak defaults
    assert words[15] == syms["SysTick_Handler"] | 1 != syms["Default_Handler"] | 1  # irq.c overrides it
    assert text["sh_addr"] + text["sh_size"] <= 0x400000
    assert data["sh_addr"] == syms["_sdata"] == 0x20000000
    assert data_lma == syms["_sidata"] and data_lma + data["sh_size"] <= 0x400000
    assert syms["_sdata"] <= syms["_edata"] <= syms["_sbss"] <= syms["_ebss"] <= syms["end"] == syms["__HeapBase"]
    assert syms["end"] == syms["_end"] and syms["end"] % 8 == 0
    assert syms["__HeapBase"] < syms["__HeapLimit"] == syms["__StackLimit"] < syms["__StackTop"]
    assert hard_float == (board == "mps2-an386")


def test_build_is_cached() -> None:
    """A second build of the same program, board and level reuses the first image; other flags do not."""
    first = boards.build_firmware("crc", "mps2-an385", "-O0")
    mtime = first.stat().st_mtime_ns
    assert boards.build_firmware("crc", "mps2-an385", "-O0") == first
    assert first.stat().st_mtime_ns == mtime
    assert first.parent == boards.cache_dir()
    others = {boards.build_firmware("crc", "mps2-an386", "-O0"), boards.build_firmware("crc", "mps2-an385", "-O2")}
    assert first not in others and len(others) == 2


def test_unknown_names_are_rejected() -> None:
    """Unknown programs, boards and levels raise a FirmwareBuildError naming the problem."""
    with pytest.raises(boards.FirmwareBuildError, match="program"):
        boards.build_firmware("no-such-program", "mps2-an385")
    with pytest.raises(boards.FirmwareBuildError, match="program"):
        boards.build_firmware("startup", "mps2-an385")
    with pytest.raises(boards.FirmwareBuildError, match="board"):
        boards.build_firmware("crc", "mps2-an999")
    with pytest.raises(boards.FirmwareBuildError, match="optimisation"):
        boards.build_firmware("crc", "mps2-an385", "-O9")
