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
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && !defined(__ARM_FEATURE_DSP)
    msr APSR_nzcvq, r2          @ ARMv7-M without DSP: no GE bits to restore
#else
    msr APSR_nzcvqg, r2
#endif
    pop {r1, r2, r3, r12, pc}
    .size anvil_xlate_entry, . - anvil_xlate_entry
    .section .note.GNU-stack,"",%progbits
