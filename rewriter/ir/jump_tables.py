"""Where the Thumb-2 table branches (TBB, TBH) of a procedure go."""

from __future__ import annotations

from .model import Binary


def table_branch_targets(binary: Binary, insns: list) -> set[int]:
    """Case addresses of TBB/TBH jump tables (the byte/halfword table follows the instruction).

    The table has as many entries as the bounds check before it allows where that is known
    (``Binary.table_sizes``); else it ends where the first case begins (cases follow the
    table), so entries are read until the reading position reaches the lowest target seen.
    """
    targets: set[int] = set()
    for ins in insns:
        if ins.name not in ("tbb", "tbh") or not ins.accesses or ins.accesses[0].base != 15:
            continue
        base = ins.address + 4
        size = 1 if ins.name == "tbb" else 2
        lowest = base + 2 * (0xFF if size == 1 else 0xFFFF)
        pos = base
        end = base + size * binary.table_sizes.get(ins.address, 0x10000)
        while pos + size <= min(lowest, end) and len(targets) < 100000:
            entry = int.from_bytes(binary.read(pos, size), "little")
            target = base + 2 * entry
            if target < pos + size:
                break
            targets.add(target)
            lowest = min(lowest, target)
            pos += size
    return targets
