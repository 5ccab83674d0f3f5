"""Unicorn oracle: run a freestanding 32-bit ARM ELF and record its data accesses.

The program must be static and libc-free (``-nostdlib -ffreestanding -static``,
entry ``_start``); see :mod:`tests.oracles.freestanding`.  Its ``PT_LOAD``
segments are mapped at their link addresses, a stack is mapped below
:data:`STACK_TOP`, and execution starts at ``e_entry`` in Thumb state when bit 0
of the entry is set (ARM state otherwise).  The CPU model is Cortex-A15
(ARMv7-A with Thumb-2, VFPv4/NEON, hardware divide); VFP/NEON access is
enabled through CPACR and FPEXC before the first instruction.

System calls (``svc #0``, number in r7) are handled in a ``UC_HOOK_INTR`` hook:

* r7 = 1 (exit) or 248 (exit_group): emulation stops, the status is r0 & 0xff
  (as a Linux parent would see it);
* r7 = 4 (write): the bytes go to :attr:`UnicornResult.stdout` (fd 1) or
  :attr:`UnicornResult.stderr` (fd 2); r0 = count (or -EBADF for other fds);
* anything else: r0 = -ENOSYS and the number is noted in
  :attr:`UnicornResult.unknown_syscalls`.

Every data access is recorded by a ``UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE``
hook as ``(kind, address, size)`` with kind ``'L'`` or ``'S'``, in execution
order.  Instruction fetches are not data accesses and are not recorded.

What unicorn 2.1 reports (checked by ``tests/test_oracles.py``; qemu-arm 7.2's
``-d op`` shows the same number and width of guest memory ops per instruction):

* LDR/STR/LDRB/LDRH/STRH...: one access of the access size (1, 2 or 4);
* LDM/STM/PUSH/POP (A32 and T32): one 4-byte access per register, in
  ascending address order (also for decrementing forms such as PUSH/STMDB);
* LDRD/STRD: two 4-byte accesses, lower address first (not one 8-byte access);
* VLDR/VSTR of a D register: one 8-byte access; of an S register: 4 bytes;
* VLDM/VSTM/VPUSH/VPOP: one access per register (8 bytes per D register,
  4 per S register), ascending addresses; VLD1.32 {d0, d1}: two 8-byte accesses;
* LDREX: one load; a successful STREX: a load then a store of the same word (QEMU's
  compare-and-swap implementation);
* a predicated instruction whose condition fails makes no access;
* ``svc`` makes no data access; instruction fetches are not recorded.

That is the "one access per register for multi-register transfers" rule
DESIGN.md assumes, so counts can be compared 1:1 with the instrumentation.

Instruction counting (``count_instructions=True``) uses ``UC_HOOK_CODE`` and
calls Python once per instruction, which makes the run several times slower.
:attr:`UnicornResult.pcs` then holds per-PC counts that match
``qemu_trace.exe_pcs`` exactly (the tests check this): the final ``svc``,
``IT`` instructions and predicated instructions whose condition fails are all
counted.  Unicorn itself does not call the code hook for an IT-predicated
Thumb instruction whose condition fails (it does for A32 conditional
instructions), so those are added from the IT instruction's mask.

Unicorn 2.1 bug worked around here: with a memory hook installed, a load or
store inside a Thumb IT block leaves a stale IT state in CPSR, and the next
translation block is then decoded as if inside an IT block: branches go
astray, a compiled bubble sort loops forever.  The memory hook clears the
stale bits (see :func:`run_freestanding`); this costs a register read per
access and is only done for binaries containing something that looks like an
IT instruction.
"""

from __future__ import annotations

import ctypes
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.constants import P_FLAGS
from elftools.elf.elffile import ELFFile
from unicorn import (
    UC_ARCH_ARM,
    UC_HOOK_CODE,
    UC_HOOK_INTR,
    UC_HOOK_MEM_READ,
    UC_HOOK_MEM_WRITE,
    UC_MEM_WRITE,
    UC_MODE_ARM,
    UC_MODE_THUMB,
    UC_PROT_EXEC,
    UC_PROT_READ,
    UC_PROT_WRITE,
    Uc,
    UcError,
)
from unicorn.arm_const import (
    UC_ARM_REG_C1_C0_2,
    UC_ARM_REG_CPSR,
    UC_ARM_REG_FPEXC,
    UC_ARM_REG_PC,
    UC_ARM_REG_R0,
    UC_ARM_REG_R1,
    UC_ARM_REG_R2,
    UC_ARM_REG_R7,
    UC_ARM_REG_SP,
    UC_CPU_ARM_CORTEX_A15,
)

