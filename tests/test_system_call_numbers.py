"""System call numbers read from the code (``rewriter.ir.constants``) against the numbers
the calls carry when they run, and the end-of-program hook they decide (decision 0033).

- Firmware: unicorn runs each board sample and records every semihosting call with the
  operation in r0 (``tests/oracles/unicorn_firmware.py``).
- Linux: qemu-arm prints the registers before each ``svc`` of a static program
  (``-singlestep -d cpu -dfilter`` on the calls' addresses), r7 being the number.
- Each rule of the walk, on every distinct instruction of Debian's Lua and two static
  samples (glibc's assembly included), A32 and T32: an instruction said to keep a
  register is one capstone's detail mode says does not write it; a move said to set a
  constant or copy a register is one unicorn, running it, sees do just that.

For every executed call: the number read from the code, when there is one, is the one
the call ran with; a call that ended the program (or might have: exit, exit_group) keeps
its hook. And the reading is of use: most semihosting calls the samples run have a
known number (glibc makes most of its calls through one routine, where it is not known).
End to end, with only the application's procedures instrumented the wrappers of other
calls are not relocated, and the results still arrive at the end: crc's ReHost count
equals qemu's count of ``main``'s instructions, sort's ReHost cache figures those of a
reference cache fed the accesses of ``main`` and ``quicksort`` under unicorn.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import capstone
import pytest
from unicorn import UC_ARCH_ARM, UC_MODE_ARM, UC_MODE_THUMB, Uc, arm_const

from rewriter.emit.inhost import ENDING_LINUX_CALLS, ENDING_SEMIHOSTING_CALLS, may_end_program
from rewriter.ir.constants import constant_before, effect_on, jump_targets
from rewriter.ir.elf_loader import load_binary
from rewriter.ir.model import Binary, Instruction
from tests.oracles.cache_model import simulate
from tests.oracles.qemu_trace import trace_firmware
from tests.oracles.unicorn_firmware import run_firmware_unicorn
from tests.support.boards import anvil_cli, build_firmware, instrument, run_firmware
from tests.support.samples import build, build_lua

_STATE = re.compile(rb"R07=([0-9a-f]{8}).*?R15=([0-9a-f]{8})", re.S)


def _calls(binary: Binary) -> dict[int, Instruction]:
    return {ins.address: ins for proc in binary.procedures for ins in proc.instructions() if ins.is_syscall}


def _check(binary: Binary, executed: list[tuple[int, int]], register: int, ending: frozenset[int]) -> int:
    """Check each executed ``(address, number)`` call; the number of them whose number was read."""
    calls = _calls(binary)
    jumped_to = jump_targets(binary)
    known = 0
    for address, number in executed:
        ins = calls[address]
        read = constant_before(ins, register, jumped_to)
        assert read is None or read == number, f"{ins}: read {read:#x}, ran with {number:#x}"
        known += read is not None
        if number in ending:
            assert may_end_program(binary, ins, register, jumped_to), f"{ins} ended the program without a hook"
    return known


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("program", ["crc", "sort", "filter"])
def test_semihosting_operations_match_unicorn(program: str, opt: str) -> None:
    image = build_firmware(program, "mps2-an385", opt)
    run = run_firmware_unicorn(image, "mps2-an385")
    assert run.calls and run.calls[-1][1] in ENDING_SEMIHOSTING_CALLS
    known = _check(load_binary(str(image)), run.calls, 0, ENDING_SEMIHOSTING_CALLS)
    assert known * 2 > len(run.calls), f"only {known} of {len(run.calls)} calls have a known number"


@pytest.mark.parametrize("variant", ["O2-arm-static", "O0-thumb-static"])
def test_linux_system_call_numbers_match_qemu(variant: str, tmp_path: Path) -> None:
    exe = build("hash", variant)
    binary = load_binary(str(exe))
    calls = _calls(binary)
    log = tmp_path / "cpu.log"
    ranges = ",".join(f"{a:#x}+{ins.size}" for a, ins in calls.items())
    subprocess.run(["env", "-i", "qemu-arm", "-singlestep", "-d", "cpu,nochain", "-dfilter", ranges,
                    "-D", str(log), str(exe)], stdin=subprocess.DEVNULL, capture_output=True, check=True,
                   timeout=120)
    executed = [(int(pc, 16), int(r7, 16)) for r7, pc in _STATE.findall(log.read_bytes())]
    executed = [(pc, r7) for pc, r7 in executed if pc in calls]
    assert executed and executed[-1][1] in ENDING_LINUX_CALLS
    # glibc makes most calls through one routine that takes the number as an argument
    # (unknown there); its own wrappers, exit_group's among them, set it in place.
    assert _check(binary, executed, 7, ENDING_LINUX_CALLS) >= 1


def test_only_main_relocates_no_other_call_wrapper(tmp_path: Path) -> None:
    """crc with only main instrumented, ReHost over semihosting: the wrappers of reads,
    writes and opens stay as they were, and the count still arrives (it is sent at the
    exit call), equal to qemu's count of main's instructions."""
    image = build_firmware("crc", "mps2-an385", "-O2")
    out = instrument(image, "inscount", tmp_path / "crc.rh", "--mode", "rehost", "--transport", "semihosting",
                     "--only", "main")
    report = json.loads((tmp_path / "crc.rh.anvil.json").read_text())
    binary = load_binary(str(image))
    jumped_to = jump_targets(binary)
    relocated_calls = {ins.address for ins in _calls(binary).values()
                       if may_end_program(binary, ins, 0, jumped_to)}
    owners = {proc.name for proc in binary.procedures for ins in proc.instructions()
              if ins.address in relocated_calls}
    reset = next(p.name for p in binary.procedures if p.address == binary.entry & ~1)
    assert report["instrumented"] == len({"main", reset} | owners) < 8
    expected_out, expected_status = run_firmware(image, "mps2-an385")
    result = anvil_cli("run", "--board", "mps2-an385", str(out), cwd=tmp_path)
    assert result.stdout == expected_out and result.returncode == expected_status
    counts = json.loads((tmp_path / "crc.rh.inscount.out").read_text())
    main = binary.symbols["main"] & ~1
    size = next(p.size for p in binary.procedures if p.name == "main")
    trace = trace_firmware(image, "mps2-an385")
    assert counts["total"] == sum(n for pc, n in trace.pcs.items() if main <= pc < main + size)


def _capstone_writes(md: capstone.Cs, ins: Instruction) -> set[int]:
    insn = next(md.disasm(ins.raw, ins.address))
    names = {f"r{i}": i for i in range(13)} | {"sb": 9, "sl": 10, "fp": 11, "ip": 12}
    return {names[insn.reg_name(r)] for r in insn.regs_access()[1] if insn.reg_name(r) in names}


def _run_one(ins: Instruction, before: list[int]) -> list[int]:
    """r0-r12 after unicorn runs ``ins`` alone with r0-r12 = ``before``."""
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB if ins.thumb else UC_MODE_ARM)
    uc.mem_map(0x10000, 0x1000)
    uc.mem_write(0x10000, ins.raw)
    regs = [getattr(arm_const, f"UC_ARM_REG_R{i}") for i in range(13)]
    for reg, value in zip(regs, before):
        uc.reg_write(reg, value)
    uc.emu_start(0x10000 | ins.thumb, 0x10000 + ins.size)
    return [uc.reg_read(reg) for reg in regs]


def test_register_effects_agree_with_capstone_and_unicorn() -> None:
    modes = {thumb: capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB if thumb else capstone.CS_MODE_ARM)
             for thumb in (False, True)}
    for md in modes.values():
        md.detail = True
    before = [0x1000 * (i + 1) + 0x11 * i for i in range(13)]
    seen: set[tuple] = set()
    wrong: list[str] = []
    kept = moved = 0
    for path in (build_lua(), build("calls", "O2-arm-static"), build("sort", "Os-thumb-static")):
        for proc in load_binary(str(path)).procedures:
            for ins in proc.instructions():
                key = (ins.thumb, ins.raw, ins.mnemonic, ins.op_str, ins.cond != 14 or ins.in_it)
                if key in seen:
                    continue
                seen.add(key)
                writes = None
                for register in range(13):
                    effect = effect_on(ins, register)
                    if effect.keeps:
                        writes = _capstone_writes(modes[ins.thumb], ins) if writes is None else writes
                        kept += 1
                        if register in writes:
                            wrong.append(f"{ins}: said to keep r{register}, capstone says written")
                    elif effect.constant is not None or effect.source is not None:
                        moved += 1
                        want = effect.constant if effect.source is None else before[effect.source]
                        after = _run_one(ins, before)
                        if after[register] != want:
                            wrong.append(f"{ins}: r{register} said {want:#x}, unicorn ran {after[register]:#x}")
    assert not wrong, "\n".join(wrong[:20])
    assert len(seen) > 50000 and moved > 500 and kept > 12 * len(seen) // 2


def test_only_the_application_in_rehost_cachesim(tmp_path: Path) -> None:
    """sort with only its own procedures instrumented, ReHost cachesim: same output, and
    the cache figures of a reference cache fed the accesses unicorn sees those
    procedures' instructions make."""
    image = build_firmware("sort", "mps2-an385", "-O2")
    own = ["main", "quicksort"]
    out = instrument(image, "cachesim", tmp_path / "sort.rh", "--mode", "rehost", "--transport", "semihosting",
                     "--opt", "size=1024,assoc=2,line=32", *(w for name in own for w in ("--only", name)))
    expected_out, expected_status = run_firmware(image, "mps2-an385")
    result = anvil_cli("run", "--board", "mps2-an385", str(out), cwd=tmp_path)
    assert result.stdout == expected_out and result.returncode == expected_status
    got = json.loads((tmp_path / "sort.rh.cachesim.out").read_text())
    binary = load_binary(str(image))
    ranges = [(p.address, p.end) for p in binary.procedures if p.name in own]
    oracle = run_firmware_unicorn(image, "mps2-an385", with_pc=True)
    mine = [access[:3] for access in oracle.accesses if any(lo <= access[3] < hi for lo, hi in ranges)]
    expected = simulate(mine, 1024, 2, 32)
    assert expected["loads"] + expected["stores"] < len(oracle.accesses)  # newlib's accesses are left out
    for key in ("loads", "stores", "load_misses", "store_misses"):
        assert got[key] == expected[key], (key, got, expected)
