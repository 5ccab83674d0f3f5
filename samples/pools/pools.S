@ Literal pools that a stripped program's descent cannot tell from code (tests/test_pools_in_code.py).
@
@ die() calls a function that never returns, and nothing in the code says so: the descent
@ decodes the bytes after each call of it as code. After named's call, those bytes read as
@ a call into the middle of victim's 32-bit multiply, and run on into hidden. hidden is
@ named by nothing (main computes its address from hidden_offset) and runs where it is;
@ the word after its call of die is its literal pool.
    .section .note.GNU-stack,"",%progbits
    .syntax unified
    .thumb
    .text

@ victim(x) = x * 3 + 1.
    .global victim
    .type victim, %function
    .thumb_func
victim:
    push {r4, lr}
    movw r4, #3
victim_wide:
    mul.w r0, r0, r4
    adds r0, #1
    pop {r4, pc}
    .size victim, . - victim

@ die(code, fn): fn(code).
    .type die, %function
    .thumb_func
die:
    blx r1
    .size die, . - die

@ named(x, fn): 7 if x is 0, else die(x, fn).
    .global named
    .type named, %function
    .thumb_func
named:
    cbnz r0, 1f
    movs r0, #7
    bx lr
1:  bl die
    bl victim_wide + 2  @ not code: a pool word that reads as a call
    .space 12           @ more of the pool (zeros read as movs r0, r0)
    .size named, . - named

@ hidden(x, fn): the word in its pool if x is 0, else die(x, fn).
    .type hidden, %function
    .thumb_func
hidden:
    cbnz r0, 2f
    ldr r0, 3f
    bx lr
2:  bl die
    .p2align 2
3:  .word 0x12345678
    .size hidden, . - hidden

    .section .rodata
    .global hidden_offset
    .p2align 2
hidden_offset:
    .word hidden - .    @ where hidden is, from here: no word in the program holds its address