__all__ = [
    "INITIAL_SP",
    "STACK_SIZE",
    "STACK_TOP",
    "Access",
    "UnicornError",
    "UnicornResult",
    "run_freestanding",
]

#: ``(kind, address, size)``: kind is ``'L'`` (load) or ``'S'`` (store).
Access = tuple[str, int, int]

#: One past the highest stack address.
STACK_TOP = 0x7F000000
#: Size of the mapped stack.
STACK_SIZE = 1 << 20
#: ``sp`` at ``_start`` (argc, argv, envp and auxv terminators are stored from here up).
INITIAL_SP = STACK_TOP - 0x100

_PAGE = 0x1000
_EXCP_SWI = 2  # QEMU's exception number for SVC, passed to UC_HOOK_INTR.
_SYS_EXIT = 1
_SYS_WRITE = 4
_SYS_EXIT_GROUP = 248
_ENOSYS = 38
_EBADF = 9
_CPSR_IT_MASK = 0x0600FC00  # CPSR.IT[1:0] (bits 26:25) and IT[7:2] (bits 15:10)


class UnicornError(RuntimeError):
    """Emulation failed (fault, undefined instruction, timeout, no exit)."""


@dataclass
class UnicornResult:
    """Outcome of :func:`run_freestanding`."""

    #: Data accesses in order; empty if ``record_accesses=False``.
    accesses: list[Access]
    #: Exit status (``r0 & 0xff`` at exit), or None if the program never exited.
    exit_status: int | None
    #: Bytes written to fd 1.
    stdout: bytes
    #: Bytes written to fd 2.
    stderr: bytes
    #: Executed instructions (with ``count_instructions=True``), else None.
    instructions: int | None
    #: Executed PC -> count (with ``count_instructions=True``), else None.
    pcs: Counter[int] | None = None
    #: Numbers of system calls the oracle does not implement, in call order.
    unknown_syscalls: list[int] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        """Return the number of loads (``'L'``) and stores (``'S'``)."""
        return Counter(kind for kind, _, _ in self.accesses)

    def bytes_moved(self) -> int:
        """Return the total number of bytes loaded and stored."""
        return sum(size for _, _, size in self.accesses)


def _segment_prot(p_flags: int) -> int:
    """Translate ELF segment flags to unicorn protection bits."""
    prot = 0
    if p_flags & P_FLAGS.PF_R:
        prot |= UC_PROT_READ
    if p_flags & P_FLAGS.PF_W:
        prot |= UC_PROT_WRITE
    if p_flags & P_FLAGS.PF_X:
        prot |= UC_PROT_EXEC
    return prot


_Load = tuple[int, int, bytes, int]  # (p_vaddr, p_memsz, file bytes, p_flags)


