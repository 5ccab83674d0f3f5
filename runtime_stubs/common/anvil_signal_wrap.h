/* The program's signal handlers, wrapped (decision 0143): a signal that arrives while its
 * thread is inside the analysis (a routine, a flush, the end) is held back until the call
 * returns, as Pin and DynamoRIO hold theirs. A handler then never runs while its thread
 * holds the analysis lock or is halfway through a record: one that blocks (pause, waiting
 * for another thread) or leaves by siglongjmp no longer leaves the lock held for ever.
 *
 * The kernel is given a wrapper in the handler's place: one of WRAPPED_HANDLERS small
 * entries (anvil_entry.S, anvil_signal_wrappers), each standing for one handler of the
 * program. A program that reads the action back gets the handler it set where Anvil sees
 * the read (the C library's functions, below; the hook after a system call of the
 * program's own code, anvil_signal_action_done), the wrapper's entry otherwise (such a
 * system call whose next instruction is also a jump's target): setting that entry again
 * sets its handler, so a program that saves an action and puts it back behaves alike.
 *
 * Included by a Linux runtime, which defines SYS_rt_sigprocmask, SYS_getpid, SYS_gettid,
 * SYS_tgkill, SYS_rt_tgsigqueueinfo, UC_SIGMASK (where a ucontext keeps the mask the
 * kernel restores), WRAPPER_BYTES (each wrapper entry's length), WRAPPER_THUMB (the bit
 * an entry's address has as a handler), WRAPPER_CONTEXT(saved, siginfo) and
 * WRAPPER_INFO(saved, siginfo) (the ucontext and the siginfo a wrapper entry was given,
 * from the registers it saved, ``siginfo``: the handler was set with SA_SIGINFO),
 * wrap_handlers (whether handlers are wrapped at all: not in a Go program, whose runtime
 * compares the actions it reads with its own handler), and
 * WRAPPER_TO_ORIGINAL(saved, context, siginfo, fault) (what a signal is given before the
 * handler runs, ``fault``: an instruction raised it: a signal that interrupted a system call
 * of the copy, and on ARM a fault in the copy, gets the original instruction's PC),
 * anvil_analysis_interrupted(ucontext): whether the context a signal interrupted is inside
 * the analysis, anvil_thread_identity() (what tells the calling thread from the others),
 * and anvil_call_nested(sp): whether an analysis call that ends, the program's SP ``sp``,
 * ends inside another of its thread (a handler's, one the runtime did not wrap), and
 * library_function(name) (where the dynamic linker binds the C library's function
 * ``name``), defined after. After anvil_fatal_signals.h. */

#define WRAPPED_HANDLERS 64
#define SA_SIGINFO 4u

/* The wrapper entries' code (anvil_entry.S): entry k stands for wrapped_handler[k]. */
extern const char anvil_signal_wrappers[] __attribute__((visibility("hidden")));

/* The program's handler each wrapper entry stands for (0: entry unused). */
static anvil_word wrapped_handler[WRAPPED_HANDLERS];
/* Signals whose handler was last set with SA_SIGINFO (bit sig - 1): the kernel then passes
 * the ucontext as the third argument, otherwise the frame (ucontext first) is at SP. */
static uint32_t siginfo_frames[2];

/* Signals held back while their thread was inside the analysis (bit sig - 1), by thread
 * (anvil_thread_identity), until the call returns: the call stubs then call
 * anvil_signal_work_done (arch/arm/call_stubs.py _signal_work), where anvil_signal_work is
 * not 0. An entry is written by its own thread alone, and given back after the analysis
 * lock is: a signal that comes before is held back in it, one that comes after is not
 * held back at all. */
#define HELD_THREADS 16
static struct {
    anvil_word thread;
    uint32_t signals[2];
} held[HELD_THREADS];
/* Handlers a lazily bound executable's call sets unwrapped (bit sig - 1; pending_handler),
 * which the end of a later analysis call wraps (anvil_signal_plt). Calls end before the C
 * library has set it (the noting call's own, those of the PLT entry's hooks): while the
 * action still has the handler it had when noted (pending_before), it is looked for again
 * at the next end, PENDING_TRIES times at most (a call that failed never sets it). */
