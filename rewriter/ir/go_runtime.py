"""Recognise a program built by Go's toolchain, which Anvil does not rewrite (decision 0060).

Go's runtime reads the code addresses it meets and looks each one up in the program's own
PC tables (``.gopclntab``): the return addresses on every goroutine stack, to scan them
for the garbage collector and to copy them when a stack grows; the PC of a fault, which
its signal handler turns into a panic (nil dereferences are caught that way, and
``fmt`` recovers from them); the PC a preemption signal interrupts. Relocated code gives
addresses no table names, and the runtime stops with ``fatal error: unknown pc`` or
crashes, so a rewritten Go program would not behave as the original: it is refused with
one line instead.

A Go executable is known by sections its linker names (``.gopclntab``, ``.go.buildinfo``,
``.note.go.buildid``) or, with the section table gone, by the build information's magic
(``\\xff Go buildinf:``, 16-aligned in the data since Go 1.13), which also names the version.
"""

from __future__ import annotations

import re

from elftools.elf.elffile import ELFFile

_SECTIONS = (".gopclntab", ".go.buildinfo", ".note.go.buildid")
_MAGIC = b"\xff Go buildinf:"
_VERSION = re.compile(rb"go1\.\d+(?:\.\d+)?")


def go_version(data: bytes, elf: ELFFile) -> str | None:
    """The Go version (``"go1.19.8"``, or ``"version unknown"``) if ``data`` (the ELF file
    ``elf``) was built by Go's toolchain, else None."""
    start = data.find(_MAGIC)
    while start != -1 and start % 16:
        start = data.find(_MAGIC, start + 1)
    named = any(elf.get_section_by_name(name) is not None for name in _SECTIONS)
    if start == -1 and not named:
        return None
    # The version follows the magic inline (Go 1.18 on) or behind a pointer: look near it.
    version = _VERSION.search(data, start, start + 64) if start != -1 else None
    return version.group().decode() if version else "version unknown"


def refusal(path: str, version: str) -> str:
    """The one-line error for the Go program at ``path``."""
    return (f"{path}: a Go program ({version}): Go's runtime looks up every return address and "
            f"fault PC it sees in its own PC tables (.gopclntab), which relocated code breaks; "
            f"not supported")
