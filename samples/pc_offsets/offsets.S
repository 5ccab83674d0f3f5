@ An offset that a PC-relative add takes, equal to a place inside a function
@ (tests/test_pc_offsets.py, decision 0113).
@
@ GHC's A32 code (LLVM, fixed address) names its strings and continuations as
@ ``ldr rX, =offset; add rX, pc, rX``. An offset is a number: where it equals an address in
@ the text, the descent took it for an A32 function named in a literal pool, like g's
@ address here. offset_user's offset is f_add, the place in f after its first literal load.
@ f is named PC-relatively in g, which only a literal names: the descent reached g and took
@ f_add for an entry in one round, found f in the next and cut it in two at f_add; f's
@ descent lost the PC-relative pair that names its continuation, cont, which then ran in
@ place, uncounted.
    .section .note.GNU-stack,"",%progbits
    .syntax unified
    .arm
    .text
    .global run_f
    .type run_f, %function
run_f:                         @ g(r0), through its address in a literal
    push {r4, lr}
    ldr r3, .Lg
    blx r3
    pop {r4, pc}
.Lg:
    .word g
    .size run_f, . - run_f

    .type g, %function
g:                             @ f(r0), through its address computed PC-relative
    push {r4, lr}
    ldr r3, .Lf
.Lg_add:
    add r3, pc, r3
    blx r3
    pop {r4, pc}
.Lf:
    .word f - (.Lg_add + 8)
    .size g, . - g

    .global offset_user
    .type offset_user, %function
offset_user:                   @ the PC plus an offset whose value is f_add's address
    ldr r0, .Loffset
.Lpc:
    add r0, pc, r0
    bx lr
.Loffset:
    .word f_add
    .size offset_user, . - offset_user

    .type f, %function
f:                             @ step(r0 + 1) with cont as where step goes on
    push {r4, lr}
    ldr r1, .Lcont
f_add:
    add r1, pc, r1
    add r0, r0, #1
    ldr r2, .Lstep
    ldr r3, [r2]
    bx r3
.Lcont:
    .word cont - (f_add + 8)
    .word 0x00000001           @ an info table: layout, closure type
    .word 0x0000001e
cont:                          @ adds 100 + 99 + ... + 1, returns
    mov r2, #100
1:  add r0, r0, r2
    subs r2, r2, #1
    bne 1b
    pop {r4, pc}
.Lstep:
    .word step_pointer
    .size f, . - f

    .type step, %function
step:                          @ r0 * 2, then on to r1
    lsl r0, r0, #1
    bx r1
    .size step, . - step

    .data
    .balign 4
step_pointer:
    .word step
