"""``anvil run --sysroot DIR`` and ``$QEMU_LD_PREFIX``: a program whose libraries are not the cross toolchain's.

The sysroot is Debian's bzip2 unpacked with its library libbz2 and Debian's own libc
(``libc6:armhf``, which brings its ld-linux-armhf.so.3): a real root file system. libbz2
is only there, so the program runs only where the sysroot is used; without it (the
toolchain's /usr/arm-linux-gnueabihf) the dynamic loader cannot find libbz2 and the run
fails. Instrumented, InHost and ReHost, run through ``anvil run`` with the sysroot given
either way, it behaves as the original under ``qemu-arm -L DIR``; --sysroot wins over
$QEMU_LD_PREFIX; a --sysroot that is not a directory is a one-line error.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.rehost import CLI
from tests.support.run import instrument, place
from tests.support.samples import build, debian_packages

INPUT = b"".join(b"line %d of a text bzip2 compresses\n" % i for i in range(2000))
WORDS = ["-c", "-9"]


@pytest.fixture(scope="module")
def sysroot() -> Path:
    return debian_packages("bzip2-sysroot-armhf", ["bzip2:armhf", "libbz2-1.0:armhf", "libc6:armhf"], "bin/bzip2")


def anvil_run(binary: Path, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``anvil run OPTIONS --argv0 prog BINARY -- WORDS`` in the binary's directory, INPUT on stdin."""
    variables = {"PYTHONPATH": os.environ.get("PYTHONPATH", ""), **(env or {})}
    return subprocess.run([*CLI, "run", "--argv0", "prog", *options, str(binary), "--", *WORDS], input=INPUT,
                          capture_output=True, cwd=binary.parent, env=variables, timeout=300)


def test_program_with_libraries_in_a_sysroot(sysroot: Path, tmp_path: Path) -> None:
    program = sysroot / "bin" / "bzip2"
    orig = place(program, tmp_path, "orig")
    original = subprocess.run(["qemu-arm", "-L", str(sysroot), "-0", "prog", str(orig), *WORDS], input=INPUT,
                              capture_output=True, cwd=orig.parent, env={}, timeout=120)
    assert original.returncode == 0 and original.stdout.startswith(b"BZh9")
    assert subprocess.run(["bzip2", "-dc"], input=original.stdout, capture_output=True).stdout == INPUT

    inhost = instrument(program, "inscount", tmp_path)
    rehost = instrument(program, "inscount", tmp_path, "--mode", "rehost", slot="rhst")
    for binary in (inhost, rehost):
        run = anvil_run(binary, "-q", "--sysroot", str(sysroot))
        assert (run.stdout, run.stderr, run.returncode) == (original.stdout, original.stderr, 0), binary
    counts = (inhost.parent / "prog.inscount.out").read_text()
    assert (rehost.parent / "prog.inscount.out").read_text() == counts  # the same run, analysed either way

    # Without the sysroot the toolchain's libraries are used: libbz2 is not among them.
    default = anvil_run(inhost, "-q")
    assert default.returncode == 127 and b"libbz2.so.1.0" in default.stderr and default.stdout == b""

    # $QEMU_LD_PREFIX when --sysroot is not given; --sysroot before it.
    by_variable = anvil_run(inhost, "-q", env={"QEMU_LD_PREFIX": str(sysroot)})
    assert (by_variable.stdout, by_variable.returncode) == (original.stdout, 0), by_variable.stderr
    both = anvil_run(rehost, "-q", "--sysroot", str(sysroot), env={"QEMU_LD_PREFIX": str(tmp_path / "nowhere")})
    assert (both.stdout, both.stderr, both.returncode) == (original.stdout, original.stderr, 0)
    toolchain = anvil_run(rehost, "-q", "--sysroot", "/usr/arm-linux-gnueabihf", env={"QEMU_LD_PREFIX": str(sysroot)})
    assert toolchain.returncode == 127 and b"libbz2.so.1.0" in toolchain.stderr


@pytest.mark.parametrize("words, needle", [
    (["--sysroot", "{file}", "{binary}"], "not a directory"),
    (["--sysroot", "{missing}", "{binary}"], "not a directory"),
    (["--board", "mps2-an385", "--sysroot", "{dir}", "{binary}"], "--sysroot is for Linux programs"),
])
def test_bad_sysroot_is_one_line(words: list[str], needle: str, tmp_path: Path) -> None:
    binary = tmp_path / "prog"
    # A whole program: ``anvil run`` checks the file as a loader reads it (decision 0104).
    binary.write_bytes(build("sort", "O2-thumb-dyn").read_bytes())
    names = {"file": str(binary), "missing": str(tmp_path / "missing"), "dir": str(tmp_path), "binary": str(binary)}
    run = subprocess.run([*CLI, "run", *(w.format(**names) for w in words)], capture_output=True, text=True,
                         env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")}, timeout=60)
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and run.stdout == "" and len(lines) == 1, run.stderr
    assert lines[0].startswith("anvil: error: ") and needle in lines[0]
