@ The shape of GNAT's Namet.Name_Find (Debian's gnatprep): an 8-byte constant read by
@ ``adr; ldrd`` from the literal pool after the function's last instruction, a call of a
@ function that never returns (though no list of names says so). A stripped program's
@ descent reads on past the call into the pool, and the word the ADR points at became the
@ call's return site.
    .syntax unified
    .thumb
    .text
    .global init_entry
    .type init_entry, %function
    .thumb_func
init_entry:             @ r0 = where to store the 8-byte default, r1 = 0 (else: fail)
    push {r4, lr}
    cbnz r1, 1f
    adr r2, .Ldefault
    ldrd r2, r3, [r2]
    strd r2, r3, [r0]
    movs r0, #0
    pop {r4, pc}
1:  mov r0, r1
    bl fail             @ never returns: what follows is data
    .p2align 2
.Ldefault:
    .word 0xe8287c01, 0x00000017
    .size init_entry, . - init_entry
    .section .note.GNU-stack,"",%progbits