#define PENDING_TRIES 256
static uint32_t pending_wraps[2];
static anvil_word pending_handler[65], pending_before[65];
static uint16_t pending_tries[65];
/* The entries of ``held`` in use, and whether handlers wait in ``pending_wraps``: what the
 * call stubs test at a call's end. */
uint32_t anvil_signal_work;

/* The calling thread's held-back signals: its entry, taken where it has none; 0 where
 * every entry is another thread's. */
static uint32_t *held_signals(void)
{
    anvil_word self = anvil_thread_identity();
    for (uint32_t k = 0; k < HELD_THREADS; k++)
        if (__atomic_load_n(&held[k].thread, __ATOMIC_ACQUIRE) == self)
            return held[k].signals;
    for (uint32_t k = 0; k < HELD_THREADS; k++) {
        anvil_word none = 0;
        if (__atomic_compare_exchange_n(&held[k].thread, &none, self, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&anvil_signal_work, 1, __ATOMIC_RELEASE);
            return held[k].signals;
        }
    }
    return 0;
}

static anvil_word wrap_handler(anvil_word sig, anvil_word handler, uint32_t siginfo);

/* The handlers in ``pending_wraps`` get their wrapper entries, where the action still has
 * them. */
static void wrap_pending(void)
{
    for (uint32_t word = 0; word < 2; word++) {
        uint32_t signals = __atomic_exchange_n(&pending_wraps[word], 0, __ATOMIC_ACQ_REL);
        for (uint32_t bit = 0; bit < 32; bit++) {
            if (!(signals >> bit & 1))
                continue;
            anvil_word sig = 32 * word + bit + 1;
            struct kernel_sigaction now;
            if (anvil_syscall(SYS_rt_sigaction, (long)sig, 0, (long)&now, 8, 0, 0) != 0
                || (anvil_word)now.handler != pending_handler[sig]) {
                if ((anvil_word)now.handler == pending_before[sig] && ++pending_tries[sig] < PENDING_TRIES)
                    __atomic_or_fetch(&pending_wraps[word], 1u << bit, __ATOMIC_ACQ_REL);  /* not set yet */
                else
                    __atomic_sub_fetch(&anvil_signal_work, 1, __ATOMIC_RELEASE);
                continue;
            }
            __atomic_sub_fetch(&anvil_signal_work, 1, __ATOMIC_RELEASE);
            now.handler = (void (*)(int))wrap_handler(sig, (anvil_word)now.handler, (uint32_t)now.flags & SA_SIGINFO);
            anvil_syscall(SYS_rt_sigaction, (long)sig, (long)&now, 0, 8, 0, 0);
        }
    }
}

/* After the executable's call of a signal-action function's PLT entry: a handler it set
 * through the lazy binder (wrap_through_slot) gets its wrapper entry. */
void anvil_signal_action_set(void)
{
    if (pending_wraps[0] | pending_wraps[1])
        wrap_pending();
}

/* The calling thread's analysis call has returned, SP ``sp`` (the program's; inside the
 * hook stack where a handler's call returns inside another call, which does this itself):
 * pending handlers are wrapped, and the signals held back meanwhile are unblocked, which
 * the kernel then delivers. */
void anvil_signal_work_done(anvil_word sp)
{
    if (anvil_call_nested(sp))
        return;
    if (pending_wraps[0] | pending_wraps[1])
        wrap_pending();
    anvil_word self = anvil_thread_identity();
    for (uint32_t k = 0; k < HELD_THREADS; k++) {
        if (__atomic_load_n(&held[k].thread, __ATOMIC_ACQUIRE) != self)
            continue;
        uint32_t signals[2] = {held[k].signals[0], held[k].signals[1]};
        held[k].signals[0] = held[k].signals[1] = 0;
        __atomic_store_n(&held[k].thread, 0, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&anvil_signal_work, 1, __ATOMIC_RELEASE);
        anvil_syscall(SYS_rt_sigprocmask, 1 /* SIG_UNBLOCK */, (long)signals, 0, 8, 0, 0);
        return;
    }
}

