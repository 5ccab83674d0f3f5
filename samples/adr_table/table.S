@ A switch through a table of absolute addresses (tests/test_adr_table.py).
@
@ GCC's Thumb-2 switch in a fixed-address program, where a case lies before the table
@ (TBB and TBH reach forward only): ``adr rT, table`` (read as ``add rT, pc, #n``), then
@ ``ldr pc, [rT, rI, lsl #2]`` through words that hold the cases' addresses, Thumb bit set
@ (cc1's try_shrink_wrapping). Here case 2 is reached through the table alone.
    .section .note.GNU-stack,"",%progbits
    .syntax unified
    .thumb
    .text

@ pick(x) = 10 for x = 0, 20 for 1, 30 for 2, 7 otherwise
    .global pick
    .hidden pick
    .type pick, %function
    .thumb_func
pick:
    b 1f
back:                       @ case 0, before the table
    movs r0, #10
    bx lr
1:  cmp r0, #2
    bhi 2f
    adr.w r3, table
    ldr.w pc, [r3, r0, lsl #2]
    .p2align 2
table:
    .word back + 1
    .word one + 1
    .word two + 1
one:
    movs r0, #20
    bx lr
2:  movs r0, #7
    bx lr
two:                        @ reached through the table alone
    movs r0, #30
    bx lr
    .size pick, . - pick
