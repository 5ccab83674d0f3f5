# Entry points the copied code calls with every register and the flags to keep: it steps
# over the red zone first (lea rsp, [rsp-128]), then calls one of these.
    .text

# In a Go program (anvil_stacks set: runtime_stubs/x86_64/anvil_rt.c) the C code runs on a
# stack of its own: a goroutine's stack may be as small as 8 KiB with only Go's stack guard
# (928 bytes) free below a frame. One of 64 slices, each taken with an atomic bit (a
# thread's signal handler may call in while the thread is inside, and threads may call
# at once); where every slice is busy, the program's stack as before. Pushes the slice's
# number (-1: none), twice to keep RSP 16-aligned; rcx and r11 are saved already.
.macro own_stack
    mov $-1, %rcx
    cmpq $0, anvil_stacks(%rip)
    je 3f
2:
    mov anvil_stacks_busy(%rip), %rcx
    not %rcx
    bsf %rcx, %rcx
    jz 4f                        # every slice busy
    lock bts %rcx, anvil_stacks_busy(%rip)
    jc 2b                        # taken by another meanwhile
    lea 1(%rcx), %r11
    shl $ANVIL_STACK_SHIFT, %r11
    add anvil_stacks(%rip), %r11
    mov %r11, %rsp
    jmp 3f
4:
    mov $-1, %rcx
3:
    push %rcx
    push %rcx
.endm

    .set ANVIL_STACK_SHIFT, 14   # 16 KiB a slice (anvil_rt.c ANVIL_STACK_SLICE)

# Save what a C call may change, align the stack, call \routine (with rax, the system
# call's number, as its argument if \pass_rax; with \shift_args rax, rdi, rsi as its first
# three and the program's rsp as its fourth; with \action_done rt_sigaction's number, rsi,
# rdx and rax, the system call's result), restore. Until threads start, the call is counted
# in anvil_analysis_depth while it runs (after, the lock says who is inside, and the
# threads' calls do not all write one counter); signals held back meanwhile are given back
# after it (decision 0143: runtime_stubs/common/anvil_signal_wrap.h). Without \flags, for
# a site that kept the flags itself where they are live (a repeat filter's test,
# arch/x86_64/calls.py): popfq, which costs a dozen cycles and more, is left out, and the
# direction flag alone is kept (the C code wants it clear; a copy of a string instruction
# that counts down may have it set).
.macro preserving routine, pass_rax=0, flags=1, pass_rdx=0, pass_rdi=0, pass_rsp=0, shift_args=0, action_done=0
.if \flags
    pushfq
.endif
    push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    push %rbp
.if \flags == 0
    pushfq
    pop %rax
    and $0x400, %eax     # DF
    push %rax
.endif
    mov %rsp, %rbp
    and $-16, %rsp
    own_stack
    cmpb $0, anvil_threads_started(%rip)
    jne 7f
    incq anvil_analysis_depth(%rip)
7:
    cld
.if \shift_args
    mov %rsi, %rdx
    mov %rdi, %rsi
    mov %rax, %rdi
    lea 224(%rbp), %rcx
.endif
.if \action_done
    mov %rax, %rcx
    mov $13, %edi
.endif
.if \pass_rdi
    mov %rdi, %rsi
.endif
.if \pass_rax
    mov %rax, %rdi
.endif
.if \pass_rdx
    mov %rdx, %rsi
.endif
.if \pass_rsp
    # The program's rsp: above the 11 words pushed here, the return address and the red
    # zone the call stepped over (hooks.py _call).
    lea 224(%rbp), %rdi
.endif
    call \routine
    pop %rcx
    pop %rcx
    test %rcx, %rcx
    js 5f
    lock btr %rcx, anvil_stacks_busy(%rip)
5:
    mov %rbp, %rsp
    cmpb $0, anvil_threads_started(%rip)
    jne 8f
    decq anvil_analysis_depth(%rip)
8:
    cmpl $0, anvil_signal_work(%rip)
    je 6f
    lea 224(%rbp), %rdi          # the program's rsp (above: pass_rsp)
    and $-16, %rsp
    call anvil_signal_work_done
    mov %rbp, %rsp
6:
.if \flags == 0
    pop %rax
    test %eax, %eax
    jz 1f
    std
1:
.endif
    pop %rbp
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
.if \flags
    popfq
.endif
    ret
