"""Freestanding 32-bit ARM samples for the oracles, and the code that builds them.

The C samples in this directory (``memwalk.c``, ``bubble.c``) link against the
tiny runtime in ``start.c`` only: no libc, ``_start`` calls ``main`` and exits
through ``svc #0``.  They run unchanged under ``qemu-arm`` (Linux user mode)
and under :mod:`tests.oracles.unicorn_trace`, which implements just ``exit``,
``exit_group`` and ``write``.

Builds are cached in ``<repo>/.cache/freestanding`` (or ``$ANVIL_SAMPLE_CACHE``)
under a name that includes a hash of the sources, the flags and the compiler
path, so a changed source or flag never reuses a stale binary.  Outputs are
written to a temporary name and renamed into place, so concurrent test
processes can build the same sample safely.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "CC",
    "FREESTANDING_DIR",
    "SAMPLE_NAMES",
    "BuildError",
    "build_asm",
    "build_freestanding",
    "cache_dir",
    "compiler_available",
]

#: Directory holding ``start.c``, ``sample.h`` and the sample sources.
FREESTANDING_DIR = Path(__file__).resolve().parent

#: Root of the repository (``tests/oracles/freestanding`` is three levels down).
REPO_ROOT = FREESTANDING_DIR.parents[2]

#: Cross compiler used for every build here.
CC = "arm-linux-gnueabihf-gcc"

#: Sample programs available to :func:`build_freestanding`.
SAMPLE_NAMES = ("memwalk", "bubble")

#: Flags common to every freestanding build (C and assembly).
_LINK_FLAGS = ("-nostdlib", "-static", "-no-pie", "-Wl,--build-id=none")

#: Flags for the C samples; ``-mthumb`` comes first so ``-marm`` in extra flags wins.
_C_FLAGS = (
    "-mthumb",
    "-O2",
    "-ffreestanding",
    "-fno-stack-protector",
    "-fno-tree-loop-distribute-patterns",
    "-fomit-frame-pointer",
    "-Wall",
    "-Wextra",
)


class BuildError(RuntimeError):
    """The cross compiler is missing or failed; carries its diagnostics."""


def compiler_available() -> bool:
    """Return True when the ARM cross compiler is on ``PATH``."""
    return shutil.which(CC) is not None


def cache_dir() -> Path:
    """Return (and create) the build cache directory.

    ``$ANVIL_SAMPLE_CACHE`` overrides the default ``<repo>/.cache/freestanding``.
    """
    override = os.environ.get("ANVIL_SAMPLE_CACHE")
    path = Path(override) if override else REPO_ROOT / ".cache" / "freestanding"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _digest(parts: Sequence[bytes]) -> str:
    """Hash a sequence of byte strings unambiguously (length-prefixed)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:16]


def _compile(out: Path, sources: Sequence[Path], flags: Sequence[str]) -> None:
    """Compile ``sources`` with ``flags`` into ``out`` atomically."""
    cc = shutil.which(CC)
    if cc is None:
        raise BuildError(f"{CC} not found on PATH")
    fd, tmp_name = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    cmd = [cc, *flags, "-o", str(tmp), *(str(s) for s in sources), "-lgcc"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def build_freestanding(name: str, extra_flags: Sequence[str] = ()) -> Path:
    """Build the freestanding sample ``name`` (``memwalk`` or ``bubble``) and return its path.

    The default is ``-O2`` Thumb-2 code; pass ``extra_flags=("-marm",)`` for A32
    (later flags override earlier ones, so ``-O0`` etc. work the same way).
    The result is a static ET_EXEC ELF whose entry is ``_start``.
    """
    if name not in SAMPLE_NAMES:
        raise ValueError(f"unknown freestanding sample {name!r}; known: {', '.join(SAMPLE_NAMES)}")
    sources = [FREESTANDING_DIR / "start.c", FREESTANDING_DIR / f"{name}.c"]
    flags = [*_C_FLAGS, *_LINK_FLAGS, f"-I{FREESTANDING_DIR}", *extra_flags]
    parts = [p.read_bytes() for p in (*sources, FREESTANDING_DIR / "sample.h")]
    parts += [f.encode() for f in flags]
    parts.append(str(shutil.which(CC) or CC).encode())
    out = cache_dir() / f"{name}-{_digest(parts)}"
    if not out.exists():
        _compile(out, sources, flags)
    return out


def build_asm(source: str, name: str = "asm", extra_flags: Sequence[str] = ()) -> Path:
    """Assemble and link a hand-written freestanding assembly program (GNU as syntax).

    ``source`` is the text of a ``.S`` file defining ``_start``; it is linked
    with ``-nostdlib -static``.  The binary is cached by content hash like
    :func:`build_freestanding`.  Returns the path of the ELF.
    """
    flags = [*_LINK_FLAGS, *extra_flags]
    parts = [source.encode(), *(f.encode() for f in flags), str(shutil.which(CC) or CC).encode()]
    key = _digest(parts)
    directory = cache_dir()
    out = directory / f"{name}-{key}"
    if not out.exists():
        fd, tmp_name = tempfile.mkstemp(prefix=out.name + ".", suffix=".S", dir=directory)
        with os.fdopen(fd, "w") as fh:
            fh.write(source)
        try:
            _compile(out, [Path(tmp_name)], flags)
        finally:
            Path(tmp_name).unlink(missing_ok=True)
    return out
