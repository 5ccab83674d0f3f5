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

from rewriter.arch.x86_64.jump_tables import switch_table
from rewriter.ir.elf_loader import load_binary
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



# Two switches back to back (PHP's printf engine): the code between them is reached from
# the first's cases.
SWITCHES_BACK_TO_BACK = r"""
        .text
        .globl main
main:
        push %rbx
        xor %ebx, %ebx
        mov $2, %edx
        mov $1, %eax
        cmp $6, %al              # switch 1: 7 entries
        ja next
        lea table1(%rip), %rdi
        movsxd (%rdi,%rax,4), %rax
        add %rdi, %rax
        jmp *%rax
second:                          # (from switch 1's cases)
        xor %eax, %eax
        cmp $19, %dl       # switch 2: 20 entries
        ja next
jump2:  movzbl %dl, %ecx
        lea table2(%rip), %rdi
        movsxd (%rdi,%rcx,4), %rcx
        add %rdi, %rcx
        jmp *%rcx
a0:     add $1, %ebx
        jmp second
a1:     add $2, %ebx
        jmp second
a2:     add $3, %ebx
        jmp second
a3:     add $4, %ebx
        jmp second
a4:     add $5, %ebx
        jmp second
a5:     add $6, %ebx
        jmp second
a6:     add $7, %ebx
        jmp second
b0:     add $100, %ebx
        jmp next
b1:     add $101, %ebx
        jmp next
b2:     add $102, %ebx
        jmp next
b3:     add $103, %ebx
        jmp next
b4:     add $104, %ebx
        jmp next
b5:     add $105, %ebx
        jmp next
b6:     add $106, %ebx
        jmp next
b7:     add $107, %ebx
        jmp next
b8:     add $108, %ebx
        jmp next
b9:     add $109, %ebx
        jmp next
b10:     add $110, %ebx
        jmp next
b11:     add $111, %ebx
        jmp next
b12:     add $112, %ebx
        jmp next
b13:     add $113, %ebx
        jmp next
b14:     add $114, %ebx
        jmp next
b15:     add $115, %ebx
        jmp next
b16:     add $116, %ebx
        jmp next
b17:     add $117, %ebx
        jmp next
b18:     add $118, %ebx
        jmp next
b19:     add $119, %ebx
        jmp next
next:
        mov %ebx, %eax
        pop %rbx
        ret
        .section .rodata
        .p2align 2
table1:
        .long a0 - table1
        .long a1 - table1
        .long a2 - table1
        .long a3 - table1
        .long a4 - table1
        .long a5 - table1
        .long a6 - table1
table2:
        .long b0 - table2
        .long b1 - table2
        .long b2 - table2
        .long b3 - table2
        .long b4 - table2
        .long b5 - table2
        .long b6 - table2
        .long b7 - table2
        .long b8 - table2
        .long b9 - table2
        .long b10 - table2
        .long b11 - table2
        .long b12 - table2
        .long b13 - table2
        .long b14 - table2
        .long b15 - table2
        .long b16 - table2
        .long b17 - table2
        .long b18 - table2
        .long b19 - table2
"""


def test_a_switch_right_after_another_takes_its_own_bound(tmp_path: Path) -> None:
    """The bound of a table is looked for in the instructions below its jump. Where the
    descent reached the second switch before the code between the two (PHP's
    ``format_converter``: another branch leads to it), the nearest compare below was the
    first switch's, past its jump, which does not fall through: the second table got 7
    entries of its 20 (PHP's: 47 of 121), and the copy's table ended early (every tool's copy
    of php crashed at start-up). The second switch's jump, given the instructions below it
    without that code, finds all its cases: those of the source."""
    source = tmp_path / "switches.s"
    source.write_text(SWITCHES_BACK_TO_BACK)
    program = tmp_path / "switches"
    subprocess.run(["gcc", "-pie", "-s", str(source), "-o", str(program)], check=True)
    binary = load_binary(str(program))
    found = sorted({ins.address: ins for proc in binary.procedures for ins in proc.instructions()}.items())
    jumps = [ins for _, ins in found if ins.name == "jmp" and ins.is_indirect and not ins.op_str.startswith("q")]
    first, second = jumps[-2:]
    between = {address for address, ins in found if first.end <= address and ins.end <= second.address
                and ins.name in ("xor", "cmp", "ja")}
    below = [ins for address, ins in reversed(found) if address < second.address and address not in between]
    table = switch_table(below, second, binary.read, lambda address: any(
        lo <= address < hi for lo, hi in [(p.address, p.end) for p in binary.procedures]))
    assert table is not None and len(table.targets) >= 20, table
    assert set(table.targets[:20]) == set(binary.switch_cases[second.address])