static anvil_word library_function(const char *name);

static int special_handler(anvil_word handler)
{
    return handler < 16 || handler == (anvil_word)-1;  /* SIG_DFL, SIG_IGN, SIG_HOLD, SIG_ERR */
}

/* The index of the wrapper entry ``handler`` is, or -1. */
static long wrapper_index(anvil_word handler)
{
    anvil_word offset = handler - WRAPPER_THUMB - (anvil_word)anvil_signal_wrappers;
    if (offset >= WRAPPED_HANDLERS * WRAPPER_BYTES || offset % WRAPPER_BYTES)
        return -1;
    return (long)(offset / WRAPPER_BYTES);
}

/* The wrapper entry that stands for ``handler`` (a new one where none does yet), or the
 * handler itself where it is not a function or every entry is taken. ``siginfo``: it is
 * being set with SA_SIGINFO for ``sig``. */
static anvil_word wrap_handler(anvil_word sig, anvil_word handler, uint32_t siginfo)
{
    if (!wrap_handlers || special_handler(handler) || sig == 0 || sig > 64)
        return handler;
    uint32_t bit = 1u << ((sig - 1) % 32);
    if (siginfo)
        __atomic_or_fetch(&siginfo_frames[(sig - 1) / 32], bit, __ATOMIC_RELAXED);
    else
        __atomic_and_fetch(&siginfo_frames[(sig - 1) / 32], ~bit, __ATOMIC_RELAXED);
    if (wrapper_index(handler) >= 0)
        return handler;  /* an entry read back and set again */
    for (uint32_t k = 0; k < WRAPPED_HANDLERS; k++) {
        anvil_word none = 0, now = __atomic_load_n(&wrapped_handler[k], __ATOMIC_ACQUIRE);
        if (now == handler
            || (now == 0 && (__atomic_compare_exchange_n(&wrapped_handler[k], &none, handler, 0, __ATOMIC_ACQ_REL,
                                                         __ATOMIC_ACQUIRE) || none == handler)))
            return (anvil_word)anvil_signal_wrappers + k * WRAPPER_BYTES + WRAPPER_THUMB;
    }
    return handler;
}

/* The program's handler a wrapper entry stands for; anything else as it is. */
static anvil_word unwrap_handler(anvil_word handler)
{
    long k = wrapper_index(handler);
    return k < 0 ? handler : wrapped_handler[k];
}

/* SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV: what a faulting instruction raises. */
static int fault_signal(anvil_word sig)
{
    return sig == 4 || sig == 5 || sig == 7 || sig == 8 || sig == 11;
}

/* A fault the kernel raised at an instruction (si_code > 0): delivered at once, held back
 * it would only be raised again by the same instruction. */
static int raised_by_instruction(anvil_word sig, const int32_t *info)
{
    return info && info[2] > 0 && fault_signal(sig);
}

/* Called by wrapper entry ``saved[4]`` (anvil_entry.S) with the registers the kernel
 * entered it with: the signal, the siginfo and the ucontext first (ARM: where the handler
 * has SA_SIGINFO; the frame is then after the saved words). Returns the program's
 * handler, which the entry jumps to with those registers and SP as they were; or 0 where
 * the signal is held back: it is sent again, with its siginfo, and stays blocked in the
 * interrupted context until the analysis call returns (the call stub unblocks it), and
 * the entry returns to the kernel's sigreturn. */
