"""Cortex-M firmware, InHost: every board sample at -O0 and -O2 on both MPS2 boards,
instrumented with inscount, bbcount and cachesim.

For each image:
- transparency: the instrumented image prints exactly what the original prints under
  qemu-system-arm (sort also prints &global, a malloc result and &local) and exits
  with the same status;
- inscount's total equals the instructions ``qemu-system-arm -singlestep -d
  exec,nochain`` executes in the original (interrupt handlers included: irq's SysTick
  handler is reached through the vector table, which stays unchanged);
- bbcount's count of every block equals qemu's count of the block's first instruction;
- cachesim's loads, stores and misses equal a plain-Python reference cache fed the
  data accesses unicorn records running the original image. irq needs SysTick, which
  unicorn lacks: its cachesim run is checked for transparency and for figures that
  add up only (as the Linux samples that unicorn cannot run).

Also: the placement errors, ``anvil run --board`` and ``anvil image``; ReHost over
semihosting and over the UART equals InHost.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from rewriter.cli import main as anvil_main
from rewriter.ir.elf_loader import load_binary
from tests.oracles.cache_model import simulate
from tests.oracles.qemu_trace import trace_firmware
from tests.oracles.unicorn_firmware import run_firmware_unicorn
from tests.support import tiers
from tests.support.boards import (
    BOARDS,
    PROGRAMS,
    REPO_ROOT,
    anvil_cli,
    build_firmware,
    instrument,
    run_firmware,
)


def run_and_results(image: Path, board: str, tool: str) -> tuple[bytes, int, dict]:
    out, status = run_firmware(image, board, cwd=image.parent)
    results = image.parent / f"{image.name}.{tool}.out"
    assert results.exists(), f"{tool} wrote no results"
    return out, status, json.loads(results.read_text())


def code_ranges(image: Path) -> list[tuple[int, int]]:
    binary = load_binary(str(image))
    return [(s.vaddr, s.vaddr + s.memsz) for s in binary.segments if s.executable]


# Every pair of (program, board, optimisation) by default, all 16 with --extended (tiers.py).
@pytest.mark.parametrize(("program", "board", "opt"),
                         tiers.params([(p, b, o) for p in PROGRAMS for b in sorted(BOARDS) for o in ("-O0", "-O2")]))
def test_firmware_tools_against_oracles(program: str, board: str, opt: str, tmp_path: Path) -> None:
    image = build_firmware(program, board, opt)
    expected_out, expected_status = run_firmware(image, board)
    trace = trace_firmware(image, board)
    assert (trace.stdout, trace.returncode) == (expected_out, expected_status)
    ranges = code_ranges(image)
    pcs = {pc: n for pc, n in trace.pcs.items() if any(lo <= pc < hi for lo, hi in ranges)}

    out, status, got = run_and_results(instrument(image, "inscount", tmp_path / "ins" / "fw"), board, "inscount")
    assert (out, status) == (expected_out, expected_status)
    assert got["total"] == sum(pcs.values())

    out, status, got = run_and_results(instrument(image, "bbcount", tmp_path / "bbc" / "fw"), board, "bbcount")
    assert (out, status) == (expected_out, expected_status)
    wrong = {b["address"]: (b["count"], pcs.get(b["address"], 0)) for b in got["counts"]
             if b["count"] != pcs.get(b["address"], 0)}
    assert not wrong, f"blocks whose count differs from qemu's (ours, qemu): {list(wrong.items())[:5]}"
    assert sum(b["count"] * b["instructions"] for b in got["counts"]) == sum(pcs.values())

    geometry = "size=1024,assoc=2,line=32"
    out, status, got = run_and_results(instrument(image, "cachesim", tmp_path / "cache" / "fw", "--opt", geometry),
                                       board, "cachesim")
    assert (out, status) == (expected_out, expected_status)
    assert got["hits"] + got["misses"] == got["loads"] + got["stores"] > 0
    if program != "irq":
        oracle = run_firmware_unicorn(image, board)
        assert (oracle.output, oracle.status) == (expected_out, expected_status)
        expected = simulate(oracle.accesses, 1024, 2, 32)
        for key in ("loads", "stores", "load_misses", "store_misses"):
            assert got[key] == expected[key], (key, got, expected)


def test_interrupt_handler_is_instrumented(tmp_path: Path) -> None:
    """The SysTick handler runs only through the vector table; its blocks are counted."""
    image = build_firmware("irq", "mps2-an385", "-O2")
    _, _, got = run_and_results(instrument(image, "inscount", tmp_path / "ins" / "fw"), "mps2-an385", "inscount")
    handler = got["procedures"].get("SysTick_Handler", 0)
    trace = trace_firmware(image, "mps2-an385")
    binary = load_binary(str(image))
    proc = next(p for p in binary.procedures if p.name == "SysTick_Handler")
    assert handler > 0
    assert handler == sum(n for pc, n in trace.pcs.items() if proc.address <= pc < proc.end)


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
def test_cache_hits_leave_interrupts_alone(mode: str, tmp_path: Path) -> None:
    """Decision 0047: an access whose line is its set's most recent returns before the shared
    path masks interrupts (QEMU leaves its translated code after every CPSID and MSR), so
    CPSID runs for few of crc's accesses, not for every one. Counted by QEMU's own trace."""
    image = build_firmware("crc", "mps2-an385", "-O2")
    _, _, got = run_and_results(instrument(image, "cachesim", tmp_path / "fw"), "mps2-an385", "cachesim")
    out = instrument(image, "cachesim", tmp_path / mode / "fw", "--mode", mode)
    trace = trace_firmware(out, "mps2-an385")
    assert (trace.stdout, trace.returncode) == run_firmware(image, "mps2-an385")
    raw = out.read_bytes()
    code = [s for s in load_binary(str(out)).segments if s.executable]

    def halfword(pc: int) -> int:
        seg = next((s for s in code if s.vaddr <= pc < s.vaddr + s.filesz - 1), None)
        return -1 if seg is None else int.from_bytes(raw[seg.offset + pc - seg.vaddr:][:2], "little")

    cpsid = sum(n for pc, n in trace.pcs.items() if halfword(pc) == 0xB672)  # CPSID i
    accesses = got["loads"] + got["stores"]
    assert accesses > 10_000
    assert 0 < cpsid < accesses // 4, (cpsid, accesses)


def _unchained_entries(image: Path, board: str) -> Counter[int]:
    """Translation blocks QEMU entered other than by a chained jump (its main loop or its
    lookup of a jump's target), by address: ``-d exec`` with chaining on logs only those."""
    log = image.parent / "exec.log"
    subprocess.run(["qemu-system-arm", "-M", board, "-nographic", "-monitor", "none", "-serial", "none",
                    "-no-reboot", "-semihosting-config", "enable=on,target=native", "-d", "exec", "-D", str(log),
                    "-kernel", image.name], cwd=image.parent, capture_output=True, timeout=300, check=False)
    return Counter(int(line.split()[3].split("/")[1], 16) for line in log.read_text().splitlines()
                   if line.startswith("Trace"))


def _call_free_loop_accesses(image: Path, pcs: Counter[int]) -> tuple[int, int, int]:
    """(all, inside loops without calls) data accesses of ``image`` by QEMU's counts of its
    instructions, and outside those loops, the accesses an instruction makes counting at most
    two for a PUSH/POP/LDM/STM; a loop is the code from a backward branch's target to the branch."""
    everything = inside = outside_firsts_and_lasts = 0
    for proc in load_binary(str(image)).procedures:
        calls = [ins.address for ins in proc.instructions() if ins.is_call]
        loops = [(ins.branch_target, ins.end) for ins in proc.instructions()
                 if ins.is_branch and not ins.is_call and ins.branch_target is not None
                 and proc.address <= ins.branch_target <= ins.address
                 and not any(ins.branch_target <= c < ins.end for c in calls)]
        for ins in proc.instructions():
            ran = pcs.get(ins.address, 0) * len(ins.accesses)
            everything += ran
            if any(start <= ins.address < end for start, end in loops):
                inside += ran
            else:
                outside_firsts_and_lasts += pcs.get(ins.address, 0) * min(len(ins.accesses), 2)
    return everything, inside, outside_firsts_and_lasts


# sort's partition loop (both scans and the swap) is longer than relocate.LOOP_KEPT_IN_A_PAGE
# and may straddle a page: only crc, whose hot loops are short, is held to few page crossings.
@pytest.mark.parametrize("program, board, mode, short_loops", [("sort", "mps2-an386", "inhost", False),
                                                               ("crc", "mps2-an385", "rehost", True)])
def test_cache_hits_in_loops_stay_at_the_site(program: str, board: str, mode: str, short_loops: bool,
                                              tmp_path: Path) -> None:
    """Decision 0070: an access site in any loop without calls (not only an innermost one)
    tests its cache hit itself, and loops are kept off QEMU's 1 KiB M-profile page
    boundaries. By QEMU's traces: the shared access paths (entered by BL at their
    ``mov ip, r0``) run at most for the accesses outside such loops (of a multi-register
    transfer only the first and the last, decision 0074), which for sort are
    well under what the innermost loops alone left (its swap and insertion sort's outer
    loop); and where the hot loops are short, few blocks are entered unchained at a page's start."""
    image = build_firmware(program, board, "-O2")
    original = trace_firmware(image, board)
    accesses, in_loops, firsts_and_lasts = _call_free_loop_accesses(image, original.pcs)
    out = instrument(image, "cachesim", tmp_path / "fw", "--mode", mode)
    trace = trace_firmware(out, board)
    assert (trace.stdout, trace.returncode) == (original.stdout, original.returncode)
    raw = out.read_bytes()
    code = [s for s in load_binary(str(out)).segments if s.executable]

    def halfwords(pc: int) -> tuple[int, int]:
        seg = next((s for s in code if s.vaddr <= pc < s.vaddr + s.filesz - 3), None)
        at = -1 if seg is None else seg.offset + pc - seg.vaddr
        return (-1, -1) if seg is None else (int.from_bytes(raw[at:at + 2], "little"),
                                             int.from_bytes(raw[at + 2:at + 4], "little"))

    def bl_target(pc: int) -> int | None:
        first, second = halfwords(pc)
        if first >> 11 != 0b11110 or second & 0xD000 != 0xD000:
            return None
        s, j1, j2 = first >> 10 & 1, second >> 13 & 1, second >> 11 & 1
        offset = (s << 24 | (1 - (j1 ^ s)) << 23 | (1 - (j2 ^ s)) << 22 | (first & 0x3FF) << 12 | (second & 0x7FF) << 1)
        return pc + 4 + offset - (s << 25)

    shared = sum(n for pc, n in trace.pcs.items()
                 if (target := bl_target(pc)) is not None and halfwords(target)[0] == 0x4684)  # mov ip, r0
    assert accesses > 10_000 and in_loops > accesses // 2, (accesses, in_loops)
    # Decision 0074: of a PUSH/POP/LDM/STM outside those loops, only the first and the last
    # access go to the shared path (the others are counted as the repeats they are).
    assert firsts_and_lasts < accesses - in_loops, (firsts_and_lasts, accesses, in_loops)
    assert 0 < shared <= firsts_and_lasts, (shared, firsts_and_lasts, accesses, in_loops)
    # Decision 0079: no exception handler of these programs counts hits, so the hits count
    # with plain adds: the instrumented image runs no more LDREX than the original.
    ldrex = sum(n for pc, n in trace.pcs.items() if halfwords(pc)[0] & 0xFFF0 == 0xE850)
    before = load_binary(str(image))
    assert ldrex == sum(n for pc, n in original.pcs.items()
                        if int.from_bytes(before.read(pc, 2), "little") & 0xFFF0 == 0xE850), ldrex
    page_starts = sum(n for pc, n in _unchained_entries(out, board).items()
                      if pc % 1024 == 0 and any(s.vaddr <= pc < s.vaddr + s.filesz for s in code))
    assert page_starts < accesses // 100 or not short_loops, (page_starts, accesses)


@pytest.mark.parametrize("program, board, bound", [("crc", "mps2-an385", 1.6), ("sort", "mps2-an386", 1.75)])
def test_loop_counters_leave_no_calls(program: str, board: str, bound: float, tmp_path: Path) -> None:
    """Decision 0053: a counted block inside a loop adds in place, and an innermost loop
    with a free register counts there, so crc's loops call no shared bump. By QEMU's
    traces with 2 and 3 rounds, a round of the instrumented image runs under ``bound``
    times the original's instructions (crc: 4.4 times when every counted block called one,
    decision 0047; the rest of a run, start-up and results, is not the loops'), and
    inscount still counts the original's instructions exactly. sort: quicksort's scans are
    self loops entered both before the partition loop and from its latch, which count in
    a register too (decision 0079: 1.79 times before)."""
    ran = []
    for rounds in (2, 3):
        image = build_firmware(program, board, "-O2", [f"-DREPEAT={rounds}u"])
        original = trace_firmware(image, board)
        out = instrument(image, "inscount", tmp_path / str(rounds) / "fw")
        counters = json.loads(Path(f"{out}.anvil.json").read_text())["block_counters"]
        assert counters["in_loops"] > 0 and counters["loops_in_registers"] > 0
        trace = trace_firmware(out, board)
        assert (trace.stdout, trace.returncode) == (original.stdout, original.returncode)
        ran.append((sum(trace.pcs.values()), sum(original.pcs.values())))
        ranges = code_ranges(image)
        _, _, got = run_and_results(out, board, "inscount")
        assert got["total"] == sum(n for pc, n in original.pcs.items() if any(lo <= pc < hi for lo, hi in ranges))
    instrumented, before = ran[1][0] - ran[0][0], ran[1][1] - ran[0][1]
    assert 0 < instrumented < bound * before, (instrumented, before)


def test_anvil_run_board(tmp_path: Path) -> None:
    image = build_firmware("sort", "mps2-an386", "-O2")
    expected_out, expected_status = run_firmware(image, "mps2-an386")
    instrument(image, "inscount", tmp_path / "fw.inst")
    run = anvil_cli("run", "--board", "mps2-an386", "fw.inst", cwd=tmp_path, timeout=120)
    assert (run.stdout, run.returncode) == (expected_out, expected_status)
    assert b"results in fw.inst.inscount.out" in run.stderr
    assert json.loads((tmp_path / "fw.inst.inscount.out").read_text())["total"] > 0


@pytest.mark.parametrize("option, needle", [
    ("--ram-region=0x20300000:64", "no room for"),
    ("--flash-region=0x8000:256", "overlaps the image"),
    ("--flash-region=0x100000:256", "no room for"),
    ("--ram-region=0x20000000", "is not START:SIZE"),
])
def test_placement_errors(option: str, needle: str, tmp_path: Path) -> None:
    image = build_firmware("crc", "mps2-an385", "-O2")
    out = tmp_path / "fw.inst"
    run = anvil_cli("instrument", "--tool", "cachesim", str(image), "-o", str(out), option, cwd=tmp_path,
                    timeout=120)
    assert run.returncode == 2
    lines = run.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], lines
    assert not out.exists() and not list(tmp_path.glob(".anvil-*"))


