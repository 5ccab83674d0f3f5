"""Unicorn oracle for Cortex-M firmware: run an image and record its data accesses.

The image's loadable bytes go at their load addresses (as ``qemu-system-arm -kernel``
puts them), the core starts the way a Cortex-M does (SP from vector table word 0, PC
from word 1) and ARM semihosting calls (``bkpt #0xab``, an interrupt with number 7 in
unicorn) are served here the way QEMU 7.2 serves them, so the program takes the same
path through newlib's start-up and exit code as under ``qemu-system-arm``:

* ``:tt`` opens the console (reads: empty; writes: collected as the output); it is
  not a terminal (SYS_ISTTY 0, errno ENOTTY), as QEMU says when its stdout is a pipe;
* ``:semihosting-features`` holds ``SHFB`` and the feature byte 0x03 (SYS_EXIT_EXTENDED
  and separate stdout/stderr), as QEMU 7.2 reports;
* SYS_EXIT_EXTENDED / SYS_EXIT stop the run with the program's status;
* SYS_HEAPINFO (newlib's rdimon-crt0 asks it for its stack) gets QEMU's answer for an
  image that loads nothing into the MPS2 boards' 16 MiB PSRAM, QEMU's largest RAM: all
  of it is both heap and stack, the stack starting at its top (other images are refused);
* SYS_GET_CMDLINE (rdimon-crt0's argv) gets the image's path as given, as QEMU's
  ``-kernel`` makes it the command line when no ``-append`` or ``arg=`` is given.

Every data access is recorded (``UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE``) as
``(kind, address, size)``, kind ``'L'`` or ``'S'``, with the same per-register rules
as :mod:`tests.oracles.unicorn_trace`. Interrupts are not modelled (there is no
SysTick in unicorn), so programs that wait for one cannot run here.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.elffile import ELFFile
from unicorn import (
    UC_ARCH_ARM,
    UC_HOOK_CODE,
    UC_HOOK_INTR,
    UC_HOOK_MEM_READ,
    UC_HOOK_MEM_WRITE,
    UC_MODE_MCLASS,
    UC_MODE_THUMB,
    Uc,
)
from unicorn.arm_const import (
    UC_ARM_REG_PC,
    UC_ARM_REG_R0,
    UC_ARM_REG_R1,
    UC_ARM_REG_SP,
    UC_CPU_ARM_CORTEX_M3,
    UC_CPU_ARM_CORTEX_M4,
)
from unicorn.unicorn_const import UC_MEM_WRITE

# Semihosting operations used by newlib's librdimon.
SYS_OPEN, SYS_CLOSE, SYS_WRITEC, SYS_WRITE0, SYS_WRITE, SYS_READ = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
SYS_ISTTY, SYS_SEEK, SYS_FLEN, SYS_ERRNO, SYS_EXIT, SYS_EXIT_EXTENDED = 0x09, 0x0A, 0x0C, 0x13, 0x18, 0x20
SYS_GET_CMDLINE, SYS_HEAPINFO = 0x15, 0x16
ADP_STOPPED_APPLICATION_EXIT = 0x20026
ENOTTY = 25
FEATURES = b"SHFB\x03"
# MPS2 code memory and SRAM, and the System Control Space page as plain memory: unicorn
# does not model it, and the start-up code's write of CPACR (FPU on) must not fault.
# Unicorn runs FP instructions without it.
# Also the block RAM and the PSRAM (where SYS_HEAPINFO puts the stack).
PSRAM = (0x21000000, 16 << 20)
MEMORIES = [(0x00000000, 4 << 20), (0x01000000, 16 << 10), (0x20000000, 4 << 20), PSRAM, (0xE000E000, 0x1000)]
CPUS = {"mps2-an385": UC_CPU_ARM_CORTEX_M3, "mps2-an386": UC_CPU_ARM_CORTEX_M4}


class FirmwareOracleError(RuntimeError):
    """The image did something this oracle does not model, or ran too long."""


@dataclass
class FirmwareRun:
    """What the image did: console output, exit status, data accesses in order, its
    semihosting calls in order as ``(address of the bkpt, operation number in r0)`` and,
    when run ``with_pc``, how often each instruction ran (``executed``: address -> count;
    check it against QEMU's: unicorn 2.1.4 sometimes skips the instruction after a
    conditional branch not taken, and then the accesses are not the program's)."""

    output: bytes = b""
    status: int | None = None
    accesses: list[tuple[str, int, int]] = field(default_factory=list)
    calls: list[tuple[int, int]] = field(default_factory=list)
    executed: Counter[int] = field(default_factory=Counter)


@dataclass
class _File:
    data: bytes
    position: int = 0
    console: bool = False


class _Semihosting:
    """The host side of the semihosting calls newlib makes."""

    def __init__(self, uc: Uc, run: FirmwareRun, loaded: list[tuple[int, int]], command_line: bytes) -> None:
        self.uc, self.run = uc, run
        self.files: dict[int, _File] = {}
        self.loaded = loaded  # (load address, memory size) of each PT_LOAD
        self.command_line = command_line

    def words(self, address: int, n: int) -> tuple[int, ...]:
        return struct.unpack(f"<{n}I", self.uc.mem_read(address, 4 * n))

    def call(self, op: int, arg: int) -> int | None:
        """Serve one call; its r0 result, or None when the program ended."""
        uc = self.uc
        if op == SYS_OPEN:
            name_at, _mode, length = self.words(arg, 3)
            name = bytes(uc.mem_read(name_at, length))
            handle = len(self.files) + 1
            if name == b":tt":
                self.files[handle] = _File(b"", console=True)
            elif name == b":semihosting-features":
                self.files[handle] = _File(FEATURES)
            else:
                return 0xFFFFFFFF
            return handle
        if op == SYS_CLOSE:
            self.files.pop(self.words(arg, 1)[0], None)
            return 0
        if op == SYS_WRITE:
            handle, buf, length = self.words(arg, 3)
            if handle not in self.files:
                return length
            if self.files[handle].console:
                self.run.output += bytes(uc.mem_read(buf, length))
            return 0
        if op == SYS_WRITE0:
            text = bytearray()
            while (byte := uc.mem_read(arg + len(text), 1)[0]) != 0:
                text.append(byte)
            self.run.output += bytes(text)
            return 0
        if op == SYS_WRITEC:
            self.run.output += bytes(uc.mem_read(arg, 1))
            return 0
        if op == SYS_READ:
            handle, buf, length = self.words(arg, 3)
            f = self.files.get(handle)
            if f is None:
                return length
            piece = f.data[f.position:f.position + length]
            uc.mem_write(buf, piece)
            f.position += len(piece)
            return length - len(piece)
        if op == SYS_SEEK:
            handle, position = self.words(arg, 2)
            self.files[handle].position = position
            return 0
        if op == SYS_FLEN:
            return len(self.files[self.words(arg, 1)[0]].data)
        if op == SYS_ISTTY:  # QEMU asks the host: the tests capture the console, so it is not a terminal
            return 0
        if op == SYS_ERRNO:
            return ENOTTY
        if op == SYS_EXIT_EXTENDED:
            reason, code = self.words(arg, 2)
            self.run.status = code & 0xFF if reason == ADP_STOPPED_APPLICATION_EXIT else 1
            return None
        if op == SYS_EXIT:
            self.run.status = 0 if arg == ADP_STOPPED_APPLICATION_EXIT else 1
            return None
        if op == SYS_HEAPINFO:
            base, size = PSRAM
            if any(at < base + size and base < at + length for at, length in self.loaded):
                raise FirmwareOracleError("SYS_HEAPINFO for an image that loads into the PSRAM is not modelled")
            block = self.words(arg, 1)[0]
            uc.mem_write(block, struct.pack("<4I", base, base + size, base + size, base))
            return 0
        if op == SYS_GET_CMDLINE:
            buffer, size = self.words(arg, 2)
            if len(self.command_line) + 1 > size:
                return 0xFFFFFFFF
            uc.mem_write(buffer, self.command_line + b"\0")
            uc.mem_write(arg + 4, struct.pack("<I", len(self.command_line)))
            return 0
        raise FirmwareOracleError(f"semihosting operation {op:#x} is not modelled")


def run_firmware_unicorn(image: str | Path, board: str, max_instructions: int = 50_000_000,
                         with_pc: bool = False, cwd: str | Path | None = None) -> FirmwareRun:
    """Run the Cortex-M ``image`` built for ``board`` to its semihosting exit (its command
    line: ``image`` as given, as QEMU's; ``cwd``: the directory a relative ``image`` is in,
    as QEMU run there would find it).

    ``with_pc``: each access also carries the address of its instruction, as
    ``(kind, address, size, pc)`` (slower: Python runs at every instruction).
    """
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    uc.ctl_set_cpu_model(CPUS[board])
    for start, size in MEMORIES:
        uc.mem_map(start, size)
    loaded = []
    with open(Path(cwd or ".") / image, "rb") as f:
        for seg in ELFFile(f).iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]:
                uc.mem_write(seg["p_paddr"], seg.data())
            if seg["p_type"] == "PT_LOAD":
                loaded.append((seg["p_paddr"], seg["p_memsz"]))
    sp, pc = struct.unpack("<II", uc.mem_read(0, 8))
    uc.reg_write(UC_ARM_REG_SP, sp)
    run = FirmwareRun()
    host = _Semihosting(uc, run, loaded, str(image).encode())
    stopped_at: list[int] = []

    current = [0]

    def on_access(_uc: Uc, access: int, address: int, size: int, _value: int, _data: object) -> None:
        run.accesses.append(("S" if access == UC_MEM_WRITE else "L", address, size, *current[:with_pc]))

    def on_code(_uc: Uc, address: int, _size: int, _data: object) -> None:
        current[0] = address
        run.executed[address] += 1

    if with_pc:
        uc.hook_add(UC_HOOK_CODE, on_code)
    def on_interrupt(_uc: Uc, number: int, _data: object) -> None:
        if number != 7:
            raise FirmwareOracleError(f"exception {number} at {uc.reg_read(UC_ARM_REG_PC):#x}")
        stopped_at.append(uc.reg_read(UC_ARM_REG_PC))
        uc.emu_stop()

    uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, on_access)
    uc.hook_add(UC_HOOK_INTR, on_interrupt)
    while True:
        stopped_at.clear()
        uc.emu_start(pc | 1, 0xFFFFFFFF, count=max_instructions)
        if not stopped_at:
            raise FirmwareOracleError(f"{image}: no semihosting exit within {max_instructions} instructions")
        op = uc.reg_read(UC_ARM_REG_R0)
        run.calls.append((stopped_at[0], op))
        result = host.call(op, uc.reg_read(UC_ARM_REG_R1))
        if result is None:
            return run
        uc.reg_write(UC_ARM_REG_R0, result)
        pc = stopped_at[0] + 2  # past the bkpt
