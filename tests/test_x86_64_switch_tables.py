"""x86-64 switches whose cases are shorter than a jump (decision 0133).

clang's cases are often one instruction and a ``ret`` (4 bytes): no 5-byte jump over the
original sends a case to its copy, and a copied switch jumped through the original table
into the original code, which ran uncounted (x64_big_switch: 13 of 20 cases). A copy's
switch now reads a table of the copies' cases, through the same instruction with only its
displacement changed: inscount counts every case as qemu does (tests/test_x86_64_counts.py
CASES, clang's builds among them), and a tool that traces the table's read sees the
original table's address, here checked against the number of times qemu runs the jump."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import capstone
import pytest
from elftools.elf.elffile import ELFFile

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support import x86_64_traces as traces
from tests.test_x86_64_counts import _assert_inscount_exact


def _switch_jump(program: Path) -> int:
    """The link address of big_switch's indirect jump (its symbol, capstone)."""
    with program.open("rb") as f:
        elf = ELFFile(f)
        symbol = next(s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name == "big_switch")
        text = elf.get_section_by_name(".text")
        start = symbol["st_value"] - text["sh_addr"] + text["sh_offset"]
        f.seek(start)
        code = f.read(symbol["st_size"])
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return next(address for address, _, name, operand in md.disasm_lite(code, symbol["st_value"])
                if name == "jmp" and not operand.startswith("0x"))


@pytest.mark.parametrize("variant", ["x64-clang-O2", "x64-clang-O2-large", "x64-gcc-O2-large"])
def test_table_reads_traced_at_the_original_table(variant: str, tmp_path: Path) -> None:
    program = tmp_path / "a" / "prog"
    program.parent.mkdir()
    shutil.copy(samples.build_x86_64("x64_big_switch", variant), program)
    dispatches = exe_pcs(trace_pcs(program, [], cwd=tmp_path), program)[_switch_jump(program)]
    assert dispatches >= 20
    copied = traces.memtrace(program, tmp_path)
    runs = [subprocess.run(["setarch", "-R", str(p)], capture_output=True, timeout=60, cwd=copied.parent,
                           env={"PATH": "/usr/bin:/bin"}) for p in (program, copied)]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    base = traces.load_address(["setarch", "-R", str(program)], program)
    with program.open("rb") as f:
        rodata = ELFFile(f).get_section_by_name(".rodata")
        lo, hi = rodata["sh_addr"], rodata["sh_addr"] + rodata["sh_size"]
    loads = [ea - base for _, ea, _, kind in traces.trace(copied.parent / "prog.memtrace.out") if kind == "L"]
    assert sum(lo <= ea < hi for ea in loads) == dispatches


# GHC's runtime (Debian's alex, every copy crashed): the compare right before the jump is a
# lower bound, the upper one is in a block elsewhere.
LOWER_BOUND_SWITCH = r"""
        .text
        .globl main
main:
        push %rbx
        xor %ebx, %ebx
        mov $8, %ecx
loop:
        cmp $0x1d, %rcx          # the upper bound, in a block of its own
        jae done
        jmp check
done:
        lea fmt(%rip), %rdi
        mov %rbx, %rsi
        xor %eax, %eax
        call printf
        pop %rbx
        xor %eax, %eax
        ret
check:
        cmp $8, %rcx             # a lower bound: the table is reached where rcx >= 8
        jb done
        mov %rcx, %rax
        add $-8, %rax
        jmp *table(,%rax,8)
case0:  add $3, %rbx
        jmp next
case1:  add $10, %rbx
        jmp next
case2:  add $17, %rbx
        jmp next
case3:  add $24, %rbx
        jmp next
case4:  add $31, %rbx
        jmp next
case5:  add $38, %rbx
        jmp next
case6:  add $45, %rbx
        jmp next
case7:  add $52, %rbx
        jmp next
case8:  add $59, %rbx
        jmp next
case9:  add $66, %rbx
        jmp next
case10:  add $73, %rbx
        jmp next
case11:  add $80, %rbx
        jmp next
case12:  add $87, %rbx
        jmp next
case13:  add $94, %rbx
        jmp next
case14:  add $101, %rbx
        jmp next
case15:  add $108, %rbx
        jmp next
case16:  add $115, %rbx
        jmp next
case17:  add $122, %rbx
        jmp next
case18:  add $129, %rbx
        jmp next
case19:  add $136, %rbx
        jmp next
case20:  add $143, %rbx
        jmp next
next:
        inc %rcx
        jmp loop
        .section .rodata
        .p2align 3
table:
        .quad case0
        .quad case1
        .quad case2
        .quad case3
        .quad case4
        .quad case5
        .quad case6
        .quad case7
        .quad case8
        .quad case9
        .quad case10
        .quad case11
        .quad case12
        .quad case13
        .quad case14
        .quad case15
        .quad case16
        .quad case17
        .quad case18
        .quad case19
        .quad case20
fmt:    .asciz "sum %ld\n"
"""


def test_a_compare_before_the_table_that_is_a_lower_bound(tmp_path: Path) -> None:
    """``cmp rcx, 8; jb ...; add rax, -8; jmp [table + rax*8]`` reaches the table where rcx
    >= 8: the compare says nothing of the table's length (21 entries here), which was
    taken for 8, so that the copy's table ended early and the copy of a case past it went
    elsewhere. Every case is counted as qemu runs it, and the copy prints the same sum."""
    source = tmp_path / "switch.s"
    source.write_text(LOWER_BOUND_SWITCH)
    program = tmp_path / "switch"
    subprocess.run(["gcc", "-no-pie", "-s", str(source), "-o", str(program)], check=True)
    _assert_inscount_exact(program, [], tmp_path)


# OCaml's switch: the entry read is added into the register that held the table's address.
OCAML_SWITCH = r"""
        .text
        .globl main
main:
        push %rbx
        xor %ebx, %ebx
        mov $6, %ecx
1:      mov %ecx, %eax
        lea table(%rip), %rdx
        movslq (%rdx,%rax,4), %rax
        add %rax, %rdx
        jmp *%rdx
case0:  add $3, %ebx
        jmp 2f
case1:  add $5, %ebx
        jmp 2f
case2:  add $7, %ebx
        jmp 2f
case3:  add $11, %ebx
2:      dec %ecx
        jns 1b
        lea fmt(%rip), %rdi
        mov %ebx, %esi
        xor %eax, %eax
        call printf
        pop %rbx
        xor %eax, %eax
        ret
        .section .rodata
        .p2align 2
table:  .long case0 - table, case1 - table, case2 - table, case3 - table
        .long case2 - table, case1 - table, case0 - table
fmt:    .asciz "sum %d\n"
"""

def _assemble(source: str, tmp_path: Path) -> Path:
    """``source`` assembled and linked as a stripped PIE."""
    path = tmp_path / "program.s"
    path.write_text(source)
    program = tmp_path / "program"
    subprocess.run(["gcc", "-pie", "-s", str(path), "-o", str(program)], check=True)
    return program


def test_a_switch_that_adds_the_entry_to_the_tables_address(tmp_path: Path) -> None:
    """OCaml's switches add the entry read into the register that held the table's address
    and jump through that (``lea rdx, [table]; movsxd rax, [rdx + rax*4]; add rdx, rax;
    jmp rdx``): the table was not found, and the copy jumped to the original cases, whose
    code ran from there and went into the middle of a jump written over the original
    (Debian's menhir crashed at start-up under every tool). Every case is counted as qemu
    runs it."""
    _assert_inscount_exact(_assemble(OCAML_SWITCH, tmp_path), [], tmp_path)

