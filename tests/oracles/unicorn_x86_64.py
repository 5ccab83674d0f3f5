"""Unicorn oracle for x86-64: run a freestanding static ELF and record every data access.

The program is libc-free and fixed-address (``-nostdlib -static -no-pie``), keeps its own
stack and thread block in its data (samples/x64_bare_accesses.c), so the addresses it
touches are the same natively and here. Its ``PT_LOAD`` segments are mapped at their
link addresses; execution starts at ``e_entry``.

System calls (the ``syscall`` instruction) are handled in a ``UC_HOOK_INSN`` hook:
``write`` to fd 1 or 2 collects the bytes, ``arch_prctl(ARCH_SET_FS)`` sets the fs base,
``exit``/``exit_group`` stop the emulation; any other is an error.

Each data access is recorded by a ``UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE`` hook as
``(pc, address, size, kind)``, ``kind`` ``'L'`` or ``'S'``, in execution order: Unicorn
(QEMU's code generator) calls the hook for every guest memory operation, one per element
of a repeated string instruction, loads of an instruction before its stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.elffile import ELFFile
from unicorn import UC_ARCH_X86, UC_HOOK_INSN, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MEM_WRITE, UC_MODE_64, Uc
from unicorn.x86_const import (
    UC_X86_INS_SYSCALL,
    UC_X86_REG_FS_BASE,
    UC_X86_REG_RAX,
    UC_X86_REG_RDI,
    UC_X86_REG_RDX,
    UC_X86_REG_RIP,
    UC_X86_REG_RSI,
)

_PAGE = 0x1000
_WRITE, _ARCH_PRCTL, _EXIT, _EXIT_GROUP = 1, 158, 60, 231
_ARCH_SET_FS = 0x1002

#: ``(pc, address, size, kind)``.
Access = tuple[int, int, int, str]


@dataclass
class Run:
    """What the program did under Unicorn."""

    accesses: list[Access] = field(default_factory=list)
    stdout: bytes = b""
    exit_status: int | None = None


def run_bare(program: Path, limit: int = 50_000_000) -> Run:
    """Run ``program`` to its exit (at most ``limit`` instructions) and record its accesses."""
    with open(program, "rb") as f:
        elf = ELFFile(f)
        entry = elf["e_entry"]
        segments = [(s["p_vaddr"], s["p_memsz"], s.data()) for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    for vaddr, memsz, data in segments:
        low = vaddr & ~(_PAGE - 1)
        high = (vaddr + memsz + _PAGE - 1) & ~(_PAGE - 1)
        uc.mem_map(low, high - low)
        uc.mem_write(vaddr, data)
    run = Run()
    record = run.accesses.append

    def on_access(uc: Uc, access: int, address: int, size: int, _value: int, _data: object) -> None:
        record((uc.reg_read(UC_X86_REG_RIP), address, size, "S" if access == UC_MEM_WRITE else "L"))

    def on_syscall(uc: Uc, _data: object) -> None:
        number, a, b, c = (uc.reg_read(r) for r in (UC_X86_REG_RAX, UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX))
        if number == _WRITE and a in (1, 2):
            run.stdout += bytes(uc.mem_read(b, c)) if a == 1 else b""
            uc.reg_write(UC_X86_REG_RAX, c)
        elif number == _ARCH_PRCTL and a == _ARCH_SET_FS:
            uc.reg_write(UC_X86_REG_FS_BASE, b)
            uc.reg_write(UC_X86_REG_RAX, 0)
        elif number in (_EXIT, _EXIT_GROUP):
            run.exit_status = a & 0xFF
            uc.emu_stop()
        else:
            raise RuntimeError(f"system call {number} is not emulated")

    uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, on_access)
    uc.hook_add(UC_HOOK_INSN, on_syscall, None, 1, 0, UC_X86_INS_SYSCALL)
    uc.emu_start(entry, 0, count=limit)
    return run
