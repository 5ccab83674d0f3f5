@ Data after calls of an error reporter that returns for some levels and exits for others
@ (PostgreSQL's errfinish after ereport(ERROR)): a stripped program's descent reads on past
@ the call, as past any call that returns, into the words after it. Each of two cold blocks
@ holds a word that reads as ``bvc.n`` into the middle of a 32-bit instruction of main:
@
@ - cold_literal loads its words with literal loads (``ldr rX, [pc, #n]``) after a call: its
@   own reading says they are data (decision 0153);
@ - cold_table reads its word through ``adr`` and an index: nothing says it is not code,
@   and the entry it names (inside main's ``ldr.w``) is as sure as main's code, which runs
@   into it from a call that returns. No jump may be written there.
@
@ main reaches both blocks by branches, as GCC reaches its .cold parts, never taken here.
@ The original prints "value 42 7".
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

    .type get_name, %function
    .thumb_func
get_name:               @ returns
    adds r0, r0, #1
    bx lr

    .type cold_literal, %function
    .thumb_func
cold_literal:
    push {r3, lr}
    movs r0, #21
    bl get_name         @ the loads below are past a call
    ldr r1, word1
    ldr r2, word2
    movs r0, #21
    bl report           @ exits: what follows is data
    .balign 4
word1:
    bvc.n inside1       @ a number that reads as a branch into main's ldr.w below
    .short 0x004d
word2:
    .word 0x004dd4bc

    .type cold_table, %function
    .thumb_func
cold_table:
    push {r3, lr}
    adr r1, table
    ldr r1, [r1, r0, lsl #2]
    movs r0, #22
    bl report           @ exits: what follows is data
    .balign 4
table:
    bvc.n inside2
    .short 0x004d
    .word 0x004dd4bc

    .global main
    .type main, %function
    .thumb_func
main:
    push {r4, lr}
    cmp r0, #100
    bgt.w cold_literal  @ never taken
    cmp r0, #200
    bgt.w cold_table    @ never taken
    .balign 4
    nop
    bl get_name         @ ends 2 bytes past a word boundary
    ldr.w r3, forty_two @ its second halfword, word-aligned, is what word1 names
inside1 = . - 2
    adds r4, r3, #0
    .balign 4
    movs r0, #6
    bl get_name         @ ends 2 bytes past a word boundary
    ldr.w r2, [sp, #0]  @ its second halfword is what the table names
inside2 = . - 2
    movs r2, r0
    movs r1, r4
    ldr r0, =message
    bl printf
    movs r0, #0
    pop {r4, pc}
    .balign 4
forty_two:
    .word 42
    .ltorg

    .section .rodata
message:
    .asciz "value %d %d\n"
    .section .note.GNU-stack,"",%progbits