def test_user_regions_are_used(tmp_path: Path) -> None:
    """--flash-region / --ram-region put the additions where asked, and the image still works."""
    image = build_firmware("crc", "mps2-an385", "-O2")
    out = instrument(image, "inscount", tmp_path / "fw", "--flash-region", "0x200000:1M",
                     "--ram-region", "0x20100000:1M")
    segments = {(s.vaddr, s.flags & 7) for s in load_binary(str(out)).segments}
    assert (0x200000, 5) in segments
    assert any(0x20100000 <= vaddr < 0x20200000 and flags == 6 for vaddr, flags in segments)
    expected = run_firmware(image, "mps2-an385")
    assert run_and_results(out, "mps2-an385", "inscount")[:2] == expected


def test_image_formats(tmp_path: Path) -> None:
    """bin equals objcopy's binary of the same ELF, hex converts (objcopy) back to it, and the
    raw binary runs on the board like the ELF, results included."""
    image = build_firmware("crc", "mps2-an385", "-O2")
    inst = instrument(image, "inscount", tmp_path / "elf" / "fw")
    assert anvil_main(["image", str(inst), "--format", "bin", "-o", str(tmp_path / "fw.bin")]) == 0
    assert anvil_main(["image", str(inst), "--format", "hex", "-o", str(tmp_path / "fw.hex")]) == 0
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "--gap-fill", "0xff", str(inst),
                    str(tmp_path / "objcopy.bin")], check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-I", "ihex", "-O", "binary", "--gap-fill", "0xff",
                    str(tmp_path / "fw.hex"), str(tmp_path / "from_hex.bin")], check=True)
    ours = (tmp_path / "fw.bin").read_bytes()
    assert ours == (tmp_path / "objcopy.bin").read_bytes()
    assert ours == (tmp_path / "from_hex.bin").read_bytes()
    run_dir = tmp_path / "raw"
    run_dir.mkdir()
    raw = run_dir / "fw"  # the results file name is baked in: fw.inscount.out
    raw.write_bytes(ours)
    expected_out, expected_status = run_firmware(inst, "mps2-an385", cwd=inst.parent)
    assert run_firmware(raw, "mps2-an385", cwd=run_dir) == (expected_out, expected_status)
    assert (run_dir / "fw.inscount.out").read_text() == (inst.parent / "fw.inscount.out").read_text()


