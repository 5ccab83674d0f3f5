"""Build a tool's analysis routines as a host shared library for the ReHost server.

The same ``analysis_libs/<tool>/*.c`` InHost compiles for the target is compiled here
with the host compiler, ``-DANVIL_HOST``, the shared formatting code and the host
runtime (runtime_stubs/host/anvil_host.c: site facts, results in memory, the batch
dispatcher). Libraries are cached by content under $ANVIL_CACHE (or ~/.cache/anvil).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rewriter.emit.target_build import ANALYSIS_DIR, COMMON_DIR, ROOT, compiler_environment, exit_said
from rewriter.errors import AnvilError
from rewriter.files import move_whole

HOST_DIR = ROOT / "runtime_stubs" / "host"
# -march=native: the library runs where it is built (the server's machine), and the tools'
# host fast paths (cachesim's AVX2 or AVX-512 row update) need the CPU's vector instructions.
CFLAGS = ["-O2", "-march=native", "-fPIC", "-shared", "-DANVIL_HOST", "-Wall", "-fno-strict-aliasing"]
#: The record words of ARM programs (rehost/stream.py); x86-64 programs' are 8 bytes.
DEFAULT_WORD_BYTES = 4


def flags_for(word_bytes: int) -> list[str]:
    """What builds a library for programs whose record words (and addresses) are
    ``word_bytes`` wide: anvil_rt.h's anvil_addr is 64-bit for x86-64 programs."""
    return ["-DANVIL_TARGET_X86_64"] if word_bytes == 8 else []


def cpu_identity() -> str:
    """What -march=native depends on: the CPU's feature flags (a cache shared by machines
    of different CPUs must not hand one a library built for another)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line
    except OSError:
        pass
    return platform.machine() + platform.processor()


def runtime_sources() -> list[Path]:
    """What every host analysis library is linked with besides the tool's own C."""
    return [COMMON_DIR / "anvil_format.c", COMMON_DIR / "anvil_string.c", HOST_DIR / "anvil_host.c"]


def tool_sources(name: str) -> list[Path]:
    sources = sorted((ANALYSIS_DIR / name).glob("*.c"))
    if not sources:
        raise AnvilError(f"no analysis library '{name}' (no C sources in {ANALYSIS_DIR / name})")
    return sources


def build(sources: list[Path], extra_flags: Sequence[str] = ()) -> Path:
    """Compile ``sources`` with the host runtime into a cached shared library; return its path.

    ``extra_flags`` go after CFLAGS: the tests build the tools' other host paths with them
    (e.g. ``-mno-avx2``: the portable code a CPU without AVX2 runs)."""
    compiler = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")
    if compiler is None:
        raise AnvilError("no host C compiler (gcc) found: run scripts/bootstrap.sh")
    all_sources = [*sources, *runtime_sources()]
    flags = [*CFLAGS, *extra_flags]
    digest = hashlib.sha256(" ".join([*flags, cpu_identity()]).encode())
    for path in [*all_sources, COMMON_DIR / "anvil_rt.h"]:
        digest.update(path.name.encode() + Path(path).read_bytes())
    base = os.environ.get("ANVIL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "anvil")
    out_dir = Path(base) / "host"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"lib{digest.hexdigest()[:24]}.so"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory() as tmp:
        built = Path(tmp) / "lib.so"
        rest = [f"-I{COMMON_DIR}", *map(str, all_sources), "-o", str(built)]
        proc = subprocess.run([compiler, *flags, *rest], capture_output=True, text=True, env=compiler_environment())
        if proc.returncode != 0 and "-march=native" in proc.stderr:
            # A compiler that cannot tune for this CPU builds the portable library instead.
            portable = [flag for flag in flags if flag != "-march=native"]
            proc = subprocess.run([compiler, *portable, *rest], capture_output=True, text=True,
                                  env=compiler_environment())
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.splitlines() if "error" in line] or proc.stderr.splitlines()
            raise AnvilError(f"building the host library failed: {lines[0] if lines else exit_said(proc.returncode)}")
        move_whole(str(built), str(out))  # never half a file: the next build would take it
    return out
