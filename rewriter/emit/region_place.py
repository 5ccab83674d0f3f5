"""Where a Linux program's region (instrumented code, analysis library and data) goes.

The loader stub maps the region at the load bias plus a fixed offset (decision 0001):
the copies reach the original code and data by PC-relative constants, so the offset is
chosen when the program is rewritten, not when it runs. 0x80000000 puts the region where
nothing of a program run under qemu-arm is: 0x80000000 for a fixed-address program,
0xc0000000 for a PIE (qemu-arm loads it at 0x40000000).

A program may claim addresses of its own, though: CLISP reserves 0xc0000000-0xe0000000
(``mmap`` with MAP_FIXED, PROT_NONE) before it builds its heap, so that no object of its
lands where its pointers' tag bits are; SBCL maps its spaces at fixed addresses. A
MAP_FIXED mapping replaces whatever was there, the region's code included, and the
program crashes at the next instrumented instruction (decision 0077). So the offset is
the first of a few candidates whose window keeps clear of every address the program asks
``mmap`` for with a constant: the calls to ``mmap``/``mmap64`` through the PLT and the
``mmap2`` system calls in the executable whose address argument (r0) is a known nonzero
constant (moved there just before), for the length in r1 when that is known too.
"""

from __future__ import annotations

import operator

from ..errors import AnvilError
from ..ir.constants import effect_on
from ..ir.model import Binary, Instruction

#: The offsets tried, in order: the usual one first (so that programs claiming nothing
#: are laid out as before), then others in the upper half of the address space.
CANDIDATES = (0x80000000, 0xA0000000, 0x60000000, 0x90000000, 0x70000000, 0xB0000000, 0xD0000000, 0xE0000000)
#: The room kept clear for the region when it is chosen (its size is known only once the
#: code is emitted; ``check_clear`` then checks the real extent).
WINDOW = 0x10000000
#: Where qemu-arm loads a PIE (its load bias): the region of a PIE lies at this plus the offset.
QEMU_PIE_BIAS = 0x40000000
#: The highest address a 32-bit Arm program can map under qemu-arm (the vectors page is above).
ADDRESS_LIMIT = 0xFFFF0000
#: The library functions that map memory at an address the caller may ask for.
MMAP_FUNCTIONS = frozenset(("mmap", "mmap64", "__mmap64"))
MMAP2_SYSCALL = 192
#: How far back from a call the arguments' moves are looked for.
LOOK_BACK = 12
#: Above 3 GiB: a 3G/1G Arm Linux kernel's own space, where a program has nothing mapped.
#: AddressSanitizer's run time finds the top of the address space from what is mapped
#: when it starts (sanitizer_common's GetKernelAreaSize: a writable mapping up there means
#: a 4 GiB user space), and with the region there laid its shadow over the libraries
#: qemu-arm maps below 0x40000000 ("Shadow memory range interleaves with an existing
#: memory mapping", decision 0094). Its programs keep the region below.
KERNEL_SPACE = (0xC0000000, 1 << 32)
#: What names AddressSanitizer's run time in a program: the function its constructors call
#: (imported from libasan.so, or defined with -static-libasan) and the variable it reads.
ASAN_MARKS = (b"\0__asan_init\0", b"\0ASAN_OPTIONS\0")


def load_bias(binary: Binary) -> int:
    """The load bias the region's offset is added to when the program runs under qemu-arm."""
    return QEMU_PIE_BIAS if binary.is_pie else 0


_IS_SYSCALL = operator.attrgetter("is_syscall")
_BRANCH_TARGET = operator.attrgetter("branch_target")