.endm

# Before an exit or exit_group system call of the copied code: the program ends there.
    .globl anvil_exit_entry
    .type anvil_exit_entry, @function
anvil_exit_entry:
    preserving anvil_program_end
    .size anvil_exit_entry, . - anvil_exit_entry

# Before a system call whose number (rax) was not known when the code was rewritten.
    .globl anvil_syscall_entry
    .type anvil_syscall_entry, @function
anvil_syscall_entry:
    preserving anvil_on_syscall, 1, 1, 0, 1
    .size anvil_syscall_entry, . - anvil_syscall_entry

# Before an rt_sigaction system call of the copied code (number in rax, the signal in rdi,
# the action in rsi): anvil_signal_action puts the default back where the action is the
# runtime's results handler (runtime_stubs/common/anvil_fatal_signals.h) and puts a wrapper
# entry in the action (anvil_signal_wrap.h).
    .globl anvil_sigaction_entry
    .type anvil_sigaction_entry, @function
anvil_sigaction_entry:
    preserving anvil_signal_action, shift_args=1
    .size anvil_sigaction_entry, . - anvil_sigaction_entry

# After it (the action in rsi, the old one in rdx, the result in rax): the program's
# handler back in both (anvil_signal_action_done).
    .globl anvil_sigaction_done_entry
    .type anvil_sigaction_done_entry, @function
anvil_sigaction_done_entry:
    preserving anvil_signal_action_done, action_done=1
    .size anvil_sigaction_done_entry, . - anvil_sigaction_done_entry

# As the PLT entry of a signal-action function of the C library is entered (the GOT slot
# it jumps through in rax, pushed by the hook; the signal in rdi, the action or handler in
# rsi): anvil_signal_plt.
    .globl anvil_signal_call_entry
    .type anvil_signal_call_entry, @function
anvil_signal_call_entry:
    preserving anvil_signal_plt, shift_args=1
    .size anvil_signal_call_entry, . - anvil_signal_call_entry

# Where a call of such a PLT entry returns: a handler the call set through the lazy binder
# gets its wrapper (anvil_signal_action_set).
    .globl anvil_signal_set_entry
    .type anvil_signal_set_entry, @function
anvil_signal_set_entry:
    preserving anvil_signal_action_set
    .size anvil_signal_set_entry, . - anvil_signal_set_entry

# The wrapper entries (anvil_signal_wrap.h): entry k, 16 bytes, stands for the program's
# k-th wrapped handler.
    .globl anvil_signal_wrappers
    .hidden anvil_signal_wrappers
    .p2align 4
anvil_signal_wrappers:
    .set wrapper, 0
    .rept 64
    mov $wrapper, %r11d
    jmp anvil_signal_wrapper
    .p2align 4
    .set wrapper, wrapper + 1
    .endr

# Their common part, on the kernel's frame (rsp + 8 16-aligned, the restorer's address at
# rsp): anvil_signal_deliver is given the registers the kernel set (rdi the signal, rsi the
# siginfo, rdx the ucontext), rcx and k (r11), and returns the program's handler, entered
# with every register as the kernel set it; or 0, the signal held back: back to the
# restorer (rt_sigreturn).
    .type anvil_signal_wrapper, @function
anvil_signal_wrapper:
    push %r10
    push %r9
    push %r8
    push %rax
    push %r11
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    mov %rsp, %rdi
    call anvil_signal_deliver
    mov %rax, 32(%rsp)           # the handler, into r11's place
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %r11
    pop %rax
    pop %r8
    pop %r9
    pop %r10
    test %r11, %r11
    jz 1f
    jmp *%r11
1:
    ret
    .size anvil_signal_wrapper, . - anvil_signal_wrapper

# Where a handler returns whose signal was given the original's PC (anvil_rt.c to_original),
# rsp at the kernel's ucontext (the handler's ret took the return address): the copy's PC
# back (anvil_signal_resume), then on to the restorer the kernel gave, rsp as it was; the
# system call itself where later signals took the slot.
    .globl anvil_resume_restorer
    .hidden anvil_resume_restorer
    .type anvil_resume_restorer, @function
anvil_resume_restorer:
    mov %rsp, %rbx               # (every register comes back from the frame)
    mov %rsp, %rdi
    and $-16, %rsp
    call anvil_signal_resume
    mov %rbx, %rsp
    test %rax, %rax
    jz 1f
    jmp *%rax
