/* Fatal signals (decision 0064; x86-64: decision 0131): programs killed by a signal still
 * write their results, as valgrind's tools and QEMU's plugins do. Included by each Linux
 * runtime (arm/anvil_rt.c, x86_64/anvil_rt.c), which defines SYS_rt_sigaction,
 * SYS_rt_sigprocmask, SYS_tgkill, SYS_getpid, SYS_gettid, SIG_UNBLOCK, SA_RESETHAND and,
 * where the kernel returns from a handler only through one (x86-64), SA_RESTORER and
 * ANVIL_SIGNAL_RESTORER (a function that makes the rt_sigreturn system call). */

/* The kernel's struct sigaction (rt_sigaction, 8-byte mask): words of the ISA's size. */
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint32_t mask[2];
};

/* Signals whose default action ends the process (SIGTRAP left to debuggers). */
static const uint8_t fatal_signals[] = {1, 2, 3, 4, 6, 7, 8, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 31};

/* A signal that would end the program: write the results, then die of it as the
 * program would have. SA_RESETHAND put the default action back before this ran; the
 * signal is sent again and unblocked, so the process ends by it (a fault's instruction
 * is not run again), with the same status and (under qemu) the same message. */
static void on_fatal_signal(int sig)
{
    anvil_program_end();
    uint32_t set[2] = {0, 0};
    set[(sig - 1) / 32] = 1u << ((sig - 1) % 32);
    anvil_syscall(SYS_tgkill, anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0),
                  anvil_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
    anvil_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)set, 0, 8, 0, 0);
}

/* A handler on each fatal signal whose action is the default. Signals the program
 * inherited as ignored stay so; a handler the program installs replaces ours. The
 * program does not see it: anvil_signal_action puts the default back first. */
static void catch_fatal_signals(void)
{
    /* Filled in here, not from an initializer: that would be a template in .data whose
       handler address is the link-time one, and a PIE's region is moved by the load bias. */
    struct kernel_sigaction old, act;
    act.handler = on_fatal_signal;
#ifdef ANVIL_SIGNAL_RESTORER
    void ANVIL_SIGNAL_RESTORER(void);
    act.flags = SA_RESETHAND | SA_RESTORER;
    act.restorer = ANVIL_SIGNAL_RESTORER;
#else
    act.flags = SA_RESETHAND;
    act.restorer = 0;
#endif
    act.mask[0] = act.mask[1] = 0;
    for (uint32_t i = 0; i < sizeof fatal_signals; i++) {
        if (anvil_syscall(SYS_rt_sigaction, fatal_signals[i], 0, (long)&old, 8, 0, 0) == 0 && old.handler == 0)
            anvil_syscall(SYS_rt_sigaction, fatal_signals[i], (long)&act, 0, 8, 0, 0);
    }
}

/* Before the program reads or sets a signal's action (``nr``: the system call about to be
 * made, rt_sigaction's or another's): where the action is still Anvil's results handler,
 * the default goes back first, so the program sees the action it would have seen (Rust's
 * start-up installs its own SIGSEGV handler only over SIG_DFL) and any handler it sets
 * replaces the default as it would. A signal the program only asked about no longer
 * writes the results if it ends the program. The rewriter places the calls (ARM:
 * emit/inhost.py; x86-64: arch/x86_64/hooks.py). ``act`` and ``sp``: the struct a system
 * call passes and the stack pointer, where the runtime wraps handlers (0: not known). */
#ifdef ANVIL_WRAPS_HANDLERS
static void wrap_system_call_action(anvil_word sig, anvil_word act, anvil_word sp);
#endif
void anvil_signal_action(anvil_word nr, anvil_word sig, anvil_word act, anvil_word sp)
{
    if (nr != SYS_rt_sigaction || sig == 0 || sig > 64)
        return;
#ifdef ANVIL_WRAPS_HANDLERS
    wrap_system_call_action(sig, act, sp);
#else
    (void)act;
    (void)sp;
#endif
    struct kernel_sigaction now;
    if (anvil_syscall(SYS_rt_sigaction, (long)sig, 0, (long)&now, 8, 0, 0) != 0 || now.handler != on_fatal_signal)
        return;
    now.handler = 0; /* SIG_DFL, as the process started */
    now.flags = 0;
    now.restorer = 0;
    now.mask[0] = now.mask[1] = 0;
    anvil_syscall(SYS_rt_sigaction, (long)sig, (long)&now, 0, 8, 0, 0);
}