@pytest.mark.parametrize("args, needle", [
    (["image", "README.md"], "not an ELF file"),
    (["run", "--board", "mps2-an999", "README.md"], "unknown board 'mps2-an999'"),
    (["instrument", "--tool", "inscount", "--mode", "rehost", "--transport", "uart", "--uart-base", "uart0",
      "{image}", "-o", "fw.rh"], "--uart-base 'uart0' is not an address"),
    (["instrument", "--tool", "inscount", "--mode", "rehost", "--transport", "uart", "--uart-base", "0x100000000",
      "{image}", "-o", "fw.rh"], "--uart-base 0x100000000 is out of range"),
    (["instrument", "--tool", "inscount", "--mode", "rehost", "--transport", "uart", "--uart-base", "0x20000000",
      "{image}", "-o", "fw.rh"], "is inside the image"),
    (["instrument", "--tool", "inscount", "--uart-base", "0x40004000", "{image}", "-o", "fw.inst"],
     "--transport, --uart-base and --ring-size are for --mode rehost"),
    (["instrument", "--tool", "inscount", "--ring-size", "1k", "{image}", "-o", "fw.inst"],
     "--transport, --uart-base and --ring-size are for --mode rehost"),
    (["instrument", "--tool", "inscount", "--mode", "rehost", "--ring-size", "100", "{image}", "-o", "fw.rh"],
     "--ring-size 100 is out of range"),
    (["instrument", "--tool", "inscount", "--mode", "rehost", "--ring-size", "1026", "{image}", "-o", "fw.rh"],
     "--ring-size 1026 is out of range"),
    (["instrument", "--tool", "inscount", "--mode", "rehost", "--ring-size", "lots", "{image}", "-o", "fw.rh"],
     "--ring-size 'lots' is not a size in bytes"),
    (["run", "--board", "mps2-an385", "--server", "127.0.0.1:1", "{image}"], "is not a ReHost image"),
    (["run", "--board", "mps2-an385", "--icount", "11", "{image}"], "--icount '11' is not a shift from 0 to 10"),
    (["run", "--icount", "0", "{image}"], "--icount is for firmware images run with --board"),
])
def test_board_commands_bad_input(args: list[str], needle: str, tmp_path: Path) -> None:
    image = build_firmware("crc", "mps2-an385", "-O2")
    args = [str(image) if a == "{image}" else str(REPO_ROOT / a) if a == "README.md" else a for a in args]
    run = anvil_cli(*args, cwd=tmp_path, timeout=120)
    lines = run.stderr.decode().strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and needle in lines[0], (run.returncode, lines)
    assert not list(tmp_path.iterdir())


