@ Free Pascal's case statement on an integer selector, as fpc 3.2.2 writes it in A32
@ (Debian's h2pas and pyacc): a signed bounds check (``blt``/``bgt``), the selector
@ sign-extended (``sxth``: a smallint) or not, moved down by the lowest value + 1, and a
@ jump through a table of label addresses right after the ``ldr pc`` (PC reads as its
@ address + 8). Cases 2 and 3 call a function nothing else calls.
    .syntax unified
    .arm
    .text

    .global classify
    .type classify, %function
classify:               @ smallint selector: 1..6 -> a value, else -1
    push {r4, lr}
    mov r4, r0
    cmp r4, #1
    blt 8f
    cmp r4, #6
    bgt 8f
    sxth r4, r4
    sub r4, r4, #2
    ldr pc, [pc, r4, lsl #2]
    .word 1f, 2f, 3f, 4f, 5f, 6f
1:  mov r0, #10
    b 9f
2:  mov r0, #3
    bl triangle
    b 9f
3:  mov r0, #7
    bl triangle
    add r0, r0, #1
    b 9f
4:  mov r0, #40
    b 9f
5:  mov r0, #50
    b 9f
6:  mov r0, #60
    b 9f
8:  mvn r0, #0
9:  pop {r4, pc}
    .size classify, . - classify

    .global grade
    .type grade, %function
grade:                  @ longint selector: 10..13 -> a value, else 0
    cmp r0, #10
    blt 8f
    cmp r0, #13
    bgt 8f
    sub r0, r0, #11
    ldr pc, [pc, r0, lsl #2]
    .word 1f, 2f, 3f, 4f
1:  mov r0, #5
    bx lr
2:  mov r0, #6
    b triangle
3:  mov r0, #7
    bx lr
4:  mov r0, #8
    b triangle
8:  mov r0, #0
    bx lr
    .size grade, . - grade

    .type triangle, %function
triangle:               @ 1 + 2 + ... + r0
    mov r1, #0
1:  add r1, r1, r0
    subs r0, r0, #1
    bne 1b
    mov r0, r1
    bx lr
    .size triangle, . - triangle
    .section .note.GNU-stack,"",%progbits
