@ A Thumb-2 switch in the form clang gives it at -O2 with -mlong-calls or at -O3 (Lua's
@ llex, propagatemark): the table's address is made in a register by ``addw rA, pc, #n``,
@ a constant is moved into another register between it and the jump, and the jump is
@ ``tbh [rA, rI, lsl #1]``, not ``tbh [pc, rI, lsl #1]``. TBH still branches from its own
@ PC, by twice the halfword it reads. The cases are reached through the table alone.
@
@ main classifies the numbers 0..9 and prints the sum of what classify gives: "sum 149".
    .syntax unified
    .thumb
    .text

    .type classify, %function
    .thumb_func
classify:               @ r0 -> a value per case; 0 above the table
    cmp r0, #6
    bhi.w 9f
    adr.w r1, table     @ addw r1, pc, #n
    mov.w r2, #7        @ scheduled between (clang's mov.w r8, #7)
    tbh [r1, r0, lsl #1]
tbh_pc:                 @ what TBH branches from: its address + 4
    nop
    .balign 4
table:
    .short (case0 - tbh_pc) / 2
    .short (case1 - tbh_pc) / 2
    .short (case2 - tbh_pc) / 2
    .short (case3 - tbh_pc) / 2
    .short (case4 - tbh_pc) / 2
    .short (case5 - tbh_pc) / 2
    .short (case6 - tbh_pc) / 2
case0:
    movs r0, #11
    bx lr
case1:
    adds r0, r2, #13    @ 20
    bx lr
case2:
    movs r0, #17
    bx lr
case3:
    movs r0, #19
    b 8f
case4:
    movs r0, #23
    bx lr
case5:
    lsls r0, r2, #2     @ 28
    bx lr
case6:
    movs r0, #29
8:  adds r0, r0, #1     @ 3: 20, 6: 30
    bx lr
9:  movs r0, #0
    bx lr

    .global main
    .type main, %function
    .thumb_func
main:
    push {r4, r5, lr}
    sub sp, #4
    movs r4, #0
    movs r5, #0
1:  mov r0, r4
    bl classify
    add r5, r5, r0
    adds r4, r4, #1
    cmp r4, #10
    bne 1b
    movs r1, r5
    ldr r0, =message
    bl printf
    movs r0, #0
    add sp, #4
    pop {r4, r5, pc}
    .ltorg

    .section .rodata
message:
    .asciz "sum %d\n"
    .section .note.GNU-stack,"",%progbits
