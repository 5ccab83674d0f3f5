"""Draw an unbiased sample of Debian's armhf programs for the corpus (decision 0104).

The corpus (tests/support/corpus.py) was chosen by hand. This draws programs nobody chose:
every armhf package of Debian 12 (bookworm main, from the local ``apt`` index) that is not
already a corpus package, in an order fixed by ``--seed`` (``random.Random(seed).shuffle`` of
the sorted names), is examined in turn until ``--count`` qualify:

- the package ships an ELF executable in ``/usr/bin`` or ``/bin`` (found by downloading it
  with ``apt-get download`` and reading its files: the index does not list them);
- it is not GUI-only (it depends on no GUI toolkit: GTK, Qt, wxWidgets, FLTK, SDL, Tk,
  X11's client library, OpenGL) and not a daemon that needs a network (``SKIPPED``, with
  the reason, as judged from its description).

Packages of sections that hold no programs (libraries, development files, debug symbols,
documentation, fonts, kernels) are passed over without a download: only the few of them
that ship a tool in ``/usr/bin`` are lost, and no choice by hand enters. For each pick the
script prints its executables and the libraries of its ``Depends``, followed through
libraries (``Multi-Arch: same`` packages other than those the cross sysroot has), which is
what a corpus entry's package list needs.

With ``--min-size N`` (decision 0106) a package qualifies only if one of its executables is
at least N bytes as Debian ships it (stripped); packages whose ``Installed-Size`` is under N
cannot hold one and are passed over without a download. Without it the draw is decision
0104's, unchanged.

    python3 scripts/debian_sample.py --seed 104 --count 25
    python3 scripts/debian_sample.py --seed 106 --count 15 --min-size 1000000
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

#: Sections whose packages are not programs (passed over without a download).
NOT_PROGRAMS = {"libs", "oldlibs", "libdevel", "debug", "doc", "fonts", "kernel", "localization",
                "metapackages", "tasks", "introspection", "gnu-r", "httpd"}
#: Names of a GUI toolkit's libraries: a package depending on one is taken for GUI-only.
GUI = re.compile(r"^(libgtk|libgtk2\.0|libgtk-3|libgtk-4|libqt[0-9]|libkf5|libkf6|libwx|libfltk|libsdl|libtk[0-9]|"
                 r"tk[0-9]|libx11-6$|libgl1|libegl1|libwayland-client|libxt6|libmotif|libxm4|libgdk)")
#: Libraries the cross sysroot (/usr/arm-linux-gnueabihf) already has.
SYSROOT = {"libc6", "libgcc-s1", "libstdc++6"}
#: Candidates passed over by judgement, with the reason (filled in as the draw met them).
SKIPPED: dict[str, str] = {
    "mysecureshell": "an SFTP server (its other programs query the running server)",
    "cli-spinner": "a demonstration that spins until it is killed, whatever its arguments",
    "smemcap": "takes no arguments and writes every process's memory maps: no two runs alike",
}


def packages_index() -> dict[str, dict[str, str]]:
    """The armhf packages of bookworm main (the local ``apt`` index): name -> fields."""
    names = subprocess.run(["apt-get", "indextargets", "--format", "$(FILENAME)", "Created-By: Packages",
                            "Architecture: armhf"], capture_output=True, text=True, check=True).stdout.split()
    main = [n for n in names if "_dists_bookworm_main_" in n]
    if not main:
        raise SystemExit("no armhf index of bookworm main: run scripts/bootstrap.sh")
    text = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", main[0]], capture_output=True, text=True,
                          check=True).stdout
    index: dict[str, dict[str, str]] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if "Package" in fields:
            index[fields["Package"]] = fields
    return index


def depends(fields: dict[str, str]) -> list[str]:
    """The package names of ``Depends`` and ``Pre-Depends`` (first alternative of each)."""
    names = []
    for key in ("Pre-Depends", "Depends"):
        for clause in filter(None, (c.strip() for c in fields.get(key, "").split(","))):
            names.append(re.split(r"[\s(:]", clause.split("|")[0].strip())[0])
    return names


def library_closure(name: str, index: dict[str, dict[str, str]]) -> list[str]:
    """The libraries ``name`` needs at run time: its armhf dependencies that are ``Multi-Arch:
    same`` or named ``lib...``, followed through each other, less those the cross sysroot has."""
    found: set[str] = set()
    todo = list(depends(index[name]))
    while todo:
        dep = todo.pop()
        fields = index.get(dep)
        if dep in found or dep in SYSROOT or fields is None or fields.get("Architecture") != "armhf" or not (
                fields.get("Multi-Arch") == "same" or dep.startswith("lib")):
            continue
        found.add(dep)
        todo.extend(depends(fields))
    return sorted(found)


def corpus_packages(seed: int) -> set[str]:
    """Every Debian package a corpus entry's program comes from, less the entries the draw of
    ``seed`` made (``DRAWN[seed]``), so that each draw repeats once its picks are in the corpus
    while a new seed passes over every earlier draw's."""
    from tests.support.corpus import CORPUS, DRAWN

    drawn = DRAWN.get(seed, ())
    # Entries made of PyPI wheels (decision 0103) name no Debian package.
    return {program.packages[0].split(":")[0] for program in CORPUS.values()
            if program.packages and program.name not in drawn}


