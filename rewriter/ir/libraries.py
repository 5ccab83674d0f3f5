"""The shared libraries a dynamic x86-64 program loads, found as the dynamic linker finds
them, and whether one of them may start threads of its own (decision 0128).

A library that imports the C library's ``pthread_create`` or ``thrd_create`` may run the
program's code on a thread it starts (a callback, a task, a parallel loop's body), whatever
the program imports from it: LLVM's parallelFor, libstdc++'s std::thread, a thread pool.
Such a program is written as one that may start threads (``Binary.threaded``); its runtime
learns when the first one starts from the libraries' GOT slots of those functions
(runtime_stubs/x86_64/anvil_rt.c, wrap_thread_starts). The C library defines them and
imports neither, so a program of the C library alone is not taken for threaded by this.
"""

from __future__ import annotations

import glob
import mmap
import os
import struct
from collections.abc import Iterator

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .elf_loader import symbol_entries

# The dynamic linker's own directories for x86-64 on Debian (multiarch first), after
# /etc/ld.so.conf's.
_DEFAULT_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
THREAD_STARTS = ("pthread_create", "thrd_create")
_MOST_LIBRARIES = 64  # a closure larger than this is taken for threaded without reading more


def _configured_dirs(conf: str = "/etc/ld.so.conf", depth: int = 0) -> Iterator[str]:
    """The directories /etc/ld.so.conf names, its ``include`` globs followed."""
    try:
        with open(conf, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include ") and depth < 4:
            pattern = line.split(None, 1)[1]
            pattern = pattern if os.path.isabs(pattern) else os.path.join(os.path.dirname(conf), pattern)
            for included in sorted(glob.glob(pattern)):
                yield from _configured_dirs(included, depth + 1)
        elif line.startswith("/"):
            yield line


def _dynamic(elf: ELFFile) -> tuple[list[str], list[str], list[str]]:
    """DT_NEEDED, DT_RPATH and DT_RUNPATH (its directories) of ``elf``."""
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    section = elf.get_section_by_name(".dynamic")
    if section is None:
        return needed, rpath, runpath
    for tag in section.iter_tags():
        kind = tag.entry.d_tag
        if kind == "DT_NEEDED":
            needed.append(tag.needed)
        elif kind == "DT_RPATH":
            rpath.extend(tag.rpath.split(":"))
        elif kind == "DT_RUNPATH":
            runpath.extend(tag.runpath.split(":"))
    return needed, rpath, runpath


def _expand(dirs: list[str], origin: str) -> list[str]:
    return [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for d in dirs if d]


def _imports_thread_start(elf: ELFFile, data: mmap.mmap) -> bool:
    """Whether ``elf`` imports one of THREAD_STARTS (an undefined dynamic symbol)."""
    if not any(data.find(name.encode() + b"\0") >= 0 for name in THREAD_STARTS):
        return False
    table = elf.get_section_by_name(".dynsym")
    if table is None:
        return False
    return any(shndx == 0 and name in THREAD_STARTS for name, _, _, _, shndx in symbol_entries(table, data))


def _library(name: str, dirs: list[str], machine: str) -> tuple[str, bool, list[str], list[str], list[str]] | None:
    """The first library ``name`` in ``dirs`` built for ``machine`` (others are passed over,
    as the dynamic linker passes over them): its path, whether it imports a thread start,
    and its DT_NEEDED, DT_RPATH and DT_RUNPATH; None if there is none."""
    for candidate in ([name] if "/" in name else [os.path.join(d, name) for d in dirs]):
        try:
            with open(candidate, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                library = ELFFile(f)
                if library["e_machine"] != machine:
                    continue
                starts = _imports_thread_start(library, data)
                return (candidate, starts, *_dynamic(library))
        except (OSError, ValueError, ELFError, KeyError, IndexError, struct.error):
            continue
    return None


def libraries_start_threads(path: str, elf: ELFFile) -> bool:
    """Whether a library the dynamic program ``path`` (``elf``) loads, directly or through
    another, imports a function that starts a thread. A library that cannot be found counts
    as one that does (the cost of that is speed, not correctness)."""
    needed, rpath, runpath = _dynamic(elf)
    environment = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    system = [*_configured_dirs(), *_DEFAULT_DIRS]
    # (name, DT_RPATH and DT_RUNPATH of the object that needs it, with its $ORIGIN)
    queue = [(name, path, rpath, runpath) for name in needed]
    seen: set[str] = set()
    while queue:
        name, needer, first, then = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if len(seen) > _MOST_LIBRARIES:
            return True
        origin = os.path.dirname(os.path.realpath(needer))
        # DT_RPATH counts only where there is no DT_RUNPATH (the dynamic linker's rule).
        dirs = [*_expand([] if then else first, origin), *environment, *_expand(then, origin), *system]
        found = _library(name, dirs, elf["e_machine"])
        if found is None:
            return True
        where, starts, more, lib_rpath, lib_runpath = found
        if starts:
            return True
        queue.extend((m, where, lib_rpath, lib_runpath) for m in more)
    return False
