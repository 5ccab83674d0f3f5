"""A generated program whose instrumented copy is larger than any branch reaches.

``FUNCTIONS[isa]`` procedures of hand-written assembly, each moving ten registers to and from
memory ``REPEATS`` times (an LDM and an STM of ten registers: twenty accesses for
cachesim's hooks in four bytes of code), then calling a procedure far away in the
image. ``main`` (C) calls each through a table, so every procedure runs, and prints a
checksum of the memory they changed and the addresses of a global, the heap and the
stack.

The number of accesses each call makes is known from the generator alone, which is
what the test compares cachesim's counts with:

- a call: PUSH of nine registers, REPEATS x (LDM + STM of ten), LDR, POP of nine;
- ``table[i](data, DEPTH)``: a chain of DEPTH calls (each passes depth - 1 on and the
  last one, at depth 1, calls nothing).
"""

from __future__ import annotations

from pathlib import Path

from tests.support import build_cache
from tests.support.samples import CC, SampleBuildError, cache_dir

#: Procedures per instruction set: enough for a copy of more than 32 MB in each (an A32
#: copy is about twice a Thumb one's size, and qemu's time grows with the copy).
FUNCTIONS = {"thumb": 2600, "arm": 1400}
REPEATS = 8
DEPTH = 3
PUSHED = 9  # r4-r11, lr
MOVED = 10  # r0-r3, r6-r11
#: Loads and stores of one call of a generated procedure.
LOADS_PER_CALL = REPEATS * MOVED + 1 + PUSHED
STORES_PER_CALL = REPEATS * MOVED + PUSHED

_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
typedef int (*fn)(int *, int);
extern fn table[];
int data[200];
int main(void) {
    long t = 0;
    int local = 0;
    for (int i = 0; i < 200; i++) data[i] = i * 2654435761u;
    for (int i = 0; i < FUNCTIONS; i++) t += table[i](data, DEPTH);
    for (int i = 0; i < 200; i++) t = t * 31 + data[i];
    void *heap = malloc(100);
    printf("%ld %p %p %p\n", t, (void *)data, heap, (void *)&local);
    return (int)(t & 63);
}
"""


def _procedures(isa: str, count: int) -> str:
    """``count`` generated procedures in ``isa`` ("thumb" or "arm")."""
    lines = ["\t.syntax unified", f"\t.{isa}", "\t.text"]
    for i in range(count):
        lines += [f"\t.global f{i}", f"\t.type f{i}, %function", "\t.p2align 2", f"f{i}:",
                  "\tpush {r4-r11, lr}", "\tmov r4, r0", "\tmov r5, r1"]
        for r in range(REPEATS):
            lines += [f"\tadd r12, r4, #{(r * 40 + i * 4) % 512}", "\tldm r12, {r0-r3, r6-r11}",
                      "\tadd r0, r0, r1", "\teor r2, r2, r3", f"\tadd r6, r6, #{i % 200}",
                      "\tstm r12, {r0-r3, r6-r11}"]
        # A call to a procedure far away in the image: its copy is megabytes off.
        lines += ["\tsubs r5, r5, #1", "\tble 1f", "\tmov r0, r4", "\tmov r1, r5",
                  f"\tbl f{(i * 7919 + 1) % count}", "1:", "\tldr r0, [r4]", "\tpop {r4-r11, pc}",
                  f"\t.size f{i}, .-f{i}"]
    lines.append('\t.section .note.GNU-stack,"",%progbits')
    return "\n".join(lines) + "\n"


def _table(count: int) -> str:
    names = [f"f{i}" for i in range(count)]
    return ("typedef int (*fn)(int *, int);\n" + "".join(f"extern int {n}(int *, int);\n" for n in names)
            + "fn table[] = {" + ", ".join(names) + "};\n")


def build(isa: str) -> Path:
    """The generated program for ``isa`` ("thumb" or "arm"), dynamic (PIE), built once (cached)."""
    count = FUNCTIONS[isa]
    sources = {"main.c": _MAIN, "table.c": _table(count), "procedures.S": _procedures(isa, count)}
    return build_generated(f"big-{isa}", sources, ["-O1", f"-m{isa}", f"-DFUNCTIONS={count}", f"-DDEPTH={DEPTH}"])


def build_generated(name: str, sources: dict[str, str], flags: list[str]) -> Path:
    """A program of generated ``sources`` (file name -> text) built with gcc ``flags``, once:
    cached as ``<name>-<key>``, its sources kept beside it."""
    cc = build_cache.require_tool(CC, SampleBuildError, "install gcc-arm-linux-gnueabihf")
    key = build_cache.cache_key(build_cache.compiler_identity(cc), "\0".join(flags),
                                *(file + text for file, text in sources.items()))
    out = cache_dir() / f"{name}-{key}"
    if out.is_file():
        return out
    folder = cache_dir() / f"{name}-{key}.src"
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in sources.items():
        (folder / file).write_text(text)
    return build_cache.compile_to([cc, *flags], [str(folder / file) for file in sources], out, SampleBuildError, 0o755)


def accesses(isa: str) -> tuple[int, int]:
    """The loads and stores the generated procedures of ``isa`` make when main calls each once."""
    calls = FUNCTIONS[isa] * DEPTH
    return calls * LOADS_PER_CALL, calls * STORES_PER_CALL