def test_baseline_cortex_m_is_refused(tmp_path: Path) -> None:
    """An ARMv6-M image (Cortex-M0) gets a one-line error, not an image its hooks would break."""
    source = tmp_path / "m0.c"
    source.write_text("int main(void) { for (;;) ; }\nvoid Reset_Handler(void) { main(); }\n")
    image = tmp_path / "m0.elf"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m0", "-mthumb", "-nostdlib", "-O2", "-e", "Reset_Handler",
                    "-Wl,-Ttext=0", str(source), "-o", str(image)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    run = anvil_cli("instrument", "--tool", "inscount", str(image), "-o", "m0.inst", cwd=work, timeout=120)
    lines = run.stderr.decode().strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and "ARMv6-M" in lines[0], (run.returncode, lines)
    assert not list(work.iterdir())


InHostRun = tuple[tuple[bytes, int], dict]  # (the original's console output and exit status, InHost's results)


@pytest.fixture(scope="module")
def inhost_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str, str], InHostRun]:
    """The original's behaviour and InHost's results of (program, board, tool), once per module
    (per test worker): the ReHost tests of both transports compare with them."""
    runs: dict[tuple[str, str, str], InHostRun] = {}

    def get(program: str, board: str, tool: str) -> InHostRun:
        if (program, board, tool) not in runs:
            image = build_firmware(program, board, "-O2")
            expected = run_firmware(image, board)
            inhost = run_and_results(instrument(image, tool, tmp_path_factory.mktemp("inhost") / "fw"), board, tool)
            assert inhost[:2] == expected
            runs[program, board, tool] = expected, inhost[2]
        return runs[program, board, tool]

    return get


