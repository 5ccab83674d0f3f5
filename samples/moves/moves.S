@ A function whose address only movw/movt build (tests/test_code_in_moves.py).
@
@ GCC's Thumb-2 code for a fixed-address program builds addresses with movw/movt, function
@ pointers too: cc1 passes its callbacks (walk_tree's, walk_gimple_seq's) so, and most of
@ them are static functions that no symbol, call or word of data names. Here cb is such a
@ function, passed to apply. It follows check, whose last instruction calls fail: fail
@ returns on some path, so the descent of check runs on past the call, over the padding
@ nop, into cb. Read so, cb's entry lies under the jump written at that call's return
@ site (the nop) with original return addresses: a call through the pointer ran the
@ jump's bytes as code. With relocated return addresses cb ran in place, uncounted.
    .section .note.GNU-stack,"",%progbits
    .syntax unified
    .thumb
    .text

@ run(x) = apply(cb, x) + check(0) = cb(x) + 1
    .global run
    .hidden run
    .type run, %function
    .thumb_func
run:
    push {r4, lr}
    mov r1, r0
    movw r0, #:lower16:cb      @ the Thumb bit comes with the symbol
    movt r0, #:upper16:cb
    bl apply
    mov r4, r0
    movs r0, #0
    bl check
    add r0, r0, r4
    pop {r4, pc}
    .size run, . - run

@ apply(fn, x) = fn(x) + 1
    .type apply, %function
    .thumb_func
apply:
    push {r4, lr}
    mov r4, r0
    mov r0, r1
    blx r4
    adds r0, #1
    pop {r4, pc}
    .size apply, . - apply

@ check(x) = x ? fail(x) : 0; fail reports and exits, but the descent cannot know.
    .type check, %function
    .thumb_func
check:
    cmp r0, #0
    bne 1f
    bx lr
1:  push {r3, lr}
    bl fail
    nop                        @ padding after a call that does not return, as GCC's
    .size check, . - check

@ cb(x) = 3 * x + twice(x) + 5
    .type cb, %function
    .thumb_func
cb:
    push {r4, lr}
    mov r4, r0
    bl twice
    add.w r0, r0, r4
    adds r0, #5
    pop {r4, pc}
    .size cb, . - cb

    .type twice, %function
    .thumb_func
twice:
    lsls r0, r0, #1
    bx lr
    .size twice, . - twice
