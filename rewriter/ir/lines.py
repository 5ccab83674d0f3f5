"""Source file:line of instructions from DWARF line tables, when the binary has them."""

from __future__ import annotations

import bisect
import os

from elftools.elf.elffile import ELFFile

from ..errors import one_line


class LineTable:
    """The DWARF line rows of an executable as address ranges: ``at(address)`` is the
    'file:line' of the row whose range holds the address (a row covers the addresses from
    its own up to the next row of its sequence), or None."""

    def __init__(self, ranges: list[tuple[int, int, str]]) -> None:
        self.problem: str | None = None  # why the file's DWARF gave no lines, if it has some
        self._ranges = sorted(ranges)
        self._starts = [start for start, _, _ in self._ranges]

    def at(self, address: int) -> str | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        _, end, where = self._ranges[i]
        return where if address < end else None


def read_line_table(path: str) -> LineTable:
    """The line table of the ELF file at ``path`` (empty without DWARF, or with DWARF that
    cannot be read: source lines only annotate, so a corrupt ``.debug_line`` does not stop
    anything; ``LineTable.problem`` says why there are none)."""
    try:
        return LineTable(_line_ranges(path))
    except Exception as e:  # pyelftools' DWARF reader fails in many ways on bad bytes
        table = LineTable([])
        table.problem = f"unreadable DWARF line table ({type(e).__name__}: {one_line(str(e))})"
        return table


def _line_ranges(path: str) -> list[tuple[int, int, str]]:
    ranges: list[tuple[int, int, str]] = []
    with open(path, "rb") as f:
        elf = ELFFile(f)
        if not elf.has_dwarf_info():
            return ranges
        dwarf = elf.get_dwarf_info()
        for cu in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(cu)
            if program is None:
                continue
            files = program["file_entry"]
            version = program["version"]
            previous: tuple[int, str] | None = None  # the open row of the sequence
            for entry in program.get_entries():
                state = entry.state
                if state is None:
                    continue
                if previous is not None and state.address > previous[0]:
                    ranges.append((previous[0], state.address, previous[1]))
                if state.end_sequence:
                    previous = None
                    continue
                index = state.file if version >= 5 else state.file - 1
                where = None
                if 0 <= index < len(files):
                    name = files[index].name
                    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
                    where = f"{os.path.basename(name)}:{state.line}"
                previous = (state.address, where) if where is not None else None
    return ranges
