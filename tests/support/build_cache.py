"""What the sample builders share: a cache directory, tool lookup, and cache keys.

A built sample is cached under a key hashed from everything that makes it: a schema
string, the compiler's identity (version and target) and the build inputs.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def cache_dir(env_var: str, default_name: str) -> Path:
    """``$env_var`` or ``.cache/<default_name>`` in the repository, created if needed."""
    override = os.environ.get(env_var)
    path = Path(override) if override else REPO_ROOT / ".cache" / default_name
    path.mkdir(parents=True, exist_ok=True)
    return path


def require_tool(name: str, error: type[Exception], hint: str) -> str:
    """The full path of executable ``name``, or ``error`` saying it is missing and ``hint``."""
    found = shutil.which(name)
    if found is None:
        raise error(f"{name} not found on PATH; {hint}")
    return found


@functools.cache
def compiler_identity(cc: str) -> str:
    """A string identifying compiler ``cc`` (its version and target)."""
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True)
    machine = subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True, check=True)
    return version.stdout.splitlines()[0] + "|" + machine.stdout.strip()


def cache_key(*parts: bytes | str) -> str:
    """Hash the build inputs into a short hex key (each part length-prefixed)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:16]


def compile_to(cmd_before_output: Sequence[str], cmd_after_output: Sequence[str], out: Path,
               error: type[Exception], mode: int | None = None) -> Path:
    """Run ``cmd_before_output -o <tmp> cmd_after_output`` and move the result to ``out`` atomically
    (``mode``: its permissions); ``error`` with the command and its output when it fails."""
    fd, tmp_name = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        cmd = [*cmd_before_output, "-o", str(tmp), *cmd_after_output]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise error(f"compiling {out.name} failed (exit {proc.returncode}):\n$ {' '.join(cmd)}\n"
                        f"{proc.stdout}{proc.stderr}")
        if mode is not None:
            tmp.chmod(mode)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
