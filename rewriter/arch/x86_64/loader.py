"""The x86-64 loader stub (runtime_stubs/x86_64/stub.S), assembled and linked where it goes."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from elftools.elf.elffile import ELFFile

from ...errors import AnvilError

SOURCE = Path(__file__).resolve().parents[3] / "runtime_stubs" / "x86_64" / "stub.S"
DEFINES = ("ANVIL_REGION", "ANVIL_LENGTH", "ANVIL_OFFSET", "ANVIL_ENTRY", "ANVIL_INIT")


@dataclass(frozen=True)
class Stub:
    address: int
    code: bytes


def _run(cmd: list[str]) -> None:
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise AnvilError(f"{cmd[0]} not found: x86-64 programs need the host's binutils and gcc "
                         "(scripts/bootstrap.sh installs them)") from None
    except subprocess.CalledProcessError as e:
        raise AnvilError(f"{cmd[0]} failed on the loader stub: {e.stderr.strip()}") from None


def assemble(address: int, defines: dict[str, int]) -> Stub:
    """The stub linked at ``address`` with the constants ``defines`` (every name of DEFINES)."""
    with tempfile.TemporaryDirectory() as tmp:
        obj, out = Path(tmp) / "stub.o", Path(tmp) / "stub.elf"
        _run(["gcc", "-c", str(SOURCE), "-o", str(obj)])
        cmd = ["ld", "-e", "_anvil_stub", "-o", str(out), str(obj), f"--section-start=.anvil_stub={address:#x}"]
        for name in DEFINES:
            cmd += ["--defsym", f"{name}={defines[name] & (1 << 64) - 1:#x}"]
        _run(cmd)
        with open(out, "rb") as f:
            code = ELFFile(f).get_section_by_name(".anvil_stub").data()
    return Stub(address, code)


@cache
def size() -> int:
    """The stub's size in bytes (it addresses nothing but from RIP: the same at every place)."""
    return len(assemble(0, dict.fromkeys(DEFINES, 0)).code)