anvil_word anvil_signal_deliver(anvil_word *saved)
{
    anvil_word sig = saved[0], handler = wrapped_handler[saved[4] % WRAPPED_HANDLERS];
    if (sig == 0 || sig > 64)
        return handler;
    uint32_t word = (sig - 1) / 32, bit = 1u << ((sig - 1) % 32);
    int siginfo = (siginfo_frames[word] & bit) != 0;
    const int32_t *info = WRAPPER_INFO(saved, siginfo);
    uint8_t *context = WRAPPER_CONTEXT(saved, siginfo);
    uint32_t *signals;
    if (raised_by_instruction(sig, info)) {
        WRAPPER_TO_ORIGINAL(saved, context, siginfo, 1);
        return handler;
    }
    if (!anvil_analysis_interrupted(context) || !(signals = held_signals())) {
        /* (a handler without siginfo: a fault as far as can be told) */
        WRAPPER_TO_ORIGINAL(saved, context, siginfo, !info && fault_signal(sig));
        return handler;
    }
    uint32_t only[2] = {0, 0};
    only[word] = bit;
    /* Blocked here first: the signal sent again would otherwise come at once (SA_NODEFER). */
    anvil_syscall(SYS_rt_sigprocmask, 0 /* SIG_BLOCK */, (long)only, 0, 8, 0, 0);
    long pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0), tid = anvil_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
    if (!info || anvil_syscall(SYS_rt_tgsigqueueinfo, pid, tid, (long)sig, (long)info, 0, 0) != 0)
        anvil_syscall(SYS_tgkill, pid, tid, (long)sig, 0, 0, 0);
    ((uint32_t *)(context + UC_SIGMASK))[word] |= bit;
    signals[word] |= bit;
    return 0;
}

/* The C library's struct sigaction (glibc's and musl's alike). */
struct libc_sigaction {
    anvil_word handler;
    uint32_t mask[32];
    int flags;
    void (*restorer)(void);
};

/* The C library's functions that set an action, which each loaded object's calls reach
 * instead (the runtime's hook_libraries, anvil_signal_plt). */
static int (*libc_sigaction)(int, const struct libc_sigaction *, struct libc_sigaction *);
static anvil_word (*libc_signal)(int, anvil_word);
static anvil_word (*libc_bsd_signal)(int, anvil_word);
static anvil_word (*libc_sysv_signal)(int, anvil_word);
static anvil_word (*libc_sigset)(int, anvil_word);

static int wrapped_sigaction(int sig, const struct libc_sigaction *act, struct libc_sigaction *old)
{
    anvil_signal_action(SYS_rt_sigaction, (anvil_word)sig, 0, 0);
    struct libc_sigaction copy;
    if (act && !special_handler(act->handler)) {
        copy = *act;
        copy.handler = wrap_handler((anvil_word)sig, act->handler, (uint32_t)act->flags & SA_SIGINFO);
        act = &copy;
    }
    int result = libc_sigaction(sig, act, old);
    if (result == 0 && old)
        old->handler = unwrap_handler(old->handler);
    return result;
}

/* signal, bsd_signal, sysv_signal, sigset: the handler as the second argument, the old one
 * returned; none of them sets SA_SIGINFO. */
#define WRAPPED_SIGNAL_FUNCTION(name, real)                                                \
    static anvil_word name(int sig, anvil_word handler)                                   \
    {                                                                                      \
        anvil_signal_action(SYS_rt_sigaction, (anvil_word)sig, 0, 0);                      \
        return unwrap_handler(real(sig, wrap_handler((anvil_word)sig, handler, 0)));       \
    }
WRAPPED_SIGNAL_FUNCTION(wrapped_signal, libc_signal)
WRAPPED_SIGNAL_FUNCTION(wrapped_bsd_signal, libc_bsd_signal)
WRAPPED_SIGNAL_FUNCTION(wrapped_sysv_signal, libc_sysv_signal)
WRAPPED_SIGNAL_FUNCTION(wrapped_sigset, libc_sigset)

static int same_name(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* The wrapped function that stands for the C library's function ``name`` (0: not one of
 * them), and in ``real`` where the C library's own goes. (No table of pointers: an
 * initialised one would hold link-time addresses, and a PIE's region is moved by the
 * load bias.) */
