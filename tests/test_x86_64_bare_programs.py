"""x86-64 programs that tell little about their code (decision 0148).

- Without symbols or unwind tables (Free Pascal's, tcc's, assembly), a program names no
  function but its entry: the entry's procedure reached to the end of the code and took
  every function it called for its own code (Debian's Free Pascal compiler: one procedure
  of 515,742 instructions), and its descent looked back over all of it for each indirect
  jump (a static sort: 22 s to load). Each function called inside a procedure without a
  size now starts a procedure of its own.
- A word in data that only looks like an address of code, pointing into the middle of an
  instruction (Free Pascal's string constant 'TMP', 0x504d54), was decoded as code: from
  there the bytes read as a RIP-relative store below address 0, whose copy cannot be
  written, and the whole program was refused. Such a word is no code now.

Oracles: qemu's count of the program's own instructions; the symbols of the same build
before it was stripped; the original's behaviour.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from rewriter.ir.elf_loader import load_binary
from tests.support import samples
from tests.support.run import instrument, place
from tests.test_x86_64_counts import _assert_inscount_exact


def test_a_program_without_symbols_or_unwind_tables(tmp_path: Path) -> None:
    built = samples.build_x86_64("sort", "x64-gcc-O2-static")
    bare = tmp_path / "bare"
    subprocess.run(["objcopy", "--strip-all", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                    str(built), str(bare)], check=True)
    lifted = load_binary(str(bare))
    starts = {proc.address for proc in lifted.procedures}
    functions = {proc.address for proc in load_binary(str(built)).procedures}
    called = {ins.branch_target for proc in lifted.procedures for ins in proc.instructions()
              if ins.is_call and ins.branch_target in functions}
    assert len(called) > 300 and called <= starts, sorted(hex(a) for a in called - starts)[:8]
    _assert_inscount_exact(bare, [], tmp_path)


POINTER_INTO_AN_INSTRUCTION = r"""
        .text
        .globl main
main:
        movabs $0x9090900000001d88, %rax   # from main+2: 88 1d 00 00 00 90, mov [rip - 0x70000000], bl
        xor %eax, %eax
        lea msg(%rip), %rdi
        push %rbx
        call puts
        pop %rbx
        mov $3, %eax
        ret
        .section .rodata
        .p2align 3
        .quad 3
        .quad main+2
msg:    .asciz "hello"
"""


def test_a_word_in_data_that_points_into_an_instruction(tmp_path: Path) -> None:
    source = tmp_path / "pointer.s"
    source.write_text(POINTER_INTO_AN_INSTRUCTION)
    program = tmp_path / "pointer"
    subprocess.run(["gcc", "-no-pie", "-s", str(source), "-o", str(program)], check=True)
    _assert_inscount_exact(program, [], tmp_path)


NUMBER_BEFORE_A_METHOD = r"""
        .text
        .globl main
main:
        push %rbx
        lea msg(%rip), %rdi
        call *methods+8(%rip)      # f2(msg): through its method table, as Free Pascal calls
        mov %eax, %ebx
        lea msg(%rip), %rdi
        call *methods(%rip)        # f1(msg)
        lea (%rax,%rbx,2), %esi
        lea fmt(%rip), %rdi
        xor %eax, %eax
        call printf
        xor %eax, %eax
        pop %rbx
        ret
        .p2align 4
f1:     movzbl 4(%rdi), %eax
        sub $2, %eax
        cmp $3, %eax
        setb %al
        movzbl %al, %eax
        ret
        .p2align 4, 0              # zeros before the method, as Free Pascal aligns them
f2:     lea -8(%rsp), %rsp         # from f2 - 1: 00 48 8d, add [rax - 0x73], cl
        mov %rdi, %rax
        movzbl (%rax), %eax
        lea 8(%rsp), %rsp
        ret
        .data
        .p2align 3
methods: .quad f1, f2
opcodes: .quad 3, f2 - 1, 7        # an opcode template whose bytes read as the address before f2
msg:    .asciz "hello"
fmt:    .asciz "result %d\n"
        .section .note.GNU-stack, "", @progbits
"""


def test_a_number_in_data_just_before_a_method(tmp_path: Path) -> None:
    """Free Pascal's compiler (Debian's ppcx64, stripped, no unwind tables) holds, in its
    x86 opcode table, 0x487c0f: one byte before a method at 0x487c10, on the zero that
    aligns it. Both are words in data inside one procedure found around them; the lower
    was descended first, its first instruction took the method's first bytes, and its
    entry jump was written over the method's entry: every copy crashed in its first
    compilation. The most aligned address is descended first now, and the number's
    reading, which would overlap it, adds nothing."""
    source = tmp_path / "near.s"
    source.write_text(NUMBER_BEFORE_A_METHOD)
    program = tmp_path / "near"
    subprocess.run(["gcc", "-no-pie", "-s", str(source), "-o", str(program)], check=True)
    _assert_inscount_exact(program, [], tmp_path)


def test_signal_return_trampoline_of_a_stripped_static_program(tmp_path: Path) -> None:
    """glibc's ``__restore_rt`` (where every handler returns) has an FDE that starts one
    byte before it, on the padding (``.LSTART - 1``, for unwinders that look up a return
    address less one). A stripped program names nothing else there: that byte was taken
    for a procedure's entry, whose jump was written over ``__restore_rt``, and the copy
    crashed as its first handler returned (Debian's busybox and zsh-static, every tool).
    The procedure starts where the code does; samples/handler_read_back.c's stripped copy
    behaves as the original."""
    built = samples.build_x86_64("handler_read_back", "x64-gcc-O2-static")
    stripped = tmp_path / "stripped"
    subprocess.run(["strip", "-o", str(stripped), str(built)], check=True)
    restorer = load_binary(str(built)).symbols["__restore_rt"]
    starts = {proc.address for proc in load_binary(str(stripped)).procedures}
    assert restorer in starts and restorer - 1 not in starts
    placed = place(stripped, tmp_path, "orig")
    original = subprocess.run([str(placed)], capture_output=True, cwd=placed.parent, timeout=60)
    assert original.returncode == 0 and b"value 4242" in original.stdout, original
    for tool in ("inscount", "cachesim"):
        copy = instrument(stripped, tool, tmp_path, slot=tool[:4])
        done = subprocess.run([str(copy)], capture_output=True, cwd=copy.parent, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (original.returncode, original.stdout,
                                                               original.stderr), tool
