"""The decoder's two paths agree: facts read from capstone's text (fast path) equal the
facts from capstone's operand details, on every instruction of real binaries (static
glibc in Thumb-2 and A32, Debian's Lua)."""

from __future__ import annotations

import pytest

from rewriter.arch.arm.decode import _facts, _lite, decode_range, make_disassembler
from rewriter.ir.elf_loader import load_binary
from tests.support.samples import build, build_lua


@pytest.mark.parametrize("which", ["sort/O2-arm-static", "hash/O0-thumb-static", "lua"])
def test_fast_facts_match_capstone_details(which: str) -> None:
    path = build_lua() if which == "lua" else build(*which.split("/"))
    binary = load_binary(str(path))
    md = {True: make_disassembler(True), False: make_disassembler(False)}
    checked = 0
    for proc in binary.procedures:
        for ins in proc.instructions():
            if ins.detail is not None or not (ins.accesses or ins.branch_target is not None):
                continue
            ref = _facts(md[ins.thumb], next(md[ins.thumb].disasm(ins.raw, ins.address, 1)), ins.thumb)
            assert (ins.name, ins.accesses, ins.branch_target, ins.is_call) == \
                (ref.name, ref.accesses, ref.branch_target, ref.is_call), str(ins)
            checked += 1
    assert checked > 1000


@pytest.mark.parametrize("code, thumb, falls", [
    ("00b1", True, True),       # cbz r0: tests a register, so it may go on
    ("00b9", True, True),       # cbnz r0
    ("00d0", True, True),       # beq
    ("fee7", True, False),      # b
    ("7047", True, False),      # bx lr
    ("00bd", True, False),      # pop {pc}
    ("10bc", True, True),       # pop {r4}
    ("fff7feff", True, True),   # bl: the callee returns to the next instruction
    ("00df", True, True),       # svc 0
    ("00de", True, False),      # udf
    ("38bf7047", True, True),   # it cc; bxcc lr: the IT block makes the return conditional
    ("1eff2f01", False, True),  # bxeq lr
    ("1eff2fe1", False, False),  # bx lr
])
def test_falls_through(code: str, thumb: bool, falls: bool) -> None:
    """One answer, for discovery, flow and relocation alike, to "may the next address run
    after this one", against the architecture's meaning of each instruction (the last one
    decoded: an IT block is decoded with the instruction it makes conditional)."""
    instructions, _ = decode_range(make_disassembler(thumb), bytes.fromhex(code), 0x1000, thumb)
    assert instructions[-1].falls_through is falls


@pytest.mark.parametrize("code, returns", [
    ("00f08ee2", True),    # add pc, lr, #0: Go's return from a frameless function
    ("00f04ee2", True),    # sub pc, lr, #0
    ("04f08ee2", False),   # add pc, lr, #4: no return address of a call
    ("00f08be2", False),   # add pc, fp, #0: Go's jump to a computed address (gogo)
    ("0ef0a0e1", True),    # mov pc, lr
    ("10f09de4", True),    # ldr pc, [sp], #0x10: Go's return from a frame of 16 bytes
])
def test_a32_returns(code: str, returns: bool) -> None:
    """Which A32 writes of the PC return to the link register's address, by the
    architecture's meaning of each (a return is not a computed jump: a computed jump
    makes every instruction of its procedure a block of its own)."""
    (ins,), _ = decode_range(make_disassembler(False), bytes.fromhex(code), 0x1000, False)
    assert (ins.is_return, ins.is_indirect) == (returns, not returns)


M_PROFILE_REGISTERS = ["psp", "msp", "primask", "basepri", "basepri_max", "faultmask", "control"]


def test_m_profile_system_registers(tmp_path) -> None:
    """MRS and MSR of ARMv7-M's own registers (every RTOS's context switch and critical
    section) decode in an M-profile image's code, with the sizes GNU as gives them
    (arm-none-eabi-as -mcpu=cortex-m4, the oracle), and name the register as written;
    A-profile code (a Linux program's) does not read them (decision 0085)."""
    import subprocess

    from elftools.elf.elffile import ELFFile

    lines = [f"mrs r{k}, {reg}\nmsr {reg}, r{k}\n" for k, reg in enumerate(M_PROFILE_REGISTERS)]
    source = tmp_path / "sys.s"
    source.write_text(".syntax unified\n.thumb\n" + "".join(lines) + "bx lr\n")
    obj = tmp_path / "sys.o"
    subprocess.run(["arm-none-eabi-as", "-mcpu=cortex-m4", str(source), "-o", str(obj)], check=True)
    with obj.open("rb") as f:
        code = ELFFile(f).get_section_by_name(".text").data()
    got, end = decode_range(make_disassembler(True), code, 0x1000, True, m_profile=True)
    assert end == 0x1000 + len(code)
    expected = [(f"r{k}, {reg}", f"{reg}, r{k}") for k, reg in enumerate(M_PROFILE_REGISTERS)]
    assert [(i.mnemonic, i.op_str) for i in got[:-1]] == \
        [pair for ops in expected for pair in (("mrs", ops[0]), ("msr", ops[1]))]
    assert all(i.size == 4 for i in got[:-1]) and got[-1].mnemonic == "bx"
    linux, stop = decode_range(make_disassembler(True), code, 0x1000, True)
    assert stop == 0x1000 and not linux


@pytest.mark.parametrize("which", ["sort/O2-arm-static", "hash/O0-thumb-static", "lua"])
def test_text_without_details_is_the_same(which: str) -> None:
    """The text pass reads capstone's text with details off (decode._lite, decision 0116):
    the same instructions, mnemonics and operands as with them on, over every executable
    byte of real programs in both instruction sets (from every halfword, IT blocks and
    data read as code included)."""
    path = build_lua() if which == "lua" else build(*which.split("/"))
    binary = load_binary(str(path))
    compared = 0
    for thumb in (True, False):
        md = make_disassembler(thumb)
        lite = _lite(md)
        assert lite is not md and not lite.detail and lite.mode == md.mode
        for segment in binary.segments:
            if not segment.executable:
                continue
            for start in range(segment.vaddr, segment.vaddr + segment.memsz, 256):
                code = binary.read(start, 256)
                with_details = list(md.disasm_lite(code, start))
                assert list(lite.disasm_lite(code, start)) == with_details
                compared += len(with_details)
    assert compared > 10000
