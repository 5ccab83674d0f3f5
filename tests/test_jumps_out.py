"""Relocated code that jumps into code left in place keeps every register (decision 0045).

cachesim relocates only the procedures with a memory access. A procedure that falls
through, branches or jumps to a neighbour without one leaves its copy for the original
code there, and in a stripped program such neighbours are fragments of one function
(Debian's python3.11: ``_PyObject_MakeTpCall`` cut into 20 of them), where any register
may be live across the jump. The jump used to go through IP (what AAPCS lets a call's
veneer clobber), so the neighbour read the jump's own address where it expected its
pointer, and crashed.

Here each function below loads (a cachesim site, so it is relocated), keeps a value in
IP and the flags, then leaves for a neighbour without memory accesses (left in place)
in every way a jump can be written: falling through, B, B<cond>, CBZ, CBNZ and a jump to
a literal, in T32 and A32. The neighbour adds IP to what was loaded, under a condition
on the flags. Oracle: the original's output, and the known answer each line prints.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.run import assert_same_behaviour, instrument, place, run_prog

# Every shape: ``f(p)`` sets IP = p, loads *p, sets Z (cmp ip, ip) and leaves for ``f_to``,
# which returns *p + p when Z is still set, 0 otherwise.
SHAPES = {
    "t_fall": ("thumb", ""),
    "t_b": ("thumb", "b.w .Lt_b_to"),
    "t_beq": ("thumb", "beq.w .Lt_beq_to\n  movs r0, #1\n  bx lr"),
    "t_cbz": ("thumb", "movs r1, #0\n  cmp ip, ip\n  cbz r1, .Lt_cbz_to\n  movs r0, #1\n  bx lr"),
    "t_cbnz": ("thumb", "movs r1, #1\n  cmp ip, ip\n  cbnz r1, .Lt_cbnz_to\n  movs r0, #1\n  bx lr"),
    "t_lit": ("thumb", "ldr.w pc, 1f\n  .p2align 2\n1: .word t_lit_to"),
    "a_fall": ("arm", ""),
    "a_b": ("arm", "b .La_b_to"),
    "a_beq": ("arm", "beq .La_beq_to\n  mov r0, #1\n  bx lr"),
    "a_lit": ("arm", "ldr pc, 1f\n1: .word a_lit_to"),
}


def _function(name: str, isa: str, leave: str) -> str:
    head = ".thumb\n.thumb_func\n" if isa == "thumb" else ".arm\n"
    to_head = ".thumb_func\n" if isa == "thumb" else ""
    it = "ite eq\n  " if isa == "thumb" else ""
    return (f".p2align 2\n{head}.global {name}\n.type {name}, %function\n{name}:\n"
            f"  mov ip, r0\n  ldr r0, [r0]\n  cmp ip, ip\n  {leave}\n.size {name}, . - {name}\n"
            f"{to_head}.global {name}_to\n.type {name}_to, %function\n{name}_to:\n.L{name}_to:\n"
            f"  {it}addeq r0, r0, ip\n  movne r0, #0\n  bx lr\n.size {name}_to, . - {name}_to\n")


SOURCE = (
    "#include <stdio.h>\n"
    + "".join(f"unsigned {name}(unsigned *p);\n" for name in SHAPES)
    + "__asm__(\".syntax unified\\n.text\\n\"\n"
    + "".join("\"" + line.replace("\"", "\\\"") + "\\n\"\n"
              for name, (isa, leave) in SHAPES.items() for line in _function(name, isa, leave).splitlines())
    + ");\n"
    "static unsigned cell = 41;\n"
    "int main(void) {\n"
    "    unsigned (*const fns[])(unsigned *) = {" + ", ".join(SHAPES) + "};\n"
    "    const char *const names[] = {" + ", ".join(f'"{n}"' for n in SHAPES) + "};\n"
    "    int bad = 0;\n"
    "    for (unsigned i = 0; i < sizeof fns / sizeof fns[0]; i++) {\n"
    "        unsigned got = fns[i](&cell) - (unsigned)&cell;\n"
    "        printf(\"%s %u\\n\", names[i], got);\n"
    "        bad += got != cell;\n"
    "    }\n"
    "    return bad;\n"
    "}\n"
)


@pytest.mark.parametrize("pie", [True, False], ids=["pie", "fixed"])
def test_jumps_into_code_left_in_place_keep_ip_and_flags(pie: bool, tmp_path: Path) -> None:
    source = tmp_path / "jumps_out.c"
    source.write_text(SOURCE)
    binary = tmp_path / "jumps_out"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", "-mthumb", *([] if pie else ["-no-pie"]), str(source),
                    "-o", str(binary)], check=True)
    original = run_prog(place(binary, tmp_path, "orig"))
    assert original.returncode == 0, original.stdout
    assert original.stdout.decode().split("\n")[:-1] == [f"{name} 41" for name in SHAPES]
    inst = run_prog(instrument(binary, "cachesim", tmp_path))
    assert_same_behaviour(original, inst)