def _read_elf(path: Path) -> tuple[int, list[_Load]]:
    """Return ``(e_entry, PT_LOAD segments)`` of a static 32-bit ARM ELF."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        if elf.elfclass != 32 or elf["e_machine"] != "EM_ARM":
            raise UnicornError(f"{path}: not a 32-bit ARM ELF")
        if elf["e_type"] != "ET_EXEC":
            raise UnicornError(f"{path}: expected a static ET_EXEC, got {elf['e_type']}")
        if any(seg["p_type"] == "PT_INTERP" for seg in elf.iter_segments()):
            raise UnicornError(f"{path}: dynamically linked; only freestanding static ELFs run here")
        loads = [
            (seg["p_vaddr"], seg["p_memsz"], seg.data()[: seg["p_filesz"]], seg["p_flags"])
            for seg in elf.iter_segments()
            if seg["p_type"] == "PT_LOAD" and seg["p_memsz"] > 0
        ]
        entry = elf["e_entry"]
    if not loads:
        raise UnicornError(f"{path}: no PT_LOAD segments")
    return entry, loads


def _map_segments(uc: Uc, loads: list[_Load]) -> None:
    """Map and fill ``loads``; pages shared by two segments get the union of their permissions."""
    page_prot: dict[int, int] = {}
    for vaddr, memsz, _, flags in loads:
        for page in range(vaddr & ~(_PAGE - 1), vaddr + memsz, _PAGE):
            page_prot[page] = page_prot.get(page, 0) | _segment_prot(flags)
    # Map maximal runs of contiguous pages with identical permissions.
    pages = sorted(page_prot)
    start = prev = pages[0]
    for page in [*pages[1:], None]:
        if page is not None and page == prev + _PAGE and page_prot[page] == page_prot[start]:
            prev = page
            continue
        uc.mem_map(start, prev + _PAGE - start, page_prot[start])
        if page is not None:
            start = prev = page
    for vaddr, _, data, _ in loads:
        if data:
            uc.mem_write(vaddr, data)  # .bss stays zero: fresh mappings are zero-filled


def _enable_vfp(uc: Uc) -> None:
    """Grant full access to CP10/CP11 and set FPEXC.EN so VFP/NEON code runs."""
    cpacr = uc.reg_read(UC_ARM_REG_C1_C0_2)
    uc.reg_write(UC_ARM_REG_C1_C0_2, cpacr | (0xF << 20))
    uc.reg_write(UC_ARM_REG_FPEXC, 0x40000000)


def _it_blocks(loads: list[_Load]) -> dict[int, tuple[int, ...]]:
    """Find everything in executable segments that could be a Thumb ``IT`` instruction.

    Every halfword-aligned ``0xBFxy`` with ``y != 0`` is taken (a superset of
    the real IT instructions: literal pools or the second halfword of a 32-bit
    instruction may match too, but those addresses are never executed as a
    16-bit instruction, so the extra entries are harmless).  Maps the address
    to the addresses of the 1-4 instructions its block covers.
    """
    blocks: dict[int, tuple[int, ...]] = {}
    for vaddr, _, data, flags in loads:
        if not flags & P_FLAGS.PF_X:
            continue
        for off in range(vaddr & 1, len(data) - 1, 2):  # offsets of even addresses
            if data[off + 1] != 0xBF or data[off] & 0xF == 0:
                continue
            mask = data[off] & 0xF
            length = 4 - ((mask & -mask).bit_length() - 1)
            addrs = []
            pos = off + 2
            for _ in range(length):
                if pos + 1 >= len(data):
                    break
                addrs.append(vaddr + pos)
                first = data[pos] | data[pos + 1] << 8
                pos += 4 if first >> 11 in (0b11101, 0b11110, 0b11111) else 2
            blocks[vaddr + off] = tuple(addrs)
    return blocks


def _cpsr_accessors(uc: Uc) -> tuple[Callable[[], int], Callable[[int], None]]:
    """Return fast ``read_cpsr()`` / ``write_cpsr(value)`` functions for ``uc``.

    Calls the C library directly when the binding exposes it (about twice as
    fast as ``Uc.reg_read``, which matters in a per-access hook); otherwise
    falls back to the public API.
    """
    try:
        from unicorn.unicorn_py3.unicorn import uclib  # private; layout of unicorn 2.1
    except ImportError:  # pragma: no cover - other binding layouts
        uclib = None
    handle = getattr(uc, "_uch", None)
    if uclib is None or handle is None or not hasattr(uclib, "uc_reg_read"):  # pragma: no cover
        return (lambda: uc.reg_read(UC_ARM_REG_CPSR)), (lambda v: uc.reg_write(UC_ARM_REG_CPSR, v))
    cell = ctypes.c_uint64()
    ref = ctypes.byref(cell)
    c_read = uclib.uc_reg_read
    c_write = uclib.uc_reg_write

    def read_cpsr() -> int:
        c_read(handle, UC_ARM_REG_CPSR, ref)
        return cell.value

    def write_cpsr(value: int) -> None:
        cell.value = value
        c_write(handle, UC_ARM_REG_CPSR, ref)

    return read_cpsr, write_cpsr


def run_freestanding(
    binary: str | os.PathLike[str],
    *,
    record_accesses: bool = True,
    count_instructions: bool = False,
    timeout_s: float = 60.0,
    max_instructions: int = 0,
) -> UnicornResult:
    """Run the freestanding ARM ELF ``binary`` under unicorn until it exits.

    ``record_accesses`` installs the memory hook (on by default);
    ``count_instructions`` installs a per-instruction code hook (slow) and
    fills :attr:`UnicornResult.instructions` and :attr:`UnicornResult.pcs`.
    ``timeout_s`` bounds wall time and ``max_instructions`` (0 = unlimited)
    bounds the number of hooked instructions; hitting either, faulting, or
    running off without an exit raises :class:`UnicornError`.
    """
    path = Path(binary)
    entry, loads = _read_elf(path)
    it_blocks = _it_blocks(loads)
    # The start address keeps bit 0: unicorn enters Thumb state from it.
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB if entry & 1 else UC_MODE_ARM)
    uc.ctl_set_cpu_model(UC_CPU_ARM_CORTEX_A15)
    _map_segments(uc, loads)
    _enable_vfp(uc)

    # Linux-like initial stack: argc = 0, argv = {NULL}, envp = {NULL}, auxv = {AT_NULL}.
    uc.mem_map(STACK_TOP - STACK_SIZE, STACK_SIZE, UC_PROT_READ | UC_PROT_WRITE)
    uc.mem_write(INITIAL_SP, bytes(5 * 4))
    uc.reg_write(UC_ARM_REG_SP, INITIAL_SP)

    accesses: list[Access] = []
    out: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
    status: list[int] = []
    unknown: list[int] = []
    fault: list[str] = []

    def on_intr(uc: Uc, intno: int, _user: object) -> None:
        if intno != _EXCP_SWI:
            pc = uc.reg_read(UC_ARM_REG_PC)
            fault.append(f"unexpected exception {intno} near pc={pc:#x}")
            uc.emu_stop()
            return
        nr = uc.reg_read(UC_ARM_REG_R7)
        if nr in (_SYS_EXIT, _SYS_EXIT_GROUP):
            status.append(uc.reg_read(UC_ARM_REG_R0) & 0xFF)
            uc.emu_stop()
        elif nr == _SYS_WRITE:
            fd = uc.reg_read(UC_ARM_REG_R0)
            buf = uc.reg_read(UC_ARM_REG_R1)
            length = uc.reg_read(UC_ARM_REG_R2)
            if fd in out:
                out[fd] += uc.mem_read(buf, length)
                uc.reg_write(UC_ARM_REG_R0, length)
            else:
                uc.reg_write(UC_ARM_REG_R0, (-_EBADF) & 0xFFFFFFFF)
        else:
            unknown.append(nr)
            uc.reg_write(UC_ARM_REG_R0, (-_ENOSYS) & 0xFFFFFFFF)

    uc.hook_add(UC_HOOK_INTR, on_intr)

    if record_accesses:
        append = accesses.append
        if it_blocks:
            # Unicorn 2.1 bug workaround: before a hooked memory access inside an
            # IT block it stores that instruction's IT state into CPSR, and nothing
            # clears it when the block ends inside the same translation block, so
            # the next block would be translated as if still inside an IT block
            # (wrong branches, endless loops).  Within a translation block the real
            # CPSR.IT is always 0 (QEMU clears it at block start and re-stores it
            # only on exits), so clearing it here is exact.
            read_cpsr, write_cpsr = _cpsr_accessors(uc)

            def on_mem(_uc: Uc, access: int, address: int, size: int, _value: int, _user: object) -> None:
                append(("S" if access == UC_MEM_WRITE else "L", address, size))
                cpsr = read_cpsr()
                if cpsr & _CPSR_IT_MASK:
                    write_cpsr(cpsr & ~_CPSR_IT_MASK)
        else:

            def on_mem(_uc: Uc, access: int, address: int, size: int, _value: int, _user: object) -> None:
                append(("S" if access == UC_MEM_WRITE else "L", address, size))

        uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, on_mem)

    pcs: Counter[int] = Counter()
    if count_instructions:
        # Unicorn does not call the code hook for an IT-predicated instruction
        # whose condition fails (it does for failing conditional A32 ones).
        # Count those the way qemu -d exec does: remember the block after an IT
        # and, at the next hooked instruction, add the block members skipped.
        pending: list[int] = []

        def on_code(_uc: Uc, address: int, size: int, _user: object) -> None:
            if pending:
                # Block members before `address` (all of them if it is not one) were skipped.
                done = pending.index(address) + 1 if address in pending else len(pending)
                for skipped in pending[: done - 1] if address in pending else pending:
                    pcs[skipped] += 1
                del pending[:done]
            pcs[address] += 1
            if size == 2 and address in it_blocks:
                pending[:] = it_blocks[address]

        uc.hook_add(UC_HOOK_CODE, on_code)

    try:
        uc.emu_start(entry, 0xFFFFFFFF, timeout=int(timeout_s * 1_000_000), count=max_instructions)
    except UcError as exc:
        pc = uc.reg_read(UC_ARM_REG_PC)
        raise UnicornError(f"{path}: {exc} at pc={pc:#x}") from exc
    if fault:
        raise UnicornError(f"{path}: {fault[0]}")
    if not status:
        pc = uc.reg_read(UC_ARM_REG_PC)
        raise UnicornError(f"{path}: stopped without exit (timeout or instruction limit) at pc={pc:#x}")
    return UnicornResult(
        accesses=accesses,
        exit_status=status[0],
        stdout=bytes(out[1]),
        stderr=bytes(out[2]),
        instructions=sum(pcs.values()) if count_instructions else None,
        pcs=pcs if count_instructions else None,
        unknown_syscalls=unknown,
    )
