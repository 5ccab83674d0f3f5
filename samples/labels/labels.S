@ A number in a table that reads as a label of an exported function (tests/test_labels_in_data.py).
@
@ In a fixed-address program, an odd word of data that lies inside an exported function of
@ known size, in its instruction set, is taken for a computed-goto label of that function
@ (decision 0043). A table of 16-bit numbers names such places by chance: cc1's parser
@ tables hold 0x0028008f, the second halfword of a str.w in ggc_internal_alloc. Here
@ wide_half is such a place: the second halfword of step's add.w, which reads as a
@ 16-bit lsls. The code that reaches the add.w does so by a forward branch, so a descent
@ that decodes the labels first reads the halfword as an instruction, then finds the
@ add.w overlapping it.
@
@ After the add.w, step runs on to a call whose return site (4 bytes) is followed by a
@ block that a branch enters: with original return addresses the return site's jump
@ covers that block, so code run in place there goes wrong.
    .section .note.GNU-stack,"",%progbits
    .syntax unified
    .thumb
    .text

@ step(x, y) = (x ? twice(x + 1 + 4 * y) : 5) + 3, and y more for x > 100.
    .global step
    .type step, %function
    .thumb_func
step:
    push {r4, lr}
    mov r4, r1
    cmp r0, #0
    bne 2f
    movs r0, #5
    b 4f
2:  adds r3, r0, #1
wide:
    add.w r0, r3, r4, lsl #2   @ its second halfword (0x0084) reads as lsls r4, r0, #2
    cmp r0, #100
    bgt 3f
    bl twice
    adds r0, #3                @ the return site: 4 bytes, the block at 3 after it
    pop {r4, pc}
3:  adds r0, r0, r4            @ entered by the bgt above: under the return site's jump
4:  adds r0, #3
    pop {r4, pc}
    .size step, . - step

@ nudge(x, y) = thrice(x) + 4 * y + 1: not exported, so the word naming the second halfword
@ of its add.w is a weak entry (perhaps a function's address), not a label. nudge's descent
@ reaches the add.w only past its call of thrice, which only nudge calls: not decoded yet
@ when the entry was weighed (cc1: sub_211ad4, called before the mov.w that 0x00215d31 names).
    .global nudge
    .hidden nudge
    .type nudge, %function
    .thumb_func
nudge:
    push {r4, lr}
    mov r4, r1
    bl thrice
nudge_wide:
    add.w r0, r0, r4, lsl #2   @ its second halfword (0x0084) reads as lsls r4, r0, #2
    adds r0, #1
    pop {r4, pc}
    .size nudge, . - nudge

    .type thrice, %function
    .thumb_func
thrice:
    add.w r0, r0, r0, lsl #1
    bx lr
    .size thrice, . - thrice

    .type twice, %function
    .thumb_func
twice:
    lsls r0, r0, #1
    bx lr
    .size twice, . - twice

    .section .rodata
    .global numbers
    .align 2
@ A table of halfword pairs, two of which name second halfwords of add.w (Thumb bit set).
numbers:
    .word 0x00030021, 0x00210321
    .word wide + 3
    .word 0x00210321
    .word nudge_wide + 3
    .word 0x03210321
