"""Digests of the images the rewriter makes from a fixed set of inputs, to show that a change
meant to move code (the ISA split of decision 0105) leaves every image byte for byte the same.

The cases cover both instruction sets, both modes, every tool, Linux programs (dynamic,
static, stripped, clang, C++ with original return addresses) and firmware for two boards.
Their inputs are built at test time with ``-ffile-prefix-map`` over the checkout, so an
input's bytes depend only on the sources and the toolchain, not on where the checkout is.

``tests/data/image_digests.json`` holds, per case, the digest of the input and of the
image made by the revision it names. Recording it again (only when the images are meant to
change, or for another toolchain):

    python3 -m tests.support.image_digests --record
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support import boards, samples
from tests.support.build_cache import REPO_ROOT

DIGESTS = REPO_ROOT / "tests" / "data" / "image_digests.json"
#: What an image is made from (the rest of the checkout is not needed to make one).
SOURCES = ("rewriter", "runtime_stubs", "analysis_libs", "rehost")
#: Every path of the checkout is written as this in the inputs' debug information and symbols.
PREFIX_MAP = f"-ffile-prefix-map={REPO_ROOT}=anvil"


@dataclass(frozen=True)
class Case:
    """One rewrite: an input, a tool and the CLI's other arguments."""
    name: str
    build: Callable[[], Path]
    tool: str
    args: tuple[str, ...] = ()


def _linux(sample: str, variant: str, strip: bool = False) -> Callable[[], Path]:
    def build() -> Path:
        path = samples.build(sample, variant, (PREFIX_MAP,))
        if not strip:
            return path
        return samples.stripped(path, path.with_name(path.name + "-stripped"))
    return build


def _firmware(name: str, board: str) -> Callable[[], Path]:
    return lambda: boards.build_firmware(name, board, extra=(PREFIX_MAP,))


_REHOST = ("--mode", "rehost")
CASES: tuple[Case, ...] = (
    *(Case(f"sort-thumb-dyn-{tool}", _linux("sort", "O2-thumb-dyn"), tool)
      for tool in ("inscount", "bbcount", "cachesim", "memtrace")),
    *(Case(f"sort-thumb-dyn-{tool}-rehost", _linux("sort", "O2-thumb-dyn"), tool, _REHOST)
      for tool in ("inscount", "cachesim", "memtrace")),
    Case("hash-arm-static-inscount", _linux("hash", "O2-arm-static"), "inscount"),
    Case("hash-arm-static-cachesim-rehost", _linux("hash", "O2-arm-static"), "cachesim", _REHOST),
    Case("jumptable-thumb-stripped-cachesim", _linux("jumptable", "O2-thumb-dyn", strip=True), "cachesim"),
    Case("a32-switch-clang-bbcount", _linux("a32_switch", "clang-O2-arm-pie-lld"), "bbcount"),
    Case("unwind-original-returns-inscount", _linux("unwind", "O2-thumb-dyn"), "inscount",
         ("--return-addresses", "original")),
    Case("exclusive-windows-memtrace", _linux("exclusive_windows", "O2-thumb-dyn"), "memtrace"),
    Case("crc-an385-inscount", _firmware("crc", "mps2-an385"), "inscount"),
    Case("crc-an385-cachesim-rehost", _firmware("crc", "mps2-an385"), "cachesim", _REHOST),
    Case("sort-an386-cachesim", _firmware("sort", "mps2-an386"), "cachesim"),
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_digest(case: Case) -> str:
    """The digest of the case's input, built (or taken from the build cache) here."""
    return _sha256(case.build())


def image_digest(case: Case, work: Path, code: Path = REPO_ROOT) -> str:
    """The digest of the case's image, rewritten by the rewriter under ``code`` (this
    checkout's by default) in a new process (``PYTHONHASHSEED=0``, so nothing depends on the
    hash seed) into ``work``."""
    out = work / case.name / "prog"  # one name: the results file's name is in the image
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "rewriter.cli", "instrument", "--tool", case.tool, "--format", "json",
               str(case.build()), "-o", str(out), *case.args]
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(code)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{case.name}: anvil instrument failed ({done.returncode}): {done.stderr.strip()}")
    return _sha256(out)


def toolchains() -> dict[str, str]:
    """The first line of each cross compiler's ``--version``: the inputs and the analysis
    libraries are theirs, so a recording holds only for them."""
    found = {}
    for cc in (samples.CC, boards.CC, samples.CLANG):
        done = subprocess.run([cc, "--version"], capture_output=True, text=True)
        found[cc] = done.stdout.splitlines()[0] if done.returncode == 0 and done.stdout else "missing"
    return found


def baseline_images(revision: str, work: Path) -> dict[str, str]:
    """The image digests the code of git ``revision`` makes here, for a toolchain other than
    the recording's: that revision's sources taken from git into ``work``."""
    tree = work / "baseline"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", revision, *SOURCES, "tests"],
                             capture_output=True)
    if archive.returncode != 0:
        raise RuntimeError(f"the toolchain differs from the recording's and git cannot give revision {revision} "
                           f"({archive.stderr.decode(errors='replace').strip()}): record again with "
                           "python3 -m tests.support.image_digests --record on the code of that revision")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return {case.name: image_digest(case, work / "old", tree) for case in CASES}


def record(revision: str) -> dict:
    """Rewrite every case with this checkout's code and return the recording."""
    with tempfile.TemporaryDirectory(prefix="anvil-digests-") as tmp:
        cases = {}
        for case in CASES:
            cases[case.name] = {"input": input_digest(case), "image": image_digest(case, Path(tmp))}
    return {"revision": revision, "toolchains": toolchains(), "cases": cases}


def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help=f"write {DIGESTS.relative_to(REPO_ROOT)}")
    args = parser.parse_args()
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    recording = record(head)
    text = json.dumps(recording, indent=1, sort_keys=True) + "\n"
    if args.record:
        DIGESTS.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
