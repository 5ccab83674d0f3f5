"""Source file:line of instructions from DWARF line tables, when the binary has them."""

from __future__ import annotations

import os

from elftools.elf.elffile import ELFFile


def line_table(path: str) -> dict[int, str]:
    """Map instruction address -> 'file:line' (empty if there is no DWARF)."""
    table: dict[int, str] = {}
    with open(path, "rb") as f:
        elf = ELFFile(f)
        if not elf.has_dwarf_info():
            return table
        dwarf = elf.get_dwarf_info()
        for cu in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(cu)
            if program is None:
                continue
            files = program["file_entry"]
            version = program["version"]
            for entry in program.get_entries():
                state = entry.state
                if state is None or state.end_sequence:
                    continue
                index = state.file if version >= 5 else state.file - 1
                if 0 <= index < len(files):
                    name = files[index].name
                    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
                    table.setdefault(state.address, f"{os.path.basename(name)}:{state.line}")
    return table