1:
    mov $15, %eax                # rt_sigreturn
    syscall
    .size anvil_resume_restorer, . - anvil_resume_restorer

# Where main returns in a program its interpreter calls as main (anvil_started_by): the
# results (anvil_fini), then on to the caller with main's value. (rsp is 16-aligned here,
# as it was before the call of main.)
    .globl anvil_main_return
    .type anvil_main_return, @function
anvil_main_return:
    push %rax
    push %rdx
    call anvil_fini
    pop %rdx
    pop %rax
    jmp *anvil_main_caller(%rip)
    .size anvil_main_return, . - anvil_main_return

# The results handler's restorer (SA_RESTORER): x86-64's kernel returns from a handler
# only through one. (The handler ends the process; this is for a signal it let pass.)
    .globl anvil_signal_restorer
    .type anvil_signal_restorer, @function
anvil_signal_restorer:
    mov $15, %eax                # rt_sigreturn
    syscall
    .size anvil_signal_restorer, . - anvil_signal_restorer

# Around a system call of the copied code that may fork (number in rax, clone's flags or
# clone3's arguments in rdi): the analysis lock held over it (anvil_before_fork), then given
# back in the parent and in the child (anvil_after_fork).
    .globl anvil_fork_entry
    .type anvil_fork_entry, @function
anvil_fork_entry:
    preserving anvil_before_fork, 1, 1, 0, 1
    .size anvil_fork_entry, . - anvil_fork_entry

    .globl anvil_forked_entry
    .type anvil_forked_entry, @function
anvil_forked_entry:
    preserving anvil_after_fork
    .size anvil_forked_entry, . - anvil_forked_entry

# Before an execve or execveat system call of the copied code: the results (anvil_before_exec).
    .globl anvil_exec_entry
    .type anvil_exec_entry, @function
anvil_exec_entry:
    preserving anvil_before_exec
    .size anvil_exec_entry, . - anvil_exec_entry

# As an exec function's PLT entry is entered, with its GOT slot in rax and the slot's lazy
# value in rdx (the copied code saved both): anvil_exec_jump.
    .globl anvil_exec_jump_entry
    .type anvil_exec_jump_entry, @function
anvil_exec_jump_entry:
    preserving anvil_exec_jump, 1, 1, 1
    .size anvil_exec_jump_entry, . - anvil_exec_jump_entry

# As PLT0 is entered: anvil_binder_jump.
    .globl anvil_binder_entry
    .type anvil_binder_entry, @function
anvil_binder_entry:
    preserving anvil_binder_jump
    .size anvil_binder_entry, . - anvil_binder_entry

# As the program enters a function that starts a thread: the counters become locked adds.
    .globl anvil_threads_entry
    .type anvil_threads_entry, @function
anvil_threads_entry:
    preserving anvil_threads_start
    .size anvil_threads_entry, . - anvil_threads_entry

# In place of pthread_create and thrd_create, for the libraries that call them (their GOT
# slots: anvil_rt.c wrap_thread_starts): anvil_threads_start, then the function itself,
# with its arguments and return address as they were.
    .globl anvil_thread_create_entry
    .type anvil_thread_create_entry, @function
anvil_thread_create_entry:
    call anvil_threads_entry
    jmp *anvil_real_pthread_create(%rip)
    .size anvil_thread_create_entry, . - anvil_thread_create_entry

    .globl anvil_thrd_create_entry
    .type anvil_thrd_create_entry, @function
anvil_thrd_create_entry:
    call anvil_threads_entry
    jmp *anvil_real_thrd_create(%rip)
    .size anvil_thrd_create_entry, . - anvil_thrd_create_entry

# At the entry of a Go program's signal handler (rdi, rsi, rdx: the signal, its siginfo, the
# ucontext): a fault's PC in the copy becomes the original's (anvil_go_fault_pc).
    .globl anvil_go_fault_entry
    .type anvil_go_fault_entry, @function
anvil_go_fault_entry:
    preserving anvil_go_fault_pc
    .size anvil_go_fault_entry, . - anvil_go_fault_entry

# Before Go's signal handler returns (rdi: the program's rsp, at the signal frame): a
# preemption the handler let go on resumes in the copy (anvil_go_signal_return).
    .globl anvil_go_signal_return_entry
    .type anvil_go_signal_return_entry, @function