# The UART transport: every program and board with one counting tool and cachesim (bbcount's
# records are inscount's kind; the semihosting cases cover it), to keep the added time small.
REHOST_CASES = [(program, board, tool, transport) for program in PROGRAMS for board in BOARDS
                for tool in ("inscount", "bbcount", "cachesim") for transport in ("semihosting", "uart")
                if transport == "semihosting" or tool != "bbcount"]


@pytest.mark.parametrize("program, board, tool, transport", tiers.params(REHOST_CASES))
def test_rehost_on_board_matches_inhost(program: str, board: str, tool: str, transport: str, tmp_path: Path,
                                        inhost_run: Callable[[str, str, str], InHostRun]) -> None:
    """ReHost on a board: records leave through semihosting into the named pipe `anvil run
    --board` reads, or through UART0 (QEMU's first serial port) into another pipe it reads;
    the analysis runs in a local rehost-server; the console output and exit status are the
    original's and the results equal InHost's (which the oracle test checks against qemu
    and the reference cache model)."""
    expected, inhost = inhost_run(program, board, tool)
    image = build_firmware(program, board, "-O2")
    extra = ["--transport", "uart"] if transport == "uart" else []
    instrument(image, tool, tmp_path / "rh" / "fw", "--mode", "rehost", *extra)
    channel = json.loads((tmp_path / "rh" / "fw.sites.json").read_text())["channel"]
    assert channel == ({"transport": "uart", "uart_base": 0x40004000} if extra else {"transport": "semihosting"})
    run = anvil_cli("run", "--board", board, "fw", cwd=tmp_path / "rh", timeout=120)
    assert (run.stdout, run.returncode) == expected, run.stderr
    assert json.loads((tmp_path / "rh" / f"fw.{tool}.out").read_text()) == inhost
    assert sorted(p.name for p in (tmp_path / "rh").iterdir()) == [  # the pipe is gone after the run
        "fw", "fw.anvil.json", f"fw.{tool}.out", "fw.sites.json"]


