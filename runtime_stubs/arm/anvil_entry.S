@ Assembly entry points of the InHost runtime: the calling conventions hooks need
@ that C cannot express.
    .syntax unified
    .thumb
    .text

@ anvil_xlate_entry: r0 = original jump target, r1 = translation table.
@ Returns r0 = where to jump. Preserves r1-r3, r12 and the flags (APSR).
    .global anvil_xlate_entry
    .type anvil_xlate_entry, %function
    .thumb_func
anvil_xlate_entry:
    push {r1, r2, r3, r12, lr}
    mrs r2, APSR
    push {r2}
    bl anvil_xlate
    pop {r2}
    msr APSR_nzcvqg, r2
    pop {r1, r2, r3, r12, pc}
    .size anvil_xlate_entry, . - anvil_xlate_entry
@ anvil_xlate_leaf: the same translation without touching the stack (used when the
@ hooks keep their registers in d16-d31). r0 = target, r1 = table; returns r0.
@ Clobbers r2, r3, r12 and the flags, which the caller has saved.
    .global anvil_xlate_leaf
    .type anvil_xlate_leaf, %function
    .thumb_func
anvil_xlate_leaf:
    ldr r2, .Lbias_offset
.Lbias_pc:
    add r2, pc
    ldr r2, [r2]                @ load bias
    bic r3, r0, #1
    sub r3, r3, r2              @ link-time target
    ldr r12, [r1]
    sub r3, r3, r12             @ offset in the procedure
    ldr r12, [r1, #4]
    cmp r3, r12
    bhs 1f
    ldr r12, [r1, #8]
    lsr r3, r3, r12             @ slot
    add r3, r1, r3, lsl #2
    ldr r3, [r3, #12]
    cbz r3, 1f
    add r0, r3, r2
1:  bx lr
    .align 2
.Lbias_offset:
    .word anvil_bias - (.Lbias_pc + 4)
    .size anvil_xlate_leaf, . - anvil_xlate_leaf

    .section .note.GNU-stack,"",%progbits
