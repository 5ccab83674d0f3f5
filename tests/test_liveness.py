"""Dead registers (ir/liveness.py, decision 0020): hooks leave them unparked.

Two independent checks:

- what each instruction reads and surely writes, as read from capstone's text, against
  capstone's own register accesses (its detail mode): every register capstone says is
  read must be counted as read, and a register counted as written must be one capstone
  says is written. Over every distinct instruction of Debian's Lua and of statically
  linked samples (glibc's hand-written assembly included), A32 and T32;
- the whole analysis against the programs themselves: with ``ANVIL_POISON_DEAD`` the
  rewriter overwrites every register it calls dead before every instruction (and sets
  N, Z, C and V together, which no instruction does, where it calls the flags dead), and the
  programs must still behave exactly as the originals do. A register called dead that
  is read later shows up as a wrong result or a crash (leaving out the rule that a
  conditional instruction writes nothing makes Lua crash, for one).
"""

from __future__ import annotations

from pathlib import Path

import capstone
import pytest

from rewriter.ir.elf_loader import load_binary
from rewriter.ir.liveness import _IMMEDIATE, ALL, DeadRegisters, _effects, _effects_of
from tests.support.run import assert_same_behaviour, instrument, place, run_prog
from tests.support.samples import LUA_BENCH, build, build_lua

_CAPSTONE_NAMES = {f"r{i}": i for i in range(13)} | {"sb": 9, "sl": 10, "fp": 11, "ip": 12, "sp": 13, "lr": 14,
                                                     "pc": 15}


def _capstone_masks(md: capstone.Cs, raw: bytes, address: int) -> tuple[int, int]:
    """(read, written) core registers of one instruction by capstone's detail mode, as masks."""
    insn = next(md.disasm(raw, address))
    read, written = insn.regs_access()

    def mask(regs: list[int]) -> int:
        out = 0
        for reg in regs:
            number = _CAPSTONE_NAMES.get(insn.reg_name(reg))
            if number is not None:
                out |= 1 << number
        return out & ALL

    return mask(read), mask(written)


def _binaries() -> list[Path]:
    return [build_lua(), build("calls", "O2-arm-static"), build("sort", "Os-thumb-static")]


def test_register_effects_agree_with_capstone() -> None:
    modes = {}
    for thumb in (False, True):
        md = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB if thumb else capstone.CS_MODE_ARM)
        md.detail = True
        modes[thumb] = md
    seen: set[tuple] = set()
    wrong: list[str] = []
    killing = 0
    for path in _binaries():
        for proc in load_binary(str(path)).procedures:
            for ins in proc.instructions():
                conditional = ins.cond != 14 or ins.in_it
                key = (ins.thumb, ins.raw, ins.mnemonic, ins.op_str, conditional)
                if key in seen:
                    continue
                seen.add(key)
                reads, kills = _effects_of(ins)  # (capstone's flags are not exact: the poisoning checks ours)
                reads, kills = reads & ALL, kills & ALL
                cs_reads, cs_writes = _capstone_masks(modes[ins.thumb], ins.raw, ins.address)
                killing += bool(kills)
                if cs_reads & ~reads or kills & ~cs_writes:
                    wrong.append(f"{ins}: reads {reads:#x} kills {kills:#x}, capstone {cs_reads:#x} {cs_writes:#x}")
    assert not wrong, "\n".join(wrong[:20])
    assert len(seen) > 50000
    assert killing > len(seen) // 3  # the analysis knows most writes: not everything is live


def test_most_instructions_have_dead_registers() -> None:
    """What the poisoning below checks is not empty: the analysis calls registers dead
    before most of Lua's memory accesses."""
    binary = load_binary(str(build_lua()))
    with_dead = accesses = 0
    for proc in binary.procedures:
        dead = DeadRegisters(proc)
        for ins in proc.instructions():
            if ins.accesses:
                accesses += 1
                with_dead += bool(dead.get(ins.address))
    assert with_dead > accesses // 2


def test_flags_dead_before_most_a32_accesses() -> None:
    """What the poisoning below checks of the flags is not empty: the analysis calls the
    flags dead before most memory accesses of A32 code (where an A32 filter test then sets
    and branches on flags of its own), and live before some."""
    binary = load_binary(str(build("calls", "O2-arm-static")))
    dead = accesses = 0
    for proc in binary.procedures:
        if proc.thumb:
            continue
        registers = DeadRegisters(proc)
        for ins in proc.instructions():
            if ins.accesses:
                accesses += 1
                dead += registers.flags_dead(ins.address)
    assert accesses // 2 < dead < accesses


POISONED = [("hash", "O2-thumb-dyn"), ("sort", "O2-thumb-dyn"), ("matrix", "O2-thumb-dyn"),
            ("addresses", "O2-thumb-dyn"), ("calls", "O2-thumb-dyn"), ("calls", "O2-arm-static"),
            ("sort", "Os-thumb-static"), ("hash", "O0-arm-dyn")]


@pytest.mark.parametrize("sample,variant", POISONED)
def test_poisoned_dead_registers_change_nothing(sample: str, variant: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    binary = build(sample, variant)
    original = run_prog(place(binary, tmp_path, "orig"))
    monkeypatch.setenv("ANVIL_POISON_DEAD", "1")
    assert_same_behaviour(original, run_prog(instrument(binary, "inscount", tmp_path)))


def test_lua_runs_with_dead_registers_poisoned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lua = build_lua()
    script = str(LUA_BENCH.resolve())
    original = run_prog(place(lua, tmp_path, "orig"), [script])
    assert original.returncode == 0 and original.stdout
    monkeypatch.setenv("ANVIL_POISON_DEAD", "1")
    assert_same_behaviour(original, run_prog(instrument(lua, "cachesim", tmp_path), [script]))


def test_immediates_change_no_effects() -> None:
    """A text is parsed with its immediates made #0 (decision 0116): what it reads and
    writes is the same as from the text itself, for every distinct text of the programs."""
    texts = {(ins.mnemonic, ins.op_str) for path in _binaries() for proc in load_binary(str(path)).procedures
             for ins in proc.instructions()}
    changed = [(m, o) for m, o in texts if _IMMEDIATE.sub("#0", o) != o]
    assert len(changed) > 5000
    wrong = [f"{m} {o}" for m, o in changed if _effects(m, o) != _effects(m, _IMMEDIATE.sub("#0", o))]
    assert not wrong, wrong[:20]
