"""The shared libraries a dynamic program loads, found as the dynamic linker finds them,
and whether one of them may start threads of its own (decisions 0128 and 0193).

A library that imports the C library's ``pthread_create`` or ``thrd_create`` may run the
program's code on a thread it starts (a callback, a task, a parallel loop's body), whatever
the program imports from it: LLVM's parallelFor, libstdc++'s std::thread, a thread pool.
Such a program is written as one that may start threads (``Binary.threaded``). The C
library defines them and imports neither, so a program of the C library alone is not taken
for threaded by this.

On x86-64 the runtime learns when the first thread starts from the libraries' GOT slots of
those functions (runtime_stubs/x86_64/anvil_rt.c, wrap_thread_starts), so being ready for
threads costs little and every library counts. ARM copies have no such switch (a copy
ready for threads pays for it on every counter), so there the libraries whose threads run
the program's code only through an entry the program imports by name (elf_loader's
_THREAD_STARTS: libstdc++'s std::thread, OpenMP's regions, GNAT's tasks ...) are left to
those names.
"""

from __future__ import annotations

import glob
import mmap
import os
import re
import struct
from collections.abc import Iterator

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .elf_tables import symbol_entries

# The dynamic linker's own directories for x86-64 on Debian (multiarch first), after
# /etc/ld.so.conf's.
_DEFAULT_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
THREAD_STARTS = ("pthread_create", "thrd_create")
EF_ARM_ABI_FLOAT_HARD = 0x400
# Libraries whose threads run the program's code only through entries the program must
# import by name (elf_loader._THREAD_STARTS names them), or never: libstdc++ (std::thread's
# _M_start_thread; its parallel mode goes through OpenMP or TBB), GCC's and LLVM's OpenMP,
# oneTBB, libuv, GNAT's tasking, gccgo's runtime; GLib (its thread pools, tasks, I/O jobs,
# D-Bus filters), libselinux (parallel relabelling's log callback), liblzma (the
# multithreaded coders' allocator), libzstd (its workers' allocator and sequence
# producer), SQLite (collations in its sorter's workers), libwebp (a worker interface of
# the program's), OpenJPEG (its decoder's threads), libgit2 (the pack builder's progress
# callback), Avahi (its threaded poll), the Boehm collector (threads it starts for the
# program); libcurl's name resolution, libgfortran's asynchronous I/O, argon2's hashing
# lanes, ALSA's plug-ins, the x265, libde265, dav1d, libgav1 and AOM coders, Kerberos'
# support library and OpenLDAP's pool run their own code only. Trusted on ARM only (see
# the module's docstring; decision 0193).
_NAMED_STARTS_ONLY = re.compile(
    r"lib(stdc\+\+|gomp|omp|tbb|uv|gnarl-[\d.]+|go|glib-2\.0|gio-2\.0|selinux|lzma|zstd|sqlite3|webp|openjp2|git2"
    r"|avahi-common|gc|curl(-gnutls|-nss)?|gfortran|argon2|asound|x265|de265|dav1d|gav1|aom|krb5support|ldap(_r)?(-[\d.]+)?)"
    r"(-[0-9a-f]{8})?\.so(\.[\d.]+)?$")
# C libraries define the thread starts and import none: one not found (musl's libc of a
# program built on Alpine) counts as one that starts no thread.
_C_LIBRARY = re.compile(r"(libc(\.musl-\w+)?|ld-linux[\w.-]*|ld-musl-\w+)\.so(\.[\d.]+)?$")
_MOST_LIBRARIES = 64  # a closure larger than this is taken for threaded without reading more
#: How libraries_start_threads' answer ends for a library it could not find (the CLI says so).
NOT_FOUND = ", not found"


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


def _arm_dirs(path: str, elf: ELFFile) -> list[str]:
    """Where an ARM program's libraries are looked for, in order: under QEMU_LD_PREFIX (the
    root qemu-arm gives the program), under the root the program was unpacked in (``dpkg
    -x``: ``ROOT/usr/bin/prog``), Debian's multiarch directories, the cross toolchain's."""
    triplet = "arm-linux-gnueabihf" if elf["e_flags"] & EF_ARM_ABI_FLOAT_HARD else "arm-linux-gnueabi"
    roots = [os.environ["QEMU_LD_PREFIX"]] if os.environ.get("QEMU_LD_PREFIX") else []
    where = os.path.dirname(os.path.realpath(path))
    for tail in ("/usr/local/bin", "/usr/bin", "/usr/sbin", "/usr/games", "/bin", "/sbin"):
        if where.endswith(tail) and len(where) > len(tail):
            roots.append(where[:-len(tail)])
            break
    multiarch = [f"/lib/{triplet}", f"/usr/lib/{triplet}"]
    return [*(root + d for root in roots for d in (*multiarch, "/lib", "/usr/lib")), *multiarch, f"/usr/{triplet}/lib"]


def libraries_start_threads(path: str, elf: ELFFile) -> str | None:
    """The first library the dynamic program ``path`` (``elf``) loads, directly or through
    another, that imports a function that starts a thread, or cannot be found (which counts
    as one that does: the cost of that is speed, not correctness); None if there is none.
    On ARM the libraries _NAMED_STARTS_ONLY names are passed over (their own libraries
    are not)."""
    needed, rpath, runpath = _dynamic(elf)
    environment = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    arm = elf["e_machine"] == "EM_ARM"
    system = _arm_dirs(path, elf) if arm else [*_configured_dirs(), *_DEFAULT_DIRS]
    # (name, DT_RPATH and DT_RUNPATH of the object that needs it, with its $ORIGIN)
    queue = [(name, path, rpath, runpath) for name in needed]
    seen: set[str] = set()
    while queue:
        name, needer, first, then = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if len(seen) > _MOST_LIBRARIES:
            return f"more than {_MOST_LIBRARIES} libraries"
        origin = os.path.dirname(os.path.realpath(needer))
        # DT_RPATH counts only where there is no DT_RUNPATH (the dynamic linker's rule).
        dirs = [*_expand([] if then else first, origin), *environment, *_expand(then, origin), *system]
        found = _library(name, dirs, elf["e_machine"])
        if found is None and _C_LIBRARY.match(os.path.basename(name)):
            continue
        if found is None:
            return name + NOT_FOUND
        where, starts, more, lib_rpath, lib_runpath = found
        if starts and not (arm and _NAMED_STARTS_ONLY.match(os.path.basename(name))):
            return name
        queue.extend((m, where, lib_rpath, lib_runpath) for m in more)
    return None
