"""What the x86-64 tests read of traces: memtrace's results, Valgrind Lackey's log, where a
PIE was loaded, and Unicorn's vector accesses joined back into one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import capstone
from elftools.elf.elffile import ELFFile

#: Lackey's options for a trace of every access: no IR optimisation, so that VEX drops no
#: load as dead (a ``pop`` into a register the next instruction overwrites) and the trace
#: has every access the program makes, as QEMU and Unicorn see them.
LACKEY = ["valgrind", "--tool=lackey", "--trace-mem=yes", "--vex-iropt-level=0"]


def trace(path: Path) -> list[tuple[int, int, int, str]]:
    rows = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            pc, ea, size, kind = line.split()
            rows.append((int(pc, 16), int(ea, 16), int(size), kind))
    return rows


def memtrace(program: Path, tmp_path: Path) -> Path:
    """``program`` traced, as ``b/<name>`` (its results file beside it, where it runs)."""
    copied = tmp_path / "b" / program.name
    copied.parent.mkdir(exist_ok=True)
    done = subprocess.run(["anvil", "instrument", "--tool", "memtrace", str(program), "-o", str(copied)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return copied


def vector_widths(program: Path) -> dict[int, int]:
    """Instruction address -> the width of its memory operand, where it is over 8 bytes."""
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    widths = {}
    with open(program, "rb") as f:
        text = ELFFile(f).get_section_by_name(".text")
        for ins in md.disasm(text.data(), text["sh_addr"]):
            for op in ins.operands:
                if op.type == capstone.x86.X86_OP_MEM and op.size > 8:
                    widths[ins.address] = op.size
    return widths


def joined(accesses: list, widths: dict[int, int]) -> list:
    """Unicorn's 8-byte pieces of a wider access joined into one access."""
    out: list = []
    k = 0
    while k < len(accesses):
        pc, address, size, kind = accesses[k]
        width = widths.get(pc)
        pieces = accesses[k:k + width // size] if width and size < width else []
        if pieces and all(p[0] == pc and p[3] == kind and p[1] == address + n * size for n, p in enumerate(pieces)):
            out.append((pc, address, width, kind))
            k += len(pieces)
        else:
            out.append(accesses[k])
            k += 1
    return out


def lackey(log: Path, low: int, high: int) -> list[tuple[int, int, str]]:
    """Lackey's accesses by instructions in [low, high): (offset, size, kind); a modify is
    a load then a store."""
    rows, pc = [], 0
    for line in log.read_text().splitlines():
        if line.startswith("I"):
            pc = int(line.split()[1].split(",")[0], 16)
        elif line[:2] in (" L", " S", " M") and low <= pc < high:
            size = int(line.split(",")[1])
            for kind in ("L", "S") if line[1] == "M" else (line[1],):
                rows.append((pc - low, size, kind))
    return rows


def load_address(command: list[str], program: Path) -> int:
    """Where ``command`` (ending with ``program``) loads the PIE ``program``: its program
    headers' address, as the dynamic linker shows the auxiliary vector (the last one shown:
    Valgrind's and setarch's own come first), less their offset in the file."""
    shown = subprocess.run(command, capture_output=True, text=True, timeout=300,
                           env={"PATH": "/usr/bin:/bin", "LD_SHOW_AUXV": "1"})
    phdr = [int(line.split()[1], 16) for line in shown.stdout.splitlines() if line.startswith("AT_PHDR:")][-1]
    with open(program, "rb") as f:
        return phdr - ELFFile(f)["e_phoff"]


def lackey_accesses(program: Path, log: Path) -> list[tuple[int, int, str]]:
    """Lackey's trace (``LACKEY``, its log at ``log``) of ``program``'s run: the accesses of
    the program's own code, as ``lackey`` gives them, from where Valgrind loads it."""
    subprocess.run([*LACKEY, f"--log-file={log}", str(program)], capture_output=True, check=True, timeout=300)
    with open(program, "rb") as f:
        span = max(s["p_vaddr"] + s["p_memsz"] for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD")
    base = load_address(["valgrind", "--tool=none", str(program)], program)
    return lackey(log, base, base + span)
