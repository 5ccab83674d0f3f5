@ A literal pool after a call of an error reporter that returns for some levels and exits
@ for others (Lua's luaX_syntaxerror as clang -O3 -flto leaves it): a stripped program's
@ descent reads on past the call into the pool, whose first word reads as the T32
@ ``strd pc, pc, [r1, #0x3f0]``. T32 defines no store of PC: the word is data, and the
@ descent must end there instead of handing relocation a form it cannot move, which left
@ the whole procedure (``sum``, which runs 1,000 times) uninstrumented.
@
@ The original prints "sum 499500".
    .syntax unified
    .thumb
    .text

    .type report, %function
    .thumb_func
report:                 @ returns for a level below 20, exits otherwise
    cmp r0, #20
    bge 1f
    bx lr
1:  movs r0, #3
    bl exit

    .type sum, %function
    .thumb_func
sum:                    @ r0 + r1, or the report when r1 is negative
    cmp r1, #0
    blt 1f
    adds r0, r0, r1
    bx lr
1:  push {r3, lr}
    movs r0, #21
    bl report           @ exits: what follows is data
    .balign 4
    .short 0xe9c1, 0xfffc   @ reads as strd pc, pc, [r1, #0x3f0]
    .word 0x12345678

    .global main
    .type main, %function
    .thumb_func
main:
    push {r4, r5, r6, lr}
    movs r4, #0
    movs r5, #0
    movw r6, #1000
2:  movs r0, r4
    movs r1, r5
    bl sum
    movs r4, r0
    adds r5, r5, #1
    cmp r5, r6
    bne 2b
    movs r1, r4
    ldr r0, =message
    bl printf
    movs r0, #0
    pop {r4, r5, r6, pc}
    .ltorg

    .section .rodata
message:
    .asciz "sum %d\n"
    .section .note.GNU-stack,"",%progbits