def _ram_added(image: Path) -> int:
    """Bytes of the RAM segment an instrumented image adds (.anvil.ram)."""
    binary = load_binary(str(image))
    return next(s.memsz for s in binary.segments if s.filesz == 0 and s.memsz and not s.executable)


@pytest.mark.parametrize("transport", ["semihosting", "uart"])
def test_rehost_with_a_small_ring(transport: str, tmp_path: Path,
                                  inhost_run: Callable[[str, str, str], InHostRun]) -> None:
    """--ring-size 256: the image's RAM shrinks by the ring's 16 KiB less 256 bytes; sort's
    cachesim makes far more than 256 bytes of records, so they leave in many small sends,
    and the results are InHost's all the same."""
    expected, inhost = inhost_run("sort", "mps2-an385", "cachesim")
    image = build_firmware("sort", "mps2-an385", "-O2")
    extra = ["--transport", transport]
    default = instrument(image, "cachesim", tmp_path / "default" / "fw", "--mode", "rehost", *extra)
    small = instrument(image, "cachesim", tmp_path / "small" / "fw", "--mode", "rehost", "--ring-size", "256", *extra)
    assert _ram_added(default) - _ram_added(small) == 16384 - 256
    run = anvil_cli("run", "--board", "mps2-an385", "fw", cwd=small.parent, timeout=120)
    assert (run.stdout, run.returncode) == expected, run.stderr
    assert json.loads((small.parent / "fw.cachesim.out").read_text()) == inhost