def claimed_ranges(binary: Binary) -> list[tuple[int, int]]:
    """The [start, end) address ranges the program's own code asks ``mmap`` for: each call
    (through the PLT) or ``mmap2`` system call whose address argument is a nonzero constant;
    a length not known is taken as WINDOW. And KERNEL_SPACE for a program with
    AddressSanitizer's run time (ASAN_MARKS)."""
    mmap_entries = {entry for entry, name in binary.plt.items() if name in MMAP_FUNCTIONS}
    ranges = [KERNEL_SPACE] if any(mark in binary.data for mark in ASAN_MARKS) else []
    # The program's own image: qemu-arm reserves the whole span from its lowest segment to
    # its highest (a program linked at 0x80000000, or with data at 0xc0000000, covers the
    # usual offsets; its copy stopped at once: "cannot map the instrumented code").
    if binary.segments:
        bias = load_bias(binary)
        low = min(seg.vaddr for seg in binary.segments) & ~0xFFF
        high = max(seg.vaddr + seg.memsz for seg in binary.segments)
        ranges.append((bias + low, bias + ((high + 0xFFF) & ~0xFFF)))
    for proc in binary.procedures:
        # Most procedures make no system call and call no mmap: told in C loops, before
        # their instructions are sorted and walked.
        if not any(map(_IS_SYSCALL, proc.instructions())) \
                and mmap_entries.isdisjoint(map(_BRANCH_TARGET, proc.instructions())):
            continue
        code = sorted(proc.instructions(), key=lambda ins: ins.address)
        for at, ins in enumerate(code):
            if ins.is_syscall and ins.name == "svc":
                if _set_just_before(code, at, 7) != MMAP2_SYSCALL:
                    continue
            elif not (ins.branch_target in mmap_entries and (ins.is_call or ins.is_branch)):
                continue
            start = _set_just_before(code, at, 0)
            if start:
                length = _set_just_before(code, at, 1) or WINDOW
                ranges.append((start, min(start + length, 1 << 32)))
    return sorted(set(ranges))


def _set_just_before(code: list[Instruction], at: int, register: int) -> int | None:
    """The constant the instructions just before ``code[at]`` (in address order, back to a
    branch or call, at most LOOK_BACK of them) move into ``register``, if they do.

    Bolder than ``constants.constant_before``, which does not cross a block of a procedure
    with a table jump (CLISP's main, whose blocks are single instructions): here a wrong
    answer costs only a region placed at another candidate, never a wrong program.
    """
    for before in reversed(code[max(0, at - LOOK_BACK):at]):
        if before.is_branch or before.is_call or before.address + before.size != code[at].address:
            return None
        effect = effect_on(before, register)
        if effect.keeps:
            at -= 1
            continue
        if effect.source is None:
            return effect.constant
        register, at = effect.source, at - 1  # follow the copy
    return None


def _overlaps(start: int, end: int, ranges: list[tuple[int, int]]) -> bool:
    return any(start < hi and lo < end for lo, hi in ranges)


def region_offset(binary: Binary, claimed: list[tuple[int, int]]) -> int:
    """The first candidate offset whose window (at the program's load bias) is clear of
    ``claimed`` and below the address limit; AnvilError if none is."""
    bias = load_bias(binary)
    for offset in CANDIDATES:
        start = bias + offset
        if start + WINDOW <= ADDRESS_LIMIT and not _overlaps(start, start + WINDOW, claimed):
            return offset
    raise AnvilError("the program's image and the memory it maps at fixed addresses cover every place the "
                     "instrumentation's region could go: " + ", ".join(f"{lo:#x}-{hi:#x}" for lo, hi in claimed))


def check_clear(binary: Binary, offset: int, length: int, claimed: list[tuple[int, int]]) -> None:
    """Raise AnvilError if the region as emitted (``length`` bytes from ``offset``, its
    zero-filled part included) reaches an address the program claims or the limit."""
    start = load_bias(binary) + offset
    if start + length > ADDRESS_LIMIT or _overlaps(start, start + length, claimed):
        raise AnvilError(f"the instrumentation's region ({start:#x}-{start + length:#x}, {length >> 20} MiB) "
                         f"meets memory the program maps at fixed addresses, or the address space's end")
