"""x86-64 switches of more than MAX_ENTRIES cases whose bounds check is far from the jump.

Debian's cc1 (gcc 12) has a switch of 1,704 cases whose bounds check sits 14 instructions
before its jump, past a shrink-wrapped prologue's pushes and moves: the check was looked for
in the 12 instructions before the jump only, the table was read as unbounded, up to 1,024
entries, and the copy's table of its cases (decision 0133) sent the other 680 into whatever
followed it: the copy crashed compiling any array index. The programs here are generated:
``f(k, a)`` switches on ``k`` over CASES cases, each returning a different sum, and ``main``
adds up ``f(k, argc) * (k + 1)`` over every case. Oracles: the original's output, and QEMU's
count of the executed instructions (tests/test_x86_64_counts.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rewriter.arch.x86_64.jump_tables import FAR_LOOK_BACK, LOOK_BACK, MAX_ENTRIES
from tests.test_x86_64_counts import _assert_inscount_exact

CASES = 1100
MAIN = f"""#include <stdio.h>
long f(long k, long a);
int main(int argc, char **argv) {{
    (void)argv;
    long s = 0;
    for (long k = 0; k < {CASES}; k++)
        s += f(k, argc) * (k + 1);
    printf("%ld\\n", s);
    return 0;
}}
"""
SAVES = ["push %r15", "push %r14", "push %r13", "push %r12", "push %rbp", "push %rbx",
         "mov %rsi,%r15", "mov %rsi,%r14", "mov %rsi,%r13", "mov %rsi,%r12", "mov %rsi,%rbp", "mov %rsi,%rbx",
         "sub $8,%rsp"]
assert LOOK_BACK < len(SAVES) + 1 < FAR_LOOK_BACK and CASES > MAX_ENTRIES


def _source(pic: bool, bounded: bool = True) -> str:
    """``f`` in assembly: the bounds check (``bounded``), the saves, the switch (``pic``: a
    table of 32-bit offsets read by ``movslq``, else absolute addresses read by the jump)."""
    check = [f"cmp ${CASES - 1},%rdi", "ja .Ldefault"] if bounded else []
    lines = [".text", ".globl f", ".type f,@function", "f:", *check, *SAVES]
    if pic:
        lines += ["lea .Ltable(%rip),%rdx", "movslq (%rdx,%rdi,4),%rax", "add %rdx,%rax", "jmp *%rax"]
    else:
        lines += ["jmp *.Ltable(,%rdi,8)"]
    for k in range(CASES):
        lines += [f".Lcase{k}:", f"lea {3 * k + 1}(%rbx),%rax", "jmp .Lout"]
    lines += [".Lout:", "add $8,%rsp", "pop %rbx", "pop %rbp", "pop %r12", "pop %r13", "pop %r14", "pop %r15", "ret",
              ".Ldefault:", "xor %eax,%eax", "ret", ".size f, .-f", ".section .rodata", ".align 8", ".Ltable:"]
    lines += [f".long .Lcase{k}-.Ltable" if pic else f".quad .Lcase{k}" for k in range(CASES)]
    return "\n".join(lines) + "\n"


def _built(tmp_path: Path, pic: bool, bounded: bool = True) -> Path:
    (tmp_path / "main.c").write_text(MAIN)
    (tmp_path / "f.s").write_text(_source(pic, bounded))
    program = tmp_path / "built"
    subprocess.run(["gcc", "-O1", *([] if pic else ["-fno-pie", "-no-pie"]), "main.c", "f.s", "-o", str(program)],
                   cwd=tmp_path, check=True, capture_output=True)
    return program


@pytest.mark.parametrize("pic", [False, True], ids=["absolute", "pic"])
def test_long_switch_with_a_far_bound_is_copied_whole(pic: bool, tmp_path: Path) -> None:
    """Every case found and counted: inscount per procedure is QEMU's count."""
    _assert_inscount_exact(_built(tmp_path, pic), [], tmp_path)


@pytest.mark.parametrize("pic", [False, True], ids=["absolute", "pic"])
def test_long_switch_without_a_bound_reads_the_original_table(pic: bool, tmp_path: Path) -> None:
    """No bounds check: the table is read up to MAX_ENTRIES, and may go on, so its copy is
    not made and the copied jump reads the original table; the copy behaves as the
    original (it crashed: the cases past the cap went wherever the copy's table ran on)."""
    program = _built(tmp_path, pic, bounded=False)
    copy = tmp_path / "copy"
    subprocess.run(["anvil", "instrument", "--tool", "inscount", str(program), "-o", str(copy)], check=True,
                   capture_output=True)
    runs = [subprocess.run([str(p)], cwd=tmp_path, capture_output=True, timeout=60) for p in (program, copy)]
    assert runs[0].returncode == 0 and runs[0].stdout.strip()
    assert (runs[1].returncode, runs[1].stdout) == (runs[0].returncode, runs[0].stdout)