def test_rehost_over_another_uart(tmp_path: Path, inhost_run: Callable[[str, str, str], InHostRun]) -> None:
    """--uart-base names another of the board's UARTs (UART1): `anvil run --board` connects
    that one (QEMU's second serial port); a base the board has no UART at is a one-line
    error of `anvil run`, before QEMU starts."""
    expected, inhost = inhost_run("crc", "mps2-an385", "inscount")
    image = build_firmware("crc", "mps2-an385", "-O2")
    instrument(image, "inscount", tmp_path / "fw", "--mode", "rehost", "--transport", "uart",
               "--uart-base", "0x40005000")
    run = anvil_cli("run", "--board", "mps2-an385", "fw", cwd=tmp_path, timeout=120)
    assert (run.stdout, run.returncode) == expected, run.stderr
    assert json.loads((tmp_path / "fw.inscount.out").read_text()) == inhost
    instrument(image, "inscount", tmp_path / "fw8", "--mode", "rehost", "--transport", "uart",
               "--uart-base", "0x40008000")
    run = anvil_cli("run", "--board", "mps2-an385", "fw8", cwd=tmp_path, timeout=120)
    lines = run.stderr.decode().strip().splitlines()
    assert run.returncode == 2 and run.stdout == b"" and len(lines) == 1, (run.returncode, lines)
    assert "mps2-an385 has no UART at 0x40008000" in lines[0]


@pytest.mark.parametrize("program", PROGRAMS)
def test_poisoned_dead_registers_change_nothing_on_a_board(program: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Firmware sites rely on the dead-register analysis too (the 6-byte counter sites
    where LR is dead, decision 0035): with every register it calls dead overwritten before
    every instruction (ANVIL_POISON_DEAD), each sample, the interrupt handler's included,
    prints and exits as the original and counts as many instructions as without."""
    image = build_firmware(program, "mps2-an385", "-O2")
    expected = run_firmware(image, "mps2-an385")
    plain = run_and_results(instrument(image, "inscount", tmp_path / "plain" / "fw"), "mps2-an385", "inscount")
    monkeypatch.setenv("ANVIL_POISON_DEAD", "1")
    poisoned = run_and_results(instrument(image, "inscount", tmp_path / "poisoned" / "fw"), "mps2-an385", "inscount")
    assert plain[:2] == expected and poisoned[:2] == expected
    assert poisoned[2]["total"] == plain[2]["total"] > 0


@pytest.mark.parametrize("program, board", [("sort", "mps2-an386"), ("crc", "mps2-an385")])
def test_instrumentation_data_leaves_the_programs_tlb_entries(program: str, board: str, tmp_path: Path) -> None:
    """Decision 0080: QEMU's softmmu TLB is direct-mapped by page (1 KiB on M-profile, 256
    entries), so data of ours on an entry the program's data uses evicts it at every
    access (sort's counters and its array: InHost inscount ran 27 % longer than ReHost
    with the same instructions). No page of the instrumentation's data shares an entry
    with a page the original's accesses use often (1 % of them or more, by unicorn's run
    of the original)."""
    image = build_firmware(program, board, "-O2")
    run = run_firmware_unicorn(image, board)
    pages = Counter(address >> 10 for _, address, _ in run.accesses)
    hot = {page for page, n in pages.items() if n * 100 >= len(run.accesses)}
    assert hot
    out = instrument(image, "inscount", tmp_path / "fw")
    before = {(s.vaddr, s.memsz) for s in load_binary(str(image)).segments}
    ours = {page for s in load_binary(str(out)).segments
            if (s.vaddr, s.memsz) not in before and s.vaddr >= 0x20000000 and s.memsz
            for page in range(s.vaddr >> 10, (s.vaddr + s.memsz - 1 >> 10) + 1)}
    assert ours
    shared = {p % 256 for p in ours} & {p % 256 for p in hot}
    assert not shared, sorted(shared)
