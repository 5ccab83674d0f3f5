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
@ Where main returns in a program its interpreter calls as main (anvil_rt.c's
@ LIBRARY_CALLS_MAIN): the results (anvil_main_end), then on to the caller with main's
@ value (r0; r1 too, for a caller that reads a 64-bit one). SP is 8-aligned here, as it
@ was before the call of main. Linux only.
#if !defined(__ARM_ARCH_PROFILE) || __ARM_ARCH_PROFILE != 'M'
    .global anvil_main_return
    .hidden anvil_main_return
    .type anvil_main_return, %function
    .thumb_func
anvil_main_return:
    push {r0, r1, r2, lr}
    bl anvil_main_end           @ r0 = where main was to return
    mov lr, r0
    pop {r0, r1, r2, r3}
    bx lr
    .size anvil_main_return, . - anvil_main_return
#endif

@ anvil_go_poll: called from a loop head of a Go program's A32 copy where the runtime asks
@ the goroutine to stop (its g.stackguard0 is stackPreempt), the caller's ip and lr in d16
@ and its flags in d17 (relocate.go_poll). Raises Go's preemption signal (SIGURG) on this
@ thread, which is delivered as the tgkill returns, at anvil_go_poll_landed: there
@ anvil_go_fault_pc puts the loop head's registers back (r0-r2 and r7 are in d18 and d19
@ here) and gives Go's handler the loop head's original PC (decision 0134). Returns to the
@ caller only where the signal did not come (blocked: the program's own choice). Nothing
@ goes below SP. Linux only.
#if !defined(__ARM_ARCH_PROFILE) || __ARM_ARCH_PROFILE != 'M'
    .global anvil_go_poll
    .hidden anvil_go_poll
    .type anvil_go_poll, %function
    .thumb_func
anvil_go_poll:
    vmov d18, r0, r1
    vmov d19, r2, r7
    movw r7, #224               @ gettid
    svc 0
    mov r1, r0
    movw r7, #20                @ getpid
    svc 0
    movw r2, #23                @ SIGURG
    movw r7, #268               @ tgkill
    svc 0
    .global anvil_go_poll_landed
    .hidden anvil_go_poll_landed
anvil_go_poll_landed:
    vmov r0, r1, d18
    vmov r2, r7, d19
    bx lr
    .size anvil_go_poll, . - anvil_go_poll

@ The program's signal handlers, wrapped (decision 0143; anvil_signal_wrap.h): entry k of
@ anvil_signal_wrappers is what the kernel has in place of the program's handler k. The
@ entry saves the registers the kernel set (r0 the signal, r1 the siginfo, r2 the
@ ucontext where SA_SIGINFO), its number in ip, and lr (the way to sigreturn) below the
@ kernel's frame, and asks anvil_signal_deliver: the handler, which it jumps to with those
@ registers and SP as the kernel left them, or 0 where the signal is held back: then it
@ returns to the kernel. Each entry is 8 bytes (WRAPPER_BYTES), 64 of them.
    .align 2
    .global anvil_signal_wrappers
    .hidden anvil_signal_wrappers
anvil_signal_wrappers:
    .set wrapper, 0
    .rept 64
    movw ip, #wrapper
    b.w anvil_signal_wrapper
    .set wrapper, wrapper + 1
    .endr
    .type anvil_signal_wrapper, %function
    .thumb_func
anvil_signal_wrapper:
    push {r0, r1, r2, r3, ip, lr}   @ 24 bytes: SP stays a multiple of 8, as the kernel left it
    mov r0, sp
    bl anvil_signal_deliver
    mov ip, r0
    pop {r0, r1, r2, r3}
    ldr lr, [sp, #4]
    add sp, sp, #8
    cmp ip, #0
    it eq
    bxeq lr
    bx ip
    .size anvil_signal_wrapper, . - anvil_signal_wrapper
#endif
    .section .note.GNU-stack,"",%progbits
