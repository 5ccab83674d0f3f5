"""Code that builds the flags of a ``clone`` system call that starts a thread (decision 0147).

A program that starts threads is instrumented for them (``Binary.threaded``: counters that
add atomically, calls into the analysis under a lock). Names tell most programs apart: a
dynamic one imports ``pthread_create`` or a library entry that starts threads, a static one
with its symbol table defines it. A stripped static program names nothing, and its C
library's thread start is its own code: glibc's ``create_thread`` stores the 64-bit
``clone_args.flags`` 0x3d0f00 (an immediate on x86-64, a literal pool's double word on ARM),
musl's ``pthread_create`` passes 0x7d0f00 to ``__clone``. Its ``clone`` alone does not
tell: ``system`` and ``posix_spawn`` bring it in with ``CLONE_VM | CLONE_VFORK`` for a
child that runs a command.

So the code is read for a value that only a thread's ``clone`` takes: what every C
library's thread start asks for (``CLONE_VM``, ``CLONE_FS``, ``CLONE_FILES``,
``CLONE_SIGHAND``, ``CLONE_THREAD``, ``CLONE_SETTLS``), none of the flags the kernel
refuses beside ``CLONE_THREAD`` (``CLONE_PIDFD``, new namespaces) or that a thread never
has (``CLONE_VFORK``), no exit signal, 32 bits, and not an address of the program's own
memory. (With the first three alone, a literal 0x1bb00 in glibc's static code passed.)
Such a value is an immediate, a pair of ``movw``/``movt`` (ARM) or a literal the code
loads.

An address of the program's memory may be one of the C libraries' own flags all the same:
a fixed-address ARM program at 0x10000 whose zero-filled data spans 4 MB holds 0x3d0f00
(such a program's threads crashed its copies). So the values the C libraries use are
taken wherever they lie; another value that is also an address is taken for one (a
pointer into a fixed-address program's code or data may have the flags' bits).
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Binary, Instruction, Procedure

CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND = 0x100, 0x200, 0x400, 0x800
CLONE_THREAD, CLONE_SETTLS = 0x10000, 0x80000
# What every C library's thread start asks for (glibc, musl, bionic, uClibc: POSIX threads
# share memory, files and signal handlers, and have their own thread pointer).
_A_THREAD = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SETTLS
# CSIGNAL (the exit signal: a thread has none), CLONE_PIDFD, CLONE_VFORK and the namespaces
# the kernel refuses with CLONE_THREAD (NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID,
# NEWNET).
_NEVER_A_THREAD = 0xFF | 0x1000 | 0x4000 | 0x20000 | 0x7E000000
# The flags of glibc's ``create_thread`` (also bionic's and uClibc-ng's thread start) and
# musl's ``pthread_create`` (with CLONE_DETACHED).
_C_LIBRARY_FLAGS = frozenset({0x3D0F00, 0x7D0F00})
_MOVES = {"mov", "movs", "movw", "movt", "movabs"}  # what sets a register or memory to an immediate
_PC = {4: 15, 8: 16}  # the program counter's register number in an Access, by address width


def starts_a_thread(flags: int) -> bool:
    """Whether ``flags`` are the flags of a ``clone`` that starts a thread."""
    return flags < 1 << 32 and flags & _A_THREAD == _A_THREAD and not flags & _NEVER_A_THREAD


def thread_flag_procedures(binary: Binary) -> set[int]:
    """The entries of ``binary``'s procedures whose code builds the flags of a ``clone``
    that starts a thread (module docstring)."""
    pc = _PC[binary.address_bytes]
    # Not an address of the program's own memory (a fixed-address program's code at
    # 0x400000 or 0x10000 has such bits), unless a C library's own flags.
    return {proc.address for proc in binary.procedures
            if any(starts_a_thread(value) and (value in _C_LIBRARY_FLAGS or not binary.in_memory(value))
                   for value in _values(binary, proc, pc))}


def _values(binary: Binary, proc: Procedure, pc: int) -> Iterable[int]:
    """The immediates ``proc`` moves and the literals it loads that may be clone flags
    (over 0xffff)."""
    halves: dict[str, int] = {}  # register -> the low half a mov or movw gave it
    for ins in proc.instructions():
        for access in ins.accesses:
            if access.base == pc and not access.is_store and access.size in (4, 8):
                yield int.from_bytes(binary.read(access.disp, access.size), "little")
        if ins.name not in _MOVES or "0x" not in ins.op_str:
            continue  # (grep's regular expressions `or` 0x90900 into their syntax bits)
        value = _immediate(ins)
        if value is None:
            continue
        if ins.name == "movt":  # the high half over what a mov or movw gave the register
            low = halves.get(ins.op_str.partition(",")[0])
            if low is not None:
                yield value << 16 | low
        elif value > 0xFFFF:
            yield value
        else:  # (musl: mov.w r2, #0xf00; movt r2, #0x7d)
            halves[ins.op_str.partition(",")[0]] = value


def _immediate(ins: Instruction) -> int | None:
    """The immediate that is ``ins``'s last operand (``#0x3d`` on ARM, ``0x3d0f00`` on
    x86-64), or None where that is no immediate."""
    text = ins.op_str.rpartition(",")[2].strip().removeprefix("#")
    if not text.startswith("0x"):
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None
