"""Kinds of program the first corpus lacked (decision 0063): Debian's C++ tools built on
libstdc++ and a PIE linked with text relocations.

Each instrumented copy must behave as the original does, and inscount must count exactly
what qemu counts in the executable (the oracle: ``qemu-arm -singlestep -d exec``).

- ninja: libstdc++'s ``std::__throw_length_error`` was not known never to return; the
  literal pool after a call of it, decoded as code, branched into a switch's table, where
  a procedure was made and its entry's jump written over the table.
- re2c: ``__cxa_end_cleanup`` (the end of every ARM EHABI cleanup pad) was not known
  never to return; a branch in the bytes after it split a function in the middle of an
  instruction.
- a PIE with text relocations (DT_TEXTREL, as OCaml's are): its literal pools hold
  addresses the dynamic linker writes at load time; copies took the file's values.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.corpus import CORPUS, environment, fetch, prepare
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import CC, stripped


@pytest.mark.parametrize("name", ["ninja", "re2c"])
def test_cxx_tool_transparent_and_counted(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = CORPUS[name]
    binary, root = fetch(program)
    env = environment(program, root)
    placed = place(binary, tmp_path, "orig")
    prepare(program, placed.parent, binary, env)
    original = run_prog(placed, program.args, program.stdin, env=env)
    assert original.returncode == 0 and original.stdout, original.stderr
    monkeypatch.chdir(placed.parent)  # the trace runs where the workload's files are
    trace = trace_pcs(placed, program.args, program.stdin, env=env)
    assert trace.stdout == original.stdout
    executed = exe_pcs(trace, placed)

    copy = instrument(binary, "inscount", tmp_path)
    prepare(program, copy.parent, binary, env)
    run = run_prog(copy, program.args, program.stdin, env=env, like_trace=True)
    assert_same_behaviour(original, run)
    assert results(run, "inscount")["total"] == sum(executed.values())


#: The start of a Thumb assembly program: its ``main``.
THUMB_MAIN = """\
    .syntax unified
    .thumb
    .text
    .global main
    .type main, %function
    .thumb_func
main:
"""

TEXTREL_ASM = THUMB_MAIN + """\
    push {r4, lr}
    ldr r0, =message        @ literal pool words the dynamic linker relocates (R_ARM_RELATIVE)
    bl puts
    ldr r4, =counter
    ldr r0, [r4]
    adds r0, r0, #5
    pop {r4, pc}
    .ltorg
    .data
message: .asciz "text relocations"
counter: .word 37
    .section .note.GNU-stack,"",%progbits
"""


@pytest.mark.parametrize("strip", [False, True], ids=["symbols", "stripped"])
def test_text_relocated_literals(strip: bool, tmp_path: Path) -> None:
    source = tmp_path / "main.s"
    source.write_text(TEXTREL_ASM)
    built = tmp_path / "textrel"
    subprocess.run([CC, "-pie", "-fPIE", "-Wl,-z,notext", str(source), "-o", str(built)], check=True,
                   capture_output=True)
    dynamic = subprocess.run(["arm-linux-gnueabihf-readelf", "-d", str(built)], capture_output=True, text=True,
                             check=True).stdout
    assert "TEXTREL" in dynamic  # what the test is about
    binary = stripped(built, tmp_path / "textrel.stripped") if strip else built
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert (original.stdout, original.returncode) == (b"text relocations\n", 42)
    executed = exe_pcs(trace_pcs(placed), placed)

    run = run_prog(instrument(binary, "inscount", tmp_path), like_trace=True)
    assert_same_behaviour(original, run)
    assert results(run, "inscount")["total"] == sum(executed.values())


#: OCaml's pattern (ocp-indent, decision 0065): a call of a function that returns elsewhere
#: (``caml_raise_exn``: ``pop {pc}`` to the exception handler) followed by a literal pool,
#: and the return address after it in a table in data (OCaml's frame tables, which the GC
#: and backtraces look return addresses up in), relocated in a PIE with the Thumb bit. A
#: word of the pool reads as a CBZ into the second halfword of the next function's first
#: ``str.w``.
RETURN_ADDRESS_ASM = THUMB_MAIN + """\
    push {r4, lr}
    movs r0, #4
    bl g
    mov r4, r0
    bl try_body             @ LR: the handler, the next instruction (OCaml's trap set-up)
handler:                    @ where raise_to "returns"
    movs r0, #10
    bl g
    add r0, r0, r4
    pop {r4, pc}

    .type try_body, %function
    .thumb_func
try_body:
    push {lr}               @ the trap: the handler's address
    mov r0, sp
    bl f
    pop {pc}

    .type f, %function
    .thumb_func
f:
    ldr r1, pool
    bl raise_to
after_raise:                @ never reached, but in the frame table
    nop
    .p2align 2
pool:
    cbz r0, g + 4           @ a pool word: reads as a CBZ into g's str.w
    .short 0

    .type g, %function
    .thumb_func
g:
    sub sp, #8
    str.w lr, [sp, #4]
    adds r0, r0, #3
    lsls r0, r0, #1
    ldr.w lr, [sp, #4]
    add sp, #8
    bx lr

    .type raise_to, %function
    .thumb_func
raise_to:
    mov sp, r0
    pop {pc}

    .data
frametable:
    .word after_raise + 1
    .section .note.GNU-stack,"",%progbits
"""


def test_return_address_in_data_is_no_surer_than_its_code(tmp_path: Path) -> None:
    """A Thumb code address in relocated data right after a call is a return address: an
    entry, but its descent's reading of the pool behind it must not outrank the next
    function's own (stripped: the descent decides). Before, the pool's CBZ made an entry at
    g + 4, g's copy ended after its first instruction and ran on in the original, where the
    entry's jump had been written: SIGILL, as ocp-indent's SIGSEGV."""
    source = tmp_path / "raise.s"
    source.write_text(RETURN_ADDRESS_ASM)
    built = tmp_path / "raise"
    subprocess.run([CC, "-pie", "-fPIE", str(source), "-o", str(built)], check=True, capture_output=True)
    binary = stripped(built, tmp_path / "raise.stripped")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 2 * (4 + 3) + 2 * (10 + 3)
    executed = exe_pcs(trace_pcs(placed), placed)

    run = run_prog(instrument(binary, "inscount", tmp_path), like_trace=True)
    assert_same_behaviour(original, run)
    assert results(run, "inscount")["total"] == sum(executed.values())