anvil_go_signal_return_entry:
    preserving anvil_go_signal_return, pass_rsp=1
    .size anvil_go_signal_return_entry, . - anvil_go_signal_return_entry

# Before asyncPreempt returns (rdi: the program's rsp, at the PC it returns to): that PC's
# copy instead (anvil_go_resume).
    .globl anvil_go_resume_entry
    .type anvil_go_resume_entry, @function
anvil_go_resume_entry:
    preserving anvil_go_resume, pass_rsp=1
    .size anvil_go_resume_entry, . - anvil_go_resume_entry

# Called from a loop head of a Go program's copy where the runtime asks the goroutine to
# stop (hooks.py _go_poll: below the red zone, the flags pushed where they are live, for
# anvil_go_poll_entry, not for anvil_go_poll_flagless_entry): raises Go's preemption signal
# (SIGURG) on this thread, delivered as the tgkill returns, at the entry's landing, where
# anvil_go_fault_pc puts the loop head's registers back from what is pushed here and gives
# Go's handler the loop head's original PC (decision 0134).
.macro go_poll entry, landed
    .globl \entry
    .hidden \entry
    .type \entry, @function
\entry:
    push %rax
    push %rdi
    push %rsi
    push %rdx
    push %rcx
    push %r11
    mov $186, %eax               # gettid
    syscall
    mov %rax, %rsi
    mov $39, %eax                # getpid
    syscall
    mov %rax, %rdi
    mov $23, %edx                # SIGURG
    mov $234, %eax               # tgkill
    syscall
    .globl \landed
    .hidden \landed
\landed:
    pop %r11
    pop %rcx
    pop %rdx
    pop %rsi
    pop %rdi
    pop %rax
    ret
    .size \entry, . - \entry
.endm
    go_poll anvil_go_poll_entry, anvil_go_poll_landed
    go_poll anvil_go_poll_flagless_entry, anvil_go_poll_flagless_landed

# As a Go thread enters runtime.mstart: its own copy of the counters (anvil_thread_counters).
    .globl anvil_thread_counters_entry
    .type anvil_thread_counters_entry, @function
anvil_thread_counters_entry:
    preserving anvil_thread_counters_start
    .size anvil_thread_counters_entry, . - anvil_thread_counters_entry

# A call site of the copied code (arch/x86_64/calls.py): rdi the run-time argument, esi the
# site's number; anvil_site calls the tool's routine.
    .globl anvil_site_entry
    .type anvil_site_entry, @function
anvil_site_entry:
    preserving anvil_site
    .size anvil_site_entry, . - anvil_site_entry

# The same for a site that kept the flags itself where they are live (preserving's \flags).
    .globl anvil_site_flagless_entry
    .type anvil_site_flagless_entry, @function
anvil_site_flagless_entry:
    preserving anvil_site, flags=0
    .size anvil_site_flagless_entry, . - anvil_site_flagless_entry

# A filtered site's records (calls.py, CallSites._record) fill their buffer: run them.
# (anvil_records_flush is generated only for a tool whose calls make records; elsewhere
# this one, never called, stands in: a call of an undefined weak symbol goes to 0, out of
# reach of a region linked above 2 GiB.)
    .weak anvil_records_flush
    .type anvil_records_flush, @function
anvil_records_flush:
    ret
    .size anvil_records_flush, . - anvil_records_flush
    .globl anvil_records_flush_entry
    .type anvil_records_flush_entry, @function
anvil_records_flush_entry:
    preserving anvil_records_flush, flags=0
    .size anvil_records_flush_entry, . - anvil_records_flush_entry

# anvil_site_locked_entry without the flags: a filtered site once the program has started
# a thread (calls.py, CallSites._filtered_site).
    .globl anvil_site_locked_flagless_entry
    .type anvil_site_locked_flagless_entry, @function
anvil_site_locked_flagless_entry:
    preserving anvil_site_locked, flags=0
    .size anvil_site_locked_flagless_entry, . - anvil_site_locked_flagless_entry

# The same in a program that starts threads: one thread in the analysis at a time.
    .globl anvil_site_locked_entry
    .type anvil_site_locked_entry, @function
anvil_site_locked_entry:
    preserving anvil_site_locked
    .size anvil_site_locked_entry, . - anvil_site_locked_entry
    .section .note.GNU-stack,"",@progbits
