"""x86-64 programs laid out away from the usual addresses (decision 0178).

- A program linked between 2 and 4 GiB (a PIE linked at 0x90000000, fixed-address ones at
  0x90000000 and 0xc0000000): its region lies above 2 GiB, and the analysis library's trial
  link, its data at 0, and a call of an undefined weak function (at 0) were out of reach of
  its RIP-relative references: "ld failed: ... in function `segment_span'".
- A fixed-address program whose image spans a gigabyte (a static work area) was refused:
  the region went 1.125 GiB past the image's end, beyond the 2 GiB a copy reaches. It now
  goes as far past the image as that reach allows (and below the image where a small
  region fits there).
- A linker script that puts .text after .data: the entry is in a last segment, writable
  and executable, whose file bytes the section headers follow. It was refused, "no room
  for the loader stub", where the segment holding .init and the PLT had room; and the
  runtime made the pages it wrote jumps into read-only, so the program's first store to
  its data there (the dynamic linker's, into the GOT) was a SIGSEGV (decision 0187).

Oracle: the original's run under ``setarch -R`` (output with the addresses it prints, exit
status); every tool's copy must print and exit the same.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.run import run_native
from tests.support.samples import SAMPLES_DIR, code_after_data_script

GCC_LIB = "/usr/lib/gcc/x86_64-linux-gnu/12"
LIBC = "/usr/lib/x86_64-linux-gnu"


def _fixed_high(segment: str, out: Path) -> list[str]:
    """gcc's non-PIE start files cannot be linked above 2 GiB: the PIE ones, code compiled -fPIE."""
    return ["gcc", "-O2", "-fPIE", "-no-pie", "-nostartfiles", f"{LIBC}/crt1.o", f"{LIBC}/crti.o",
            f"{GCC_LIB}/crtbeginS.o", str(SAMPLES_DIR / "addresses.c"), f"{GCC_LIB}/crtendS.o", f"{LIBC}/crtn.o",
            "-Wl,--no-relax", f"-Wl,-Ttext-segment={segment}", "-o", str(out)]


def _code_after_data(out: Path) -> list[str]:
    """addresses.c linked by ld's default script with its .text moved after .data."""
    script = code_after_data_script("ld", out.parent / "code_after_data.x")
    return ["gcc", "-O2", "-no-pie", "-fno-pie", str(SAMPLES_DIR / "addresses.c"), f"-Wl,-T,{script}",
            "-o", str(out)]


BUILDS = {
    "code-after-data": _code_after_data,
    "pie-at-0x90000000": lambda out: ["gcc", "-O2", "-pie", "-Wl,-Ttext-segment=0x90000000",
                                      str(SAMPLES_DIR / "addresses.c"), "-o", str(out)],
    "fixed-at-0x90000000": lambda out: _fixed_high("0x90000000", out),
    "fixed-at-0xc0000000": lambda out: _fixed_high("0xc0000000", out),
    "fixed-1g-bss": lambda out: ["gcc", "-O2", "-no-pie", "-fno-pie", str(SAMPLES_DIR / "x64_big_bss.c"),
                                 "-o", str(out)],
    "fixed-small": lambda out: ["gcc", "-O2", "-no-pie", "-fno-pie", str(SAMPLES_DIR / "addresses.c"),
                                "-o", str(out)],
}


def _run(program: Path) -> tuple[int, bytes, bytes]:
    done = run_native(program, ["x"])
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_programs_laid_out_far_from_the_usual_places(build: str, tmp_path: Path) -> None:
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    plain.parent.mkdir()
    copied.parent.mkdir()
    subprocess.run(BUILDS[build](plain), check=True, capture_output=True)
    original = _run(plain)
    assert original[0] == 0 and original[1]
    for tool in ("inscount", "cachesim", "memtrace"):
        done = subprocess.run(["anvil", "instrument", "--tool", tool, str(plain), "-o", str(copied)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert _run(copied) == original, tool
        assert (copied.parent / f"prog.{tool}.out").is_file()