static anvil_word wrapped_function(const char *name, anvil_word **real)
{
    if (same_name(name, "sigaction")) {
        *real = (anvil_word *)&libc_sigaction;
        return (anvil_word)wrapped_sigaction;
    }
    if (same_name(name, "signal")) {
        *real = (anvil_word *)&libc_signal;
        return (anvil_word)wrapped_signal;
    }
    if (same_name(name, "bsd_signal")) {
        *real = (anvil_word *)&libc_bsd_signal;
        return (anvil_word)wrapped_bsd_signal;
    }
    if (same_name(name, "sysv_signal") || same_name(name, "__sysv_signal")) {
        *real = (anvil_word *)&libc_sysv_signal;
        return (anvil_word)wrapped_sysv_signal;
    }
    if (same_name(name, "sigset")) {
        *real = (anvil_word *)&libc_sigset;
        return (anvil_word)wrapped_sigset;
    }
    return 0;
}

/* After such a system call (``nr``; ``act`` and ``old`` as it was given them; ``result``
 * its result): the program's handler where a wrapper entry stands in either struct, so
 * that the program reads back what it set (a static program's sigaction and signal,
 * which copy the kernel's old action out). */
void anvil_signal_action_done(anvil_word nr, anvil_word act, anvil_word old, anvil_word result)
{
    if (nr != SYS_rt_sigaction || result != 0)
        return;
    anvil_word structs[2] = {act, old};
    for (int i = 0; i < 2; i++) {
        struct kernel_sigaction *k = (struct kernel_sigaction *)structs[i];
        if (k && wrapper_index((anvil_word)k->handler) >= 0)
            k->handler = (void (*)(int))unwrap_handler((anvil_word)k->handler);
    }
}

/* A system call that sets an action, made by the program's own code (a static program's
 * C library, a raw system call): ``act`` the kernel's struct, on the stack at ``sp`` or
 * above (a struct elsewhere may be read-only, and is left as it is). */
static void wrap_system_call_action(anvil_word sig, anvil_word act, anvil_word sp)
{
    if (!act || act < sp || act - sp > 65536)
        return;
    struct kernel_sigaction *k = (struct kernel_sigaction *)act;
    k->handler = (void (*)(int))wrap_handler(sig, (anvil_word)k->handler, (uint32_t)k->flags & SA_SIGINFO);
}

/* A signal-action function ``name``'s call (0: not known) through the executable's GOT
 * slot ``slot`` (run-time address), the signal ``sig``, ``arg`` its action or handler:
 * where the slot was left leading to the lazy binder and is bound now (to the C library's
 * function: library_function(name), which the runtime defines), it is made to lead to the
 * runtime's, which this call reaches already. Where it still leads to the binder, the
 * binder runs (as in the original) and the C library's function sets the program's
 * handler: the end of the next analysis call wraps it (anvil_signal_work_done). */
static void wrap_through_slot(anvil_word slot, const char *name, anvil_word sig, anvil_word arg)
{
    anvil_word *library, to = name ? wrapped_function(name, &library) : 0;
    if (!to)
        return;
    if (!*library)
        *library = library_function(name);
    anvil_word real = *library, now = *(volatile anvil_word *)slot;
    if (!real || now == to)
        return;
    if (now == real) {  /* (a lazily bound slot is writable: the binder wrote it) */
        *(volatile anvil_word *)slot = to;
        return;
    }
    anvil_word handler = same_name(name, "sigaction") ? (arg ? ((const struct libc_sigaction *)arg)->handler : 0) : arg;
    if (special_handler(handler) || wrapper_index(handler) >= 0)
        return;
    uint32_t word = (uint32_t)(sig - 1) / 32, bit = 1u << ((sig - 1) % 32);
    struct kernel_sigaction before;
    if (anvil_syscall(SYS_rt_sigaction, (long)sig, 0, (long)&before, 8, 0, 0) != 0)
        return;
    pending_handler[sig] = handler;
    pending_before[sig] = (anvil_word)before.handler;
    pending_tries[sig] = 0;
    if (!(__atomic_fetch_or(&pending_wraps[word], bit, __ATOMIC_ACQ_REL) & bit))
        __atomic_add_fetch(&anvil_signal_work, 1, __ATOMIC_RELEASE);
}