def executables(name: str, cache: Path, min_size: int = 0) -> list[str]:
    """The ELF files of at least ``min_size`` bytes the package ships in /usr/bin or /bin
    (downloaded once into ``cache``)."""
    unpacked = cache / name
    if not unpacked.is_dir():
        work = Path(tempfile.mkdtemp(dir=cache))
        try:
            subprocess.run(["apt-get", "download", f"{name}:armhf"], cwd=work, capture_output=True, check=True)
            for deb in work.glob("*.deb"):
                subprocess.run(["dpkg", "-x", str(deb), str(work / "root")], capture_output=True, check=True)
            (work / "root").mkdir(exist_ok=True)
            (work / "root").rename(unpacked)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    found = []
    for folder in ("usr/bin", "bin"):
        for path in sorted((unpacked / folder).glob("*")) if (unpacked / folder).is_dir() else []:
            if path.is_file() and not path.is_symlink() and path.stat().st_size >= min_size:
                with path.open("rb") as f:
                    if f.read(4) == b"\x7fELF":
                        found.append(f"/{folder}/{path.name}")
    return found


def draw(seed: int, count: int, cache: Path, min_size: int = 0) -> None:
    """Print the candidates in the seed's order, each with its verdict, until ``count`` qualify
    (with an executable of at least ``min_size`` bytes)."""
    index = packages_index()
    in_corpus = corpus_packages(seed)
    names = sorted(n for n, f in index.items() if f.get("Architecture") == "armhf")
    random.Random(seed).shuffle(names)
    picked = 0
    cache.mkdir(parents=True, exist_ok=True)
    for position, name in enumerate(names):
        fields = index[name]
        section = fields.get("Section", "").split("/")[-1]
        if section in NOT_PROGRAMS or name.endswith(("-dbgsym", "-dev", "-doc")):
            continue
        # Installed-Size is in KiB and counts every file: a package under the bound cannot hold
        # an executable over it (and is not downloaded).
        if min_size and int(fields.get("Installed-Size", "0")) * 1024 < min_size:
            continue
        if name in in_corpus:
            verdict = "in the corpus"
        elif name in SKIPPED:
            verdict = "skipped: " + SKIPPED[name]
        elif gui := [d for d in depends(fields) if GUI.match(d)]:
            verdict = f"GUI ({gui[0]})"
        elif not (found := executables(name, cache, min_size)):
            verdict = f"no ELF of {min_size:,} bytes or more in /usr/bin or /bin" if min_size else \
                "no ELF in /usr/bin or /bin"
        else:
            picked += 1
            verdict = f"PICK {picked}: {' '.join(found)}; libraries: {' '.join(library_closure(name, index))}"
        summary = fields.get("Description", "").splitlines()[0][:60]
        print(f"{position:5d} {name} [{section}] ({summary}) -> {verdict}", flush=True)
        if picked == count:
            return


def main() -> int:
    """The command."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=104, help="the draw's seed (default 104)")
    parser.add_argument("--count", type=int, default=25, help="programs to draw (default 25)")
    parser.add_argument("--min-size", type=int, default=0, help="take a package only if an executable of "
                        "it has at least this many bytes (default 0: any)")
    parser.add_argument("--cache", type=Path, help="where the candidates are downloaded and unpacked "
                        "(default: debian-sample in the samples' cache)")
    args = parser.parse_args()
    from tests.support.samples import cache_dir

    draw(args.seed, args.count, args.cache or cache_dir() / "debian-sample", args.min_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
