/* Start-up, system calls and files of the InHost runtime for Linux programs (the parts
 * every target shares are in anvil_target.c). */
#include "anvil_rt.h"

#define SYS_exit 1
#define SYS_sigreturn 119
#define SYS_rt_sigreturn 173
#define SYS_pread64 180
#define SYS_fcntl64 221
#define SYS_getcwd 183
#define SYS_execve 11
#define SYS_execveat 387
#define SYS_clone 120
#define SYS_wait4 114
#define SYS_llseek 140
#define SYS_ftruncate64 194
#define SYS_write 4
#define SYS_open 5
#define SYS_close 6
#define SYS_mprotect 125
#define SYS_mmap2 192
#define SYS_exit_group 248
#define SYS_getpid 20
#define SYS_rt_sigaction 174
#define SYS_rt_sigprocmask 175
#define SYS_gettid 224
#define SYS_tgkill 268
#define SYS_rt_tgsigqueueinfo 363
#define SIG_UNBLOCK 1
#define SA_RESETHAND 0x80000000u
#define PROT_R 1
#define PROT_RW 3
#define PROT_RX 5
#define PROT_RWX 7
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20
#define PAGE 4096u
#define AT_NULL 0
#define PT_GNU_RELRO 0x6474e552u
#define AT_PHDR 3
#define AT_PHNUM 5
#define AT_ENTRY 9

/* Layout of the region, written by the emitter at the start of the generated code. */
struct anvil_header {
    uint32_t magic;
    uint32_t region_start;   /* link address of the region (start of code) */
    uint32_t code_end;       /* end of code, page aligned: data starts here */
    uint32_t file_end;       /* end of the part mapped from the file (page aligned) */
    uint32_t bss_end;        /* end of the zero-filled part */
    uint32_t entry;          /* relocated program entry (link address | Thumb bit) */
    uint32_t npatches;       /* entry-patch words that need the load bias (PIE) */
    uint32_t patches;        /* link address of their addresses */
    /* Started from DT_PREINIT_ARRAY (decision 0071), which names the program's first
     * .init_array word, made the stub's (or, decision 0094, the program's own preinit
     * array, its first word made the stub's): where that word is (link address, 0: started
     * at the entry), what it held, and INIT_* flags. */
    uint32_t init_slot;
    uint32_t init_original;
    uint32_t init_flags;
    /* A dynamic program: link address of its dynamic section (0: none, or nothing to do
     * there), whose DT_DEBUG leads to the libraries (hook_libraries). */
    uint32_t dynamic;
    /* LIBRARY_* flags: what the runtime does (emit/inhost.py _library_words). */
    uint32_t libraries;
    /* The original ELF entry (link address | Thumb bit), which the stub replaced as the
     * file's: the auxiliary vector names it again (read_auxiliary_vector). */
    uint32_t original_entry;
};

/* In .data, not .bss: it is written before the zero-filled pages are mapped. */
anvil_word anvil_bias __attribute__((section(".data"))) = 0;

void anvil_program_start(void);
void anvil_program_end(void);
static void hook_libraries(uint32_t bias, const struct anvil_header *h);
/* The region header's ``libraries`` flags. */
#define LIBRARY_EXITS 1        /* the libraries' calls of _exit lead to the program's end */
#define LIBRARY_WRAP_HANDLERS 2 /* the program's signal handlers are wrapped (decision 0143) */
#define LIBRARY_CALLS_MAIN 4   /* the interpreter calls the entry as main (decision 0207) */
/* Whether they are (not in a Go program: anvil_signal_wrap.h). */
static uint8_t wrap_handlers;

long anvil_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    register long r3 __asm__("r3") = d;
    register long r4 __asm__("r4") = e;
    register long r5 __asm__("r5") = f;
    register long r7 __asm__("r7") = nr;
    __asm__ volatile("svc #0"
                     : "+r"(r0)
                     : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r7)
                     : "memory");
    return r0;
}

void anvil_warn(const char *text)
{
    uint32_t n = 0;
    while (text[n])
        n++;
    anvil_syscall(SYS_write, 2, (long)text, n, 0, 0, 0);
}

static void die(const char *msg)
{
    anvil_warn(msg);
    anvil_syscall(SYS_exit_group, 127, 0, 0, 0, 0, 0);
}

static uint32_t page_up(uint32_t v) { return (v + PAGE - 1) & ~(PAGE - 1); }

/* Where the loader stub (stub.S) keeps what it saved: FAR_BELOW bytes under the initial
 * SP, 14 registers. The initial SP points at argc, argv..., 0, envp..., 0, auxv. */
#define STUB_FAR_BELOW 16384
#define STUB_SAVED_BYTES 56
static const char *const *environment __attribute__((section(".data")));

const char *anvil_getenv(const char *name)
{
    for (const char *const *e = environment; e && *e; e++) {
        const char *a = name, *b = *e;
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (!*a && *b == '=')
            return b + 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- fatal signals */

#define ANVIL_WRAPS_HANDLERS
#include "anvil_fatal_signals.h"  /* (a .h: the compile cache hashes the headers) */

/* A Go program's copy (decision 0089): the link addresses of its instructions' copies and
 * of the originals, as pairs in the copies' order followed by the same pairs in the
 * originals' order, and how many; the rewriter writes both words once the code is laid out
 * (0: no map). An original with bit 0 set (NOT_A_SAFE_POINT) is one where the registers at
 * its copy's start are not all the original's. */
uint32_t anvil_pc_map[2] __attribute__((section(".data")));

#define GO_NOT_A_SAFE_POINT 1u
#define SIGNAL_PREEMPT 23 /* SIGURG: Go's preemption signal */
/* A mark the handler's entry leaves in a preempted context's trap_no (which returning from
 * the handler does not read), with the copy's PC in its fault_address, for the return. */
#define PREEMPT_MARK 0x616e766cu
/* ucontext: uc_flags, uc_link, uc_stack (12 bytes), then the sigcontext's trap_no,
 * error_code, oldmask, r0-r10, fp, ip, sp, lr, pc, cpsr and fault_address. */
#define UC_TRAP_NO 20
#define UC_R0 32
#define UC_PC 92
#define UC_CPSR 96
#define UC_FAULT_ADDRESS 100
/* The flags MRS reads and MSR APSR_nzcvqg writes: N, Z, C, V, Q and GE. */
#define APSR_BITS 0xF80F0000u
#define CPSR_THUMB 0x20u
/* A loop head's poll (relocate.go_poll): the A32 instructions after its call that put
 * back the flags, ip and lr, and the VFP registers it and anvil_go_poll keep them in:
 * d16 ip and lr, d17 the flags, d18 r0 and r1, d19 r2 and r7. */
#define POLL_RESTORE_BYTES 12
#define POLL_FIRST_D 16
/* The ucontext's uc_regspace (after uc_sigmask and its padding): blocks of a magic word
 * and a length, the VFP's with its 32 double registers after them. */
#define UC_REGSPACE 232
#define UC_REGSPACE_WORDS 128
#define VFP_MAGIC 0x56465001u
/* Where the preemption signal anvil_go_poll raises is delivered (anvil_entry.S). */
extern const char anvil_go_poll_landed[] __attribute__((visibility("hidden")));
/* The kernel's signal frame: the siginfo (128 bytes), then the ucontext. */
#define FRAME_UCONTEXT 128

/* The index of the last pair of `pairs` (`count`, sorted by the word at `column`) whose
 * word there is at or before `at`; -1 if none is. */
static long last_pair_at_or_before(const uint32_t *pairs, uint32_t count, int column, uint32_t at)
{
    if (count == 0 || (pairs[column] & ~GO_NOT_A_SAFE_POINT) > at)
        return -1;
    uint32_t low = 0, high = count;
    while (high - low > 1) {
        uint32_t middle = low + (high - low) / 2;
        if ((pairs[2 * middle + column] & ~GO_NOT_A_SAFE_POINT) <= at)
            low = middle;
        else
            high = middle;
    }
    return low;
}

/* The pair of the copy at or before the copy address `at` (a run-time address), or -1
 * where `at` is not in the copy. */
static long copy_pair(uint32_t at)
{
    uint32_t count = anvil_pc_map[1];
    const uint32_t *pairs = (const uint32_t *)(anvil_pc_map[0] + anvil_bias);
    at -= anvil_bias;
    if (count == 0 || at < pairs[0] || at >= pairs[2 * (count - 1)] + 64)
        return -1;
    return last_pair_at_or_before(pairs, count, 0, at);
}

/* The preemption signal a loop head's poll raised (anvil_go_poll), at its landing: the
 * context gets the registers the loop head had (from the VFP registers the poll and
 * anvil_go_poll kept them in, which the kernel saved in the context) and the loop head's
 * original PC; the copy's PC to go back to, if the handler does not preempt, is the poll's
 * end, where the registers are the loop head's again. */
static void go_poll_landed(uint32_t context)
{
    uint32_t *regs = (uint32_t *)(context + UC_R0); /* r0-r12, sp, lr */
    const uint32_t *space = (const uint32_t *)(context + UC_REGSPACE);
    const uint32_t *d = 0; /* the VFP block's registers, as words */
    for (uint32_t at = 0; at + 2 < UC_REGSPACE_WORDS && space[at] != 0 && space[at + 1] >= 8;
         at += space[at + 1] / 4) {
        if (space[at] == VFP_MAGIC) {
            d = space + at + 2;
            break;
        }
    }
    uint32_t after = (regs[14] & ~1u) + POLL_RESTORE_BYTES;
    long index = copy_pair(after);
    if (d == 0 || index < 0)
        return;
    const uint32_t *kept = d + 2 * POLL_FIRST_D; /* d16's low word: ip */
    regs[12] = kept[0];
    regs[14] = kept[1];
    uint32_t *cpsr = (uint32_t *)(context + UC_CPSR);
    /* (the poll's A32 state: anvil_go_poll is Thumb code, outside any IT block) */
    *cpsr = (*cpsr & ~(APSR_BITS | CPSR_THUMB)) | (kept[2] & APSR_BITS);
    regs[0] = kept[4];
    regs[1] = kept[5];
    regs[2] = kept[6];
    regs[7] = kept[7];
    const uint32_t *pairs = (const uint32_t *)(anvil_pc_map[0] + anvil_bias);
    *(uint32_t *)(context + UC_TRAP_NO) = PREEMPT_MARK;
    *(uint32_t *)(context + UC_FAULT_ADDRESS) = after;
    *(uint32_t *)(context + UC_PC) = (pairs[2 * index + 1] & ~GO_NOT_A_SAFE_POINT) + anvil_bias;
}

/* At the entry of Go's signal handler (runtime.sigtramp: r0 the signal, r1 its siginfo,
 * r2 the ucontext). A fault the kernel raised (si_code > 0) at an instruction of the copy
 * gets the original instruction's PC in the context, which the handler looks up in the
 * program's PC table to turn the fault into a panic (a nil dereference, which fmt and
 * others recover from); the handler then sets the PC to sigpanic's original entry, which
 * jumps to its copy, or the program dies of the fault as the original would.
 * A preemption signal that stopped the copy at the start of an instruction's copy, where
 * the registers are the original's, gets the original's PC too (decision 0134): the
 * handler finds a function there and may preempt the goroutine (making it call
 * asyncPreempt, which returns to that PC: anvil_go_resume); where it does not, the
 * handler's return puts the copy's PC back (anvil_go_signal_return). Elsewhere in the
 * copy (inside a hook) the goroutine is not preempted by this signal; the runtime sends
 * another. */

/* A signal that stopped the thread on a trampoline's jump into the copy, `ldr pc` from the
 * literal after it (emit/patches.py: where a return site's or an entry's short patch
 * jumps): the jump is taken in the context (it changes no register), and the signal is
 * then one that stopped the copy where the jump goes. A trampoline often lies in a cave,
 * the original code of another function (one whose copy runs instead): Go's handler took
 * a signal there for one in that function, preempted it there, and the goroutine resumed
 * in that function's copy (Debian's hugo, on most runs). */
static void past_trampoline(uint32_t context)
{
    uint32_t *pc = (uint32_t *)(context + UC_PC), *cpsr = (uint32_t *)(context + UC_CPSR);
    uint32_t at = *pc & ~1u, literal;
    if (*cpsr & CPSR_THUMB) {
        const uint16_t *halves = (const uint16_t *)at;
        if ((at & 1) || halves[0] != 0xF8DF || (halves[1] & 0xF000) != 0xF000)  /* ldr.w pc, [pc, #k] */
            return;
        literal = ((at + 4) & ~3u) + (halves[1] & 0xFFFu);
    } else {
        if ((at & 3) || *(const uint32_t *)at != 0xE51FF004u)  /* ldr pc, [pc, #-4] */
            return;
        literal = at + 4;
    }
    uint32_t to = *(const uint32_t *)literal;
    if (copy_pair(to & ~1u) < 0)  /* not a jump into the copy: a program's own */
        return;
    *pc = to & ~1u;
    *cpsr = (*cpsr & ~CPSR_THUMB) | (to & 1 ? CPSR_THUMB : 0);
}

void anvil_go_fault_pc(uint32_t sig, uint32_t info, uint32_t context)
{
    int fault = (sig == 4 || sig == 7 || sig == 8 || sig == 11) && ((const int32_t *)info)[2] > 0;
    if (anvil_pc_map[1] == 0 || !(fault || sig == SIGNAL_PREEMPT))
        return;
    uint32_t *pc = (uint32_t *)(context + UC_PC);
    if (!fault && (*pc & ~1u) == ((uint32_t)anvil_go_poll_landed & ~1u)) {
        go_poll_landed(context);
        return;
    }
    if (!fault)
        past_trampoline(context);
    long index = copy_pair(*pc);
    if (index < 0)
        return;
    const uint32_t *pair = (const uint32_t *)(anvil_pc_map[0] + anvil_bias) + 2 * index;
    if (!fault) {
        if (pair[0] + anvil_bias != *pc || (pair[1] & GO_NOT_A_SAFE_POINT))
            return;
        *(uint32_t *)(context + UC_TRAP_NO) = PREEMPT_MARK;
        *(uint32_t *)(context + UC_FAULT_ADDRESS) = *pc;
    }
    *pc = (pair[1] & ~GO_NOT_A_SAFE_POINT) + anvil_bias;
}

/* Before Go's signal handler returns, SP at `sp`: the handler's frame is popped there or
 * by this instruction (one word: its saved LR), so the kernel's frame is at `sp` or 4
 * above it. A preemption the handler's entry gave the original PC and the handler left
 * alone resumes in the copy, where it stopped. */
void anvil_go_signal_return(uint32_t sp)
{
    for (uint32_t frame = sp + 4;; frame = sp) {
        uint32_t context = frame + FRAME_UCONTEXT;
        uint32_t *mark = (uint32_t *)(context + UC_TRAP_NO);
        if (*mark == PREEMPT_MARK) {
            uint32_t *pc = (uint32_t *)(context + UC_PC);
            uint32_t *copy = (uint32_t *)(context + UC_FAULT_ADDRESS);
            long index = copy_pair(*copy);
            const uint32_t *pairs = (const uint32_t *)(anvil_pc_map[0] + anvil_bias);
            if (index >= 0 && *pc == (pairs[2 * index + 1] & ~GO_NOT_A_SAFE_POINT) + anvil_bias)
                *pc = *copy;
            *mark = 0;
            *copy = 0;
            return;
        }
        if (frame == sp)
            return;
    }
}

/* Before asyncPreempt jumps back to the PC the preempting handler gave it (the word at
 * `sp` + `offset`): an original instruction with a copy, where the registers may be the
 * original's, is resumed in the copy. */
void anvil_go_resume(uint32_t sp, uint32_t offset)
{
    uint32_t count = anvil_pc_map[1];
    if (count == 0)
        return;
    uint32_t *slot = (uint32_t *)(sp + offset);
    const uint32_t *by_original = (const uint32_t *)(anvil_pc_map[0] + anvil_bias) + 2 * count;
    uint32_t at = *slot - anvil_bias;
    long index = last_pair_at_or_before(by_original, count, 1, at);
    if (index >= 0 && by_original[2 * index + 1] == at)  /* (a safe point: bit 0 clear) */
        *slot = by_original[2 * index] + anvil_bias;
}

/* Called by the loader stub once the region's file part is mapped (read/write/exec),
 * with the registers it saved at entry (r0-r12, lr). Maps the zero-filled part, fixes
 * entry patches for the load bias, seals the code read-only, runs the program-start
 * hooks and returns those registers followed by the relocated entry address. */
/* The analysis routines' own stack when hooks keep registers in d16-d31: calls then
 * write nothing below the program's SP. In a program with threads, a call made while
 * the same thread is inside another (a signal handler's, on the handler's own stack)
 * takes the next 16 KiB down (arch/arm/call_stubs.py _reentrant_stack). */
uint8_t anvil_hook_stack[65536] __attribute__((aligned(8)));

/* In a program that starts threads, calls into the analysis hold this lock
 * (arch/arm/call_stubs.py _lock): the owner's thread pointer (0: free) and how many calls
 * it has in progress, changed together by one doubleword exclusive store, in the call
 * stubs and here (lock_enter, lock_leave): a signal handler's call made between two
 * separate stores found its thread owning the lock with no call counted, and gave the
 * lock away as it ended (decision 0144). */
uint32_t anvil_call_lock[2] __attribute__((aligned(8)));
#define LOCK_PAIR ((uint64_t *)anvil_call_lock)

/* One more call of `self` counted, if it owns the lock or finds it free; 0 where another
 * thread holds it. */
static int lock_enter(uint32_t self)
{
    uint64_t seen = __atomic_load_n(LOCK_PAIR, __ATOMIC_RELAXED);
    for (;;) {
        uint32_t owner = (uint32_t)seen, depth = (uint32_t)(seen >> 32);
        if (owner != 0 && owner != self)
            return 0;
        uint64_t next = (uint64_t)(owner ? depth + 1 : 1) << 32 | self;
        if (__atomic_compare_exchange_n(LOCK_PAIR, &seen, next, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return 1;
    }
}

/* One call of the owner fewer, the lock free after the last; whether it was the last. */
static int lock_leave(void)
{
    uint64_t seen = __atomic_load_n(LOCK_PAIR, __ATOMIC_RELAXED);
    for (;;) {
        uint32_t depth = (uint32_t)(seen >> 32) - 1;
        uint64_t next = depth ? (uint64_t)depth << 32 | (uint32_t)seen : 0;
        if (__atomic_compare_exchange_n(LOCK_PAIR, &seen, next, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            return depth == 0;
    }
}

/* The process the program started as: a forked child's results are its own (below). */
static long start_pid;
/* The directory it started in: results files named relative to it (open_results). */
static char start_dir[4096];

long anvil_forked_child(void)
{
    long pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    return pid == start_pid ? 0 : pid;
}

/* Registers at process entry and where to continue, loaded by the stub's final ldm. */
static uint32_t entry_state[15] __attribute__((section(".data")));

/* init_flags: the slot's page is read-only by then (RELRO); the slot is the program's
 * first preinit function, which the dynamic linker has read already: the stub goes on to it. */
#define INIT_READ_ONLY 1
#define INIT_CALLS_ORIGINAL 2

/* How the loader stub (stub.S) calls anvil_init. */
enum start_stage {
    STARTED_AT_ENTRY = 0,    /* the ELF entry, region just mapped: everything, then the program */
    STARTED_AT_PREINIT = 1,  /* ld.so's DT_PREINIT_ARRAY call, region just mapped: return to it */
    ENTRY_AFTER_PREINIT = 2, /* the ELF entry after that: what must wait for the libraries */
};

/* The program headers of the object whose ELF header is mapped at ``at`` (a library's
 * l_addr; a PIE's load bias, its first PT_LOAD at 0), and their count and entry size; 0
 * where no ELF header is there (a program whose first segment does not map it; prelink's
 * libraries at their link address, l_addr 0). */
static const uint8_t *mapped_program_headers(uint32_t at, uint16_t *count, uint16_t *size)
{
    const uint8_t *ehdr = (const uint8_t *)at;
    if (!at || ehdr[0] != 0x7f || ehdr[1] != 'E' || ehdr[2] != 'L' || ehdr[3] != 'F')
        return 0;
    *size = *(const uint16_t *)(ehdr + 42);
    *count = *(const uint16_t *)(ehdr + 44);
    return ehdr + *(const uint32_t *)(ehdr + 28);
}

/* The rights PT_LOAD flags ``flags`` (PF_X 1, PF_W 2, PF_R 4) give (PROT_READ 1, PROT_WRITE 2, PROT_EXEC 4). */
static uint32_t segment_rights(uint32_t flags)
{
    return (flags & 4 ? 1u : 0u) | (flags & 2) | (flags & 1 ? 4u : 0u);
}

/* The load bias added to the jumps' literals over a PIE's original code. One write window
 * for each loaded segment that holds some (with original return addresses a large program
 * has tens of thousands: two system calls each would add up), given back the segment's own
 * rights afterwards: a window from the lowest literal to the highest made the data between
 * two code segments read-only (a function placed above the data), and an RWX segment
 * (ld -N) read-only too. The program headers are read where a PIE's first PT_LOAD (at 0)
 * maps the ELF header; without them, one window over the text's rights as before. */
static void bias_patches(const struct anvil_header *h, uint32_t bias)
{
    const uint32_t *patch = (const uint32_t *)(h->patches + bias);
    uint16_t phnum, phentsize;
    const uint8_t *phdrs = mapped_program_headers(bias, &phnum, &phentsize);
    if (phdrs) {
        for (uint32_t k = 0; k < phnum; k++) {
            const uint32_t *ph = (const uint32_t *)(phdrs + k * phentsize);
            uint32_t start = ph[2], end = ph[2] + ph[5];  /* p_vaddr, p_memsz: link addresses */
            if (ph[0] != 1 /* PT_LOAD */)
                continue;
            uint32_t inside = 0;
            for (uint32_t i = 0; i < h->npatches && !inside; i++)
                inside = start <= patch[i] && patch[i] + 4 <= end;
            if (!inside)
                continue;
            uint32_t first = (start + bias) & ~(PAGE - 1), span = page_up(end + bias) - first;
            anvil_syscall(SYS_mprotect, first, span, PROT_RWX, 0, 0, 0);
            for (uint32_t i = 0; i < h->npatches; i++)
                if (start <= patch[i] && patch[i] + 4 <= end)
                    *(uint32_t *)(patch[i] + bias) += bias;
            anvil_syscall(SYS_mprotect, first, span, segment_rights(ph[6]), 0, 0, 0);
        }
        return;
    }
    uint32_t low = 0xFFFFFFFFu, high = 0;
    for (uint32_t i = 0; i < h->npatches; i++) {
        low = patch[i] < low ? patch[i] : low;
        high = patch[i] > high ? patch[i] : high;
    }
    uint32_t first = (low + bias) & ~(PAGE - 1), end = page_up(high + bias + 4);
    anvil_syscall(SYS_mprotect, first, end - first, PROT_RWX, 0, 0, 0);
    for (uint32_t i = 0; i < h->npatches; i++)
        *(uint32_t *)(patch[i] + bias) += bias;
    anvil_syscall(SYS_mprotect, first, end - first, PROT_RX, 0, 0, 0);
}

/* The program's own first .init_array word again, which the stub's address stood in for
 * while ld.so read it as the preinit array: libc calls the program's initialisers next. */
static void give_init_slot_back(const struct anvil_header *h, uint32_t bias)
{
    uint32_t slot = h->init_slot + bias, page = slot & ~(PAGE - 1);
    if (h->init_flags & INIT_READ_ONLY)
        anvil_syscall(SYS_mprotect, page, PAGE, PROT_RW, 0, 0, 0);
    *(volatile uint32_t *)slot = h->init_original + bias;
    if (h->init_flags & INIT_READ_ONLY)
        anvil_syscall(SYS_mprotect, page, PAGE, PROT_R, 0, 0, 0);
}

/* The region's zero-filled part, the load bias in the entry patches, the code sealed
 * read-only, then the program-start hooks (``env``: the program's environment). */
static void map_and_start(uint32_t bias, const struct anvil_header *h, const char *const *env)
{
    uint32_t file_end = h->file_end + bias;
    uint32_t bss_end = page_up(h->bss_end) + bias;
    if (bss_end > file_end) {
        long got = anvil_syscall(SYS_mmap2, file_end, bss_end - file_end, PROT_RW,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if ((uint32_t)got != file_end)
            die("anvil: cannot map the instrumentation data region\n");
    }
    anvil_bias = bias;
    start_pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    if (anvil_syscall(SYS_getcwd, (long)start_dir, sizeof start_dir, 0, 0, 0, 0) <= 0)
        start_dir[0] = 0;
    if (bias && h->npatches)
        bias_patches(h, bias);
    anvil_syscall(SYS_mprotect, h->region_start + bias, h->code_end - h->region_start, PROT_RX, 0, 0, 0);
    environment = env;
    anvil_program_start();
}

/* The executable's program headers, as the auxiliary vector names them (AT_PHDR, AT_PHNUM;
 * read_auxiliary_vector reads them). */
static const uint8_t *executable_phdr;
static uint32_t executable_phnum;

/* The auxiliary vector (after ``env``'s terminating null), read once: the executable's
 * program headers are kept (executable_phdr), and the ELF entry the kernel started at, the
 * stub, is made the program's own entry again, as the original's was (decision 0092). The
 * dynamic linker run as a program compares AT_ENTRY with its own _start to know it is the
 * program; getauxval(AT_ENTRY) reads it from here. (The dynamic linker of a dynamic program
 * read it before: it jumps to the stub regardless.) */
static void read_auxiliary_vector(const char *const *env, uint32_t entry)
{
    while (*env)
        env++;
    for (uint32_t *aux = (uint32_t *)(env + 1); aux[0] != AT_NULL; aux += 2)
        if (aux[0] == AT_ENTRY)
            aux[1] = entry;
        else if (aux[0] == AT_PHDR)
            executable_phdr = (const uint8_t *)aux[1];
        else if (aux[0] == AT_PHNUM)
            executable_phnum = aux[1];
}

/* Where main returns in a program its interpreter calls as main (LIBRARY_CALLS_MAIN:
 * klibc's shared library, whose exit no hook sees): main's return address, in the
 * interpreter. anvil_main_return (anvil_entry.S) takes the place of it: the program's end,
 * then on there with main's value. */
static uint32_t main_caller __attribute__((section(".data")));
void anvil_main_return(void);
uint32_t anvil_main_end(void);

uint32_t anvil_main_end(void)
{
    anvil_program_end();
    return main_caller;
}

/* Called by the loader stub with the registers it saved (r0-r12, lr) and the stage (above).
 * Once the region's file part is mapped: maps the zero-filled part, fixes entry patches
 * for the load bias, seals the code read-only and runs the program-start hooks. Returns
 * those registers followed by where the stub goes on: the relocated entry, or (started
 * from the preinit array) the caller's return address, back into ld.so. Fatal signals
 * are caught at the entry, after the libraries' initialisers: one that asks for its
 * signal's action sees what it would have seen. */
uint32_t *anvil_init(uint32_t bias, const struct anvil_header *h, const uint32_t *saved, uint32_t stage)
{
    if (stage != ENTRY_AFTER_PREINIT) {
        const char *const *env;
        if (stage == STARTED_AT_PREINIT || h->libraries & LIBRARY_CALLS_MAIN) {
            env = (const char *const *)saved[2];  /* called as main(argc, argv, envp) */
        } else {
            const uint32_t *initial_sp = (const uint32_t *)((const char *)saved + STUB_SAVED_BYTES + STUB_FAR_BELOW);
            env = (const char *const *)(initial_sp + 1 + initial_sp[0] + 1);
        }
        read_auxiliary_vector(env, h->original_entry + bias);
        map_and_start(bias, h, env);
        wrap_handlers = (h->libraries & LIBRARY_WRAP_HANDLERS) != 0;
        if (h->dynamic)
            hook_libraries(bias, h);
        /* Started at the entry though the stub's address stands in the first .init_array
           word: the dynamic linker ignored DT_PREINIT_ARRAY (musl's); libc calls the
           program's initialisers after this, from the program's start. */
        if (stage == STARTED_AT_ENTRY && h->init_slot)
            give_init_slot_back(h, bias);
    }
    for (int i = 0; i < 14; i++)
        entry_state[i] = saved[i];
    if (stage == STARTED_AT_PREINIT) {
        give_init_slot_back(h, bias);
        /* Back into the dynamic linker; or on to the program's first preinit function with
           the registers it passed (argc, argv, envp) and its return address in LR. */
        entry_state[14] = h->init_flags & INIT_CALLS_ORIGINAL ? h->init_original + bias : saved[13];
        return entry_state;
    }
    catch_fatal_signals();
    if (h->libraries & LIBRARY_CALLS_MAIN) {
        main_caller = saved[13];
        entry_state[13] = (uint32_t)anvil_main_return;
    }
    entry_state[14] = h->entry + bias;
    return entry_state;
}

#include "anvil_exec_end.h"

static void before_exec(void) { end_before_exec(); }

/* Hook before every system call instruction: exit_group ends the program, and so does
 * exit unless the program starts threads (then exit ends one: glibc's pthread_exit); an
 * exec makes it another program (before_exec). */
void anvil_on_syscall(uint32_t nr, uint32_t exit_ends_program)
{
    if (nr == SYS_exit_group || (nr == SYS_exit && exit_ends_program))
        anvil_program_end();
    else if (nr == SYS_execve || nr == SYS_execveat)
        before_exec();
}

/* _exit's PLT entry, before its jump out of the executable through GOT slot ``slot``
 * (run-time address): the program ends unless the slot still sends the call to the lazy
 * binder (PLT0, at link-time address ``binder``), whose own instructions run first; then
 * the end waits for the binder's jump (anvil_binder_jump). Decision 0058. */
static uint32_t exit_through_binder;

void anvil_exit_jump(uint32_t slot, uint32_t binder)
{
    if (*(const uint32_t *)slot == binder + anvil_bias)
        exit_through_binder = 1;
    else
        anvil_program_end();
}

/* Whether the dynamic linker ran the executable's DT_INIT: then it runs DT_FINI at exit,
 * after the DT_FINI_ARRAY functions (glibc); musl on ARM runs neither (decision 0084). */
static uint32_t saw_init;

void anvil_saw_init(void)
{
    saw_init = 1;
}

void anvil_fini_end(void);

/* Before the first DT_FINI_ARRAY function returns, the last of the array to run: the end,
 * unless DT_FINI is still to come (``has_fini``: the executable has one, and it ran DT_INIT),
 * or the C library's _Exit is (anvil_fini_end). */
void anvil_fini_array_end(uint32_t has_fini)
{
    if (!has_fini || !saw_init)
        anvil_fini_end();
}

/* An exec function's PLT entry, before its jump out: the same, for before_exec. */
static uint32_t exec_through_binder;

void anvil_exec_jump(uint32_t slot, uint32_t binder)
{
    if (binder && *(const uint32_t *)slot == binder + anvil_bias)
        exec_through_binder = 1;
    else
        before_exec();
}

/* PLT0, before its jump to the dynamic linker: the end, when _exit is being bound (an
 * exec function: before_exec). */
void anvil_binder_jump(void)
{
    if (exit_through_binder)
        anvil_program_end();
    else if (exec_through_binder) {
        exec_through_binder = 0;
        before_exec();
    }
}

/* ---------------------------------------------------------------- libraries' _exit */

/* A shared library's call of _exit or _Exit, through the GOT slot hook_library_exits set:
 * the program ends there, and the executable's end points (its _fini, its own calls of
 * _exit) are passed by. CHICKEN's runtime ends its programs so (decision 0077). */
static void library_exit(int status)
{
    anvil_program_end();
    for (;;)
        anvil_syscall(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

/* The process that passed the executable's own finalisers (its DT_FINI, or the return of
 * the last of its DT_FINI_ARRAY functions to run) while the C library's _Exit led to
 * c_library_exit: that end waits for _Exit (0: none did). */
static long finalised_pid;

/* The C library's _Exit (glibc's _exit, the same function; musl's exit calls _Exit), whose
 * entry hook_library_exits made a jump here: the last code of every exit, after the
 * libraries' finalisers, which may call back into the executable (decision 0111). The end
 * of the process the program started as, or of a child that passed its finalisers; not of
 * a child that did not: a vfork child (posix_spawn's, when its exec fails) shares the
 * parent's memory and would end the parent's results. */
static void c_library_exit(int status)
{
    if (!anvil_forked_child() || finalised_pid == anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0))
        anvil_program_end();
    for (;;)
        anvil_syscall(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

/* Whether the C library's _Exit leads to c_library_exit (then the executable's own
 * finalisers do not end the program: anvil_fini_end, anvil_fini_array_end). */
static uint32_t exit_patched;

/* Before the executable's DT_FINI runs: the end, unless the C library's _Exit will be. */
void anvil_fini_end(void)
{
    if (exit_patched)
        finalised_pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    else
        anvil_program_end();
}

#define DT_NULL 0
#define DT_PLTRELSZ 2
#define DT_STRTAB 5
#define DT_SYMTAB 6
#define DT_DEBUG 21
#define DT_BIND_NOW 24
#define DT_JMPREL 23
#define DT_FLAGS 30
#define DT_FLAGS_1 0x6ffffffb
#define DT_HASH 4
#define DT_GNU_HASH 0x6ffffef5
#define DF_BIND_NOW 8
#define DF_1_NOW 1
#define R_ARM_JUMP_SLOT 22
#define STT_FUNC 2
#define ARM_cacheflush 0x0f0002

struct link_map_head {  /* the public start of glibc's struct link_map (<link.h>) */
    uint32_t l_addr;
    const char *l_name;
    const int32_t *l_ld;
    const struct link_map_head *l_next;
};

static int names_exit(const char *name)
{
    return name[0] == '_' && (name[1] == 'e' || name[1] == 'E') && name[2] == 'x' && name[3] == 'i'
           && name[4] == 't' && name[5] == 0;
}

/* The value of a dynamic entry that names an address, as a run-time address: glibc adds
 * the load bias to those entries in place (ARM's dynamic section is writable), a bias
 * not yet added is added here. */
static uint32_t dynamic_address(uint32_t value, uint32_t l_addr)
{
    return value < l_addr ? value + l_addr : value;
}

/* The ELF symbol ``name`` a library defines as a function, found through its GNU or SysV
 * hash table (the dynamic linker's own way: the table does not say how many symbols there
 * are), or 0. */
static const uint32_t *defined_function(const int32_t *ld, uint32_t l_addr, uint32_t symtab, uint32_t strtab,
                                        const char *name)
{
    const uint32_t *gnu = 0, *sysv = 0;
    for (const int32_t *d = ld; d[0] != DT_NULL; d += 2) {
        if (d[0] == DT_GNU_HASH)
            gnu = (const uint32_t *)dynamic_address((uint32_t)d[1], l_addr);
        else if (d[0] == DT_HASH)
            sysv = (const uint32_t *)dynamic_address((uint32_t)d[1], l_addr);
    }
    const uint32_t *found = (const uint32_t *)hashed_symbol(gnu, sysv, (const uint8_t *)symtab, (const char *)strtab,
                                                            16, 4, name);
    /* st_info's type in the low nibble of word 3's low byte; st_shndx, its high half: defined */
    if (!found || (found[3] & 0xf) != STT_FUNC || (found[3] >> 16) == 0 || !found[1])
        return 0;
    return found;
}

/* The page-aligned start and length of the loaded segment of the library at ``l_addr``
 * that holds [from, to). Its ELF header is mapped at ``l_addr``, its first PT_LOAD being at
 * address 0 as every library's is now; one loaded at its link address (l_addr 0: prelink's,
 * long gone from Debian) is left alone. */
static int loaded_segment(uint32_t l_addr, uint32_t from, uint32_t to, uint32_t *first, uint32_t *span)
{
    uint16_t phnum, phentsize;
    const uint8_t *phdrs = mapped_program_headers(l_addr, &phnum, &phentsize);
    if (!phdrs)
        return 0;
    for (uint32_t i = 0; i < phnum; i++) {
        const uint32_t *ph = (const uint32_t *)(phdrs + i * phentsize);
        uint32_t start = l_addr + ph[2], end = start + ph[5];  /* p_vaddr, p_memsz */
        if (ph[0] == 1 /* PT_LOAD */ && start <= from && to <= end) {
            *first = start & ~(PAGE - 1);
            *span = ((end + PAGE - 1) & ~(PAGE - 1)) - *first;
            return 1;
        }
    }
    return 0;
}

/* Make the function ``sym`` (an ELF symbol of a loaded library) jump to ``target`` at its
 * entry: ``ldr pc, [pc, #-4]`` and the address (A32), or ``ldr.w pc, [pc]`` and the address
 * (T32; after a ``nop`` where the entry is not word-aligned), when the function is that
 * long. Its segment is made writable for the write and read-only again; the instruction
 * cache is flushed (real hardware). Returns whether it was done. */
static uint32_t patch_entry(const uint32_t *sym, uint32_t l_addr, uint32_t target)
{
    if (!sym)
        return 0;
    uint32_t entry = l_addr + sym[1], at = entry & ~1u, size = sym[2];
    uint32_t words[3], length;
    if (!(entry & 1)) {
        if (at & 3)
            return 0;
        words[0] = 0xe51ff004u;  /* ldr pc, [pc, #-4] */
        words[1] = target;
        length = 8;
    } else if (!(at & 2)) {
        words[0] = 0xf000f8dfu;  /* ldr.w pc, [pc] (halfwords f8df f000) */
        words[1] = target;
        length = 8;
    } else {
        words[0] = 0xf8dfbf00u;  /* nop; then ldr.w pc, [pc] from the next word */
        words[1] = 0x0000f000u | (target << 16);
        words[2] = target >> 16;
        length = 10;
    }
    if (size < length)
        return 0;
    /* The whole segment's protection changes, not the page's: a part of a mapping given
     * other rights becomes a mapping of its own, and /proc/self/maps, which programs read
     * (grep's stack-overflow handler counts its lines), would show libc's text in three. */
    uint32_t first, span;
    if (!loaded_segment(l_addr, at, at + length, &first, &span))
        return 0;
    if (anvil_syscall(SYS_mprotect, first, span, PROT_RWX, 0, 0, 0) != 0)
        return 0;
    for (uint32_t i = 0; i < length; i += 2)
        *(volatile uint16_t *)(at + i) = (uint16_t)(words[i / 4] >> (8 * (i % 4)));
    anvil_syscall(SYS_mprotect, first, span, PROT_RX, 0, 0, 0);
    anvil_syscall(ARM_cacheflush, at, at + length, 0, 0, 0, 0);
    return 1;
}

/* Who the calling thread is to the analysis lock, as the call stubs tell (arch/arm/
 * call_stubs.py _identify_thread): its thread pointer, or where it has none, its kernel
 * thread id * 2 + 1. */
static uint32_t lock_identity(void)
{
    uint32_t self;
    __asm__ volatile("mrc p15, 0, %0, c13, c0, 3" : "=r"(self));
    return self ? self : (uint32_t)anvil_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0) * 2 + 1;
}

/* ---------------------------------------------------------------- wrapped handlers */

/* ucontext (see UC_PC above): the interrupted SP, and the mask the kernel restores. */
#define UC_SP 84
#define UC_SIGMASK 104
/* Each wrapper entry (anvil_entry.S): movw ip, #k; b.w anvil_signal_wrapper (Thumb), and
 * the words the common part saves below the kernel's frame (r0-r3, ip, lr). */
#define WRAPPER_BYTES 8
#define WRAPPER_THUMB 1
#define WRAPPER_SAVED 6
#define WRAPPER_INFO(saved, siginfo) ((siginfo) ? (const int32_t *)(saved)[1] : 0)
#define WRAPPER_CONTEXT(saved, siginfo) ((siginfo) ? (uint8_t *)(saved)[2] : (uint8_t *)((saved) + WRAPPER_SAVED))
#define WRAPPER_TO_ORIGINAL(saved, context, siginfo, fault) to_original((saved), (context), (siginfo), (fault))

/* A fault an instruction of the copy raised, given the original instruction's PC (decision
 * 0202): the handler, and an unwinder it runs (gccgo's recover, GNAT's exceptions,
 * backtrace()), see the fault where the original raised it; the program's unwind index has
 * rows for the original code, none for the copy. A handler that returns resumes in the
 * copy: it returns to a restorer of Anvil's in the program's text (whose index row
 * describes the signal frame as the C library's restorer's does, so that unwinding
 * through it goes on into the faulting function), which puts the copy's PC back where
 * the handler left the original's, then goes on to the restorer the kernel gave. Where the
 * text has no room for the restorers and their index, the PC stays the copy's.
 *
 * A handler that returns through the program's own restorer (a static program's C
 * library's), whose system call the rewriter hooked (anvil_fault_sigreturn), keeps that
 * return address: the index has its row already.
 *
 * anvil_fault_map: the link addresses of the copies of the instructions that may fault and
 * of their originals, as pairs in the copies' order, and how many; anvil_fault_restorers:
 * Anvil's restorers' link addresses (with the Thumb bit), for a frame of a handler with
 * SA_SIGINFO and one without (0: none, no room in the text), then the program's own
 * restorers whose return is hooked (0: none). Written by the rewriter. */
uint32_t anvil_fault_map[2] __attribute__((section(".data")));
uint32_t anvil_fault_restorers[4] __attribute__((section(".data")));

/* How far past the start of an instruction's copy (its hooks first) the instruction may be. */
#define FAULT_COPY_REACH 512u
/* How far past the faulting instruction a handler may move the PC and still be taken to
 * mean the instruction after it (one instruction, at most two halfwords). */
#define FAULT_SKIP_REACH 4u
#define SIGNAL_PC(context) (*(anvil_word *)((context) + UC_PC))
#include "anvil_signal_slots.h"  /* (a .h: the compile cache hashes the headers) */

/* A bit of a map's original (rewriter/emit/inhost.py SYSTEM_CALL): a system call. */
#define FAULT_MAP_SYSTEM_CALL 1u

/* Where a signal interrupted a system call of the copy, in the interrupted context's
 * instruction set: the copy's SVC at the PC (a blocking call the kernel stepped back to, to
 * restart it after the handler) or just before it (a call that ended, or was cut short).
 * Returns the SVC's run-time address, 0 if neither. */
static uint32_t interrupted_call(const uint8_t *context, uint32_t pc)
{
    if (*(const uint32_t *)(context + UC_CPSR) & (1u << 5)) {  /* Thumb: SVC is 0xDFnn */
        if ((*(const uint16_t *)pc & 0xFF00u) == 0xDF00u)
            return pc;
        return (*(const uint16_t *)(pc - 2) & 0xFF00u) == 0xDF00u ? pc - 2 : 0;
    }
    for (uint32_t at = pc; at >= pc - 4; at -= 4) {  /* A32: cond 1111 xxxx, cond not 1111 */
        uint32_t word = *(const uint32_t *)at;
        if ((word & 0x0F000000u) == 0x0F000000u && word >> 28 != 0xFu)
            return at;
    }
    return 0;
}

/* ``fault``: an instruction raised the signal (or, for a handler without siginfo, it is one
 * that may be a fault); otherwise the signal is given the original's PC only where it
 * interrupted a system call (decision 0203). */
static void to_original(anvil_word *saved, uint8_t *context, int siginfo, int fault)
{
    uint32_t count = anvil_fault_map[1], restorer = anvil_fault_restorers[siginfo ? 0 : 1];
    uint32_t back = (uint32_t)saved[5] - anvil_bias;  /* where the handler returns: the kernel's restorer */
    int own = back != 0 && (back == anvil_fault_restorers[2] || back == anvil_fault_restorers[3]);
    if (count == 0 || (restorer == 0 && !own))
        return;
    uint32_t *pc = (uint32_t *)(context + UC_PC);
    const uint32_t *pairs = (const uint32_t *)(anvil_fault_map[0] + anvil_bias);
    /* The instruction's copy: a fault's is at the PC, a system call's at or just before it. */
    uint32_t copy = fault ? *pc : interrupted_call(context, *pc);
    if (copy == 0)
        return;
    /* The copy the instruction is in: its hooks come first, then the instruction. */
    uint32_t at = copy - anvil_bias;
    long index = last_pair_at_or_before(pairs, count, 0, at);
    if (index < 0 || at - pairs[2 * index] >= FAULT_COPY_REACH
        || ((uint32_t)index + 1 < count && at >= pairs[2 * index + 2]))
        return;  /* not in the copy */
    uint32_t original = pairs[2 * index + 1];
    if (!fault && !(original & FAULT_MAP_SYSTEM_CALL))
        return;  /* an SVC of the copy's own (a hook's), or no system call at all */
    signal_slot_keep(context, copy, (original & ~FAULT_MAP_SYSTEM_CALL) + anvil_bias, saved[5]);
    if (!own)
        saved[5] = restorer + anvil_bias;  /* the LR the handler gets (anvil_entry.S) */
}

/* Before the program's own restorer's system call (rt_sigreturn or sigreturn: ``nr``), SP
 * at the kernel's frame. */
void anvil_fault_sigreturn(uint32_t nr, uint32_t sp)
{
    if (anvil_fault_map[1] != 0 && (nr == SYS_rt_sigreturn || nr == SYS_sigreturn))
        signal_slot_resume((uint8_t *)(nr == SYS_rt_sigreturn ? sp + FRAME_UCONTEXT : sp), FAULT_SKIP_REACH);
}

/* Called by a restorer of Anvil's (rewriter/arch/arm/fault_restorers.py) as the handler
 * returns, SP at the kernel's frame (``rt``: the frame of a handler with SA_SIGINFO, its
 * ucontext after the siginfo): the copy's PC back where the handler left the original's;
 * returns the restorer to go on to. */
uint32_t anvil_fault_return(uint32_t sp, uint32_t rt)
{
    /* (0 only where later faults took its slot: the restorer then makes the system call itself) */
    return signal_slot_resume((uint8_t *)(rt ? sp + FRAME_UCONTEXT : sp), FAULT_SKIP_REACH);
}

/* Whether the context a signal interrupted is inside the analysis: on the hook stack
 * (where a call stub runs the routine), or with the analysis lock held by this thread
 * (also between the stub's taking it and its switch of stacks, on the program's stack:
 * the communicator's flush takes it in every Linux program). */
#define anvil_thread_identity lock_identity
static int on_hook_stack(uint32_t sp)
{
    return sp - (uint32_t)anvil_hook_stack < sizeof anvil_hook_stack;
}

/* Whether this thread, its SP ``sp``, is inside the analysis: on the hook stack, or with the
 * lock held by this thread. Both questions of anvil_signal_wrap.h ask it: where a signal
 * came, and whether a call that ends is inside another call of its thread, which gives the
 * held signals back as it ends. With two tests, a signal held back in the window where a
 * stub holds the lock on the program's stack returned through the program's restorer,
 * whose system-call hook ended a call there: unblocked at that end, the signal came again
 * at once, was held again (the lock still held), and so on until the stack overflowed
 * (decision 0206). */
static int anvil_call_nested(uint32_t sp)
{
    if (on_hook_stack(sp))
        return 1;
    uint32_t owner = __atomic_load_n(&anvil_call_lock[0], __ATOMIC_RELAXED);
    return owner != 0 && owner == lock_identity();
}

static int anvil_analysis_interrupted(const uint8_t *context)
{
    return anvil_call_nested(*(const uint32_t *)(context + UC_SP));
}

#include "anvil_signal_wrap.h"

/* Waits ANVIL_LOCK_WAIT_MS at most; 0: not taken (the caller goes on without it). */
anvil_word anvil_analysis_take(void)
{
    uint32_t self = lock_identity();
    /* (counted, as a call stub counts: a handler's call goes in again) */
    for (uint32_t round = 0; !lock_enter(self); round++)
        if (!anvil_lock_wait_round(round))
            return 0;
    return 1;
}

void anvil_analysis_give(anvil_word taken)
{
    if (!taken || !lock_leave())
        return;
    if (anvil_signal_work)  /* signals held back meanwhile: unblocked now the lock is free */
        anvil_signal_work_done(0);
}

/* Whether fork_prepare took the lock (read and written by its holder only). */
static uint8_t fork_holds_lock;

/* Before the C library's fork (decision 0127): the forking thread waits for the analysis
 * lock (arch/arm/call_stubs.py _lock: owner, depth) and holds it through the fork, so that
 * the child's copy of the analysis, the ring and the results buffer is whole and its lock
 * is held by a thread it has (a lock another thread held at the fork would be held for
 * ever there: the child hung at its first call). The C library's threads have a thread
 * pointer; the lock's owner is it. */
static void fork_prepare(void)
{
    uint32_t self;
    __asm__ volatile("mrc p15, 0, %0, c13, c0, 3" : "=r"(self));
    if (!self || __atomic_load_n(&anvil_call_lock[0], __ATOMIC_RELAXED) == self)
        return;  /* a fork made inside the analysis (a signal handler's): it is this thread's */
    while (!lock_enter(self))
        __asm__ volatile("yield");
    fork_holds_lock = 1;
}

/* After the fork, in the parent and in the child alike: the lock given back. */
static void fork_done(void)
{
    if (!fork_holds_lock)
        return;
    fork_holds_lock = 0;
    lock_leave();
}

#define SYS_fork 2
#define SYS_clone3 435
#define CLONE_VM 0x100

/* Before a fork system call in the copies of a program that starts threads (a static
 * program's C library, whose fork handlers this runtime cannot register; ``nr``: fork,
 * clone or clone3, ``arg``: clone's flags, clone3's struct clone_args, whose first word is
 * the flags), called through a call stub, which holds the lock already: one more count
 * keeps it held over the fork, as fork_prepare does. A clone that makes a thread
 * (CLONE_VM) shares the memory and its lock: nothing to hold. Decision 0127. */
void anvil_before_fork(uint32_t nr, uint32_t arg)
{
    int fork = nr == SYS_fork || (nr == SYS_clone && !(arg & CLONE_VM))
               || (nr == SYS_clone3 && arg && !(*(const uint32_t *)arg & CLONE_VM));
    if (!fork)
        return;
    uint32_t self = lock_identity();
    if (__atomic_load_n(&anvil_call_lock[0], __ATOMIC_RELAXED) != self)
        return;  /* (no lock held: a call made without a stub, d16-d31 being the program's) */
    lock_enter(self);
    fork_holds_lock = 1;
}

/* At the instruction after it, in each process (and in a thread a clone started), also
 * through a call stub: the count taken for the fork given back; the stub's own way out
 * then frees the lock. */
void anvil_after_fork(void)
{
    if (!fork_holds_lock || __atomic_load_n(&anvil_call_lock[0], __ATOMIC_RELAXED) != lock_identity())
        return;
    fork_holds_lock = 0;
    lock_leave();
}

/* The analysis lock's fork handlers, registered with the C library (``map``): glibc's
 * __register_atfork (its pthread_atfork is a wrapper in libc_nonshared.a), musl's
 * pthread_atfork (which ignores the fourth argument). */
static void register_fork_handlers(const struct link_map_head *map, uint32_t symtab, uint32_t strtab)
{
    const uint32_t *sym = defined_function(map->l_ld, map->l_addr, symtab, strtab, "__register_atfork");
    if (!sym)
        sym = defined_function(map->l_ld, map->l_addr, symtab, strtab, "pthread_atfork");
    if (!sym)
        return;
    int (*register_atfork)(void (*)(void), void (*)(void), void (*)(void), void *) =
        (int (*)(void (*)(void), void (*)(void), void (*)(void), void *))(map->l_addr + sym[1]);
    register_atfork(fork_prepare, fork_done, fork_done, 0);
}

/* A sanitizer's run time (ASan, LSan, UBSan...) ends the process by its own exit_group
 * system call after a report (under qemu-arm every ASan program's LeakSanitizer does, at
 * exit), past the exits the results wait for: it calls the function given to
 * __sanitizer_set_death_callback first, which writes them. */
static void sanitizer_death(void) { anvil_program_end(); }
static uint32_t death_callback_set;

/* The name of the symbol relocation ``rel`` (its two words) binds, in an object whose
 * tables are ``symtab`` and ``strtab``; 0 where it is not an R_ARM_JUMP_SLOT. */
static const char *jump_slot_name(const uint32_t *rel, uint32_t symtab, uint32_t strtab)
{
    if ((rel[1] & 0xff) != R_ARM_JUMP_SLOT)
        return 0;
    return (const char *)(strtab + ((const uint32_t *)(symtab + 16 * (rel[1] >> 8)))[0]);
}

/* The function ``name`` as the dynamic linker would bind it: the first loaded object, in
 * the order of the link map, that defines it; 0 where none does. */
static anvil_word bound_function(const struct link_map_head *first, const char *name)
{
    for (const struct link_map_head *map = first; map; map = map->l_next) {
        uint32_t symtab = 0, strtab = 0;
        for (const int32_t *d = map->l_ld; d && d[0] != DT_NULL; d += 2) {
            if (d[0] == DT_SYMTAB) symtab = dynamic_address((uint32_t)d[1], map->l_addr);
            else if (d[0] == DT_STRTAB) strtab = dynamic_address((uint32_t)d[1], map->l_addr);
        }
        const uint32_t *sym = symtab && strtab ? defined_function(map->l_ld, map->l_addr, symtab, strtab, name) : 0;
        if (sym)
            return map->l_addr + sym[1];
    }
    return 0;
}

/* Whether the dynamic linker made ``page`` read-only once it had relocated the loaded object
 * ``map`` (``executable``: the program itself): a page below the end of the object's
 * PT_GNU_RELRO segment, in it, as glibc seals them. A program linked -z now without RELRO
 * (-z norelro: Debian 13's toybox) has its GOT beside its writable data, which a page made
 * read-only after a slot's write would fault on. Headers not found: not sealed (the page
 * is left writable). */
static int sealed_after_relocation(const struct link_map_head *map, int executable, uint32_t page)
{
    uint16_t count = 0, size = 32;
    const uint8_t *headers = executable ? executable_phdr : mapped_program_headers(map->l_addr, &count, &size);
    if (executable)
        count = (uint16_t)executable_phnum;
    for (uint32_t k = 0; headers && k < count; k++) {
        const uint32_t *ph = (const uint32_t *)(headers + k * size);
        uint32_t start = (map->l_addr + ph[2]) & ~(PAGE - 1), end = (map->l_addr + ph[2] + ph[5]) & ~(PAGE - 1);
        if (ph[0] == PT_GNU_RELRO && start <= page && page < end)
            return 1;
    }
    return 0;
}

/* The loaded objects, and the executable's PLT relocations and symbols (anvil_signal_plt). */
static const struct link_map_head *loaded;
static uint32_t exe_jmprel, exe_jmprel_size, exe_symtab, exe_strtab;

/* Where the header asks (``libraries``), through the executable's DT_DEBUG list of loaded
 * objects:
 * - LIBRARY_EXITS: each loaded library's GOT slots of _exit and _Exit (its R_ARM_JUMP_SLOT
 *   relocations) are made to lead to library_exit, and the C library's own _Exit, which
 *   every exit ends in, is made to jump to c_library_exit (patch_entry; decision 0111);
 * - LIBRARY_WRAP_HANDLERS: every loaded object's GOT slots of the C library's functions
 *   that set a signal's action, the executable's too, lead to the runtime's
 *   (wrapped_function), which give the C library's own the wrapper in the handler's place.
 * A slot of an object bound at load (BIND_NOW) is in its read-only RELRO part, made
 * writable for the write and read-only again; a lazily bound one's is writable (and may
 * still lead to the binder: it never will now). */
static void hook_libraries(uint32_t bias, const struct anvil_header *h)
{
    const int32_t *dyn = (const int32_t *)(h->dynamic + bias);
    const struct { int32_t version; const struct link_map_head *map; } *debug = 0;
    for (; dyn[0] != DT_NULL; dyn += 2)
        if (dyn[0] == DT_DEBUG)
            debug = (const void *)dyn[1];
    if (!debug || !debug->map)
        return;
    int exits = (h->libraries & LIBRARY_EXITS) != 0;
    loaded = debug->map;
    for (const struct link_map_head *map = debug->map; map; map = map->l_next) {
        int library = map != debug->map;  /* the executable's own exits are the rewrite's */
        uint32_t jmprel = 0, size = 0, symtab = 0, strtab = 0, bind_now = 0;
        for (const int32_t *d = map->l_ld; d && d[0] != DT_NULL; d += 2) {
            uint32_t v = (uint32_t)d[1];
            if (d[0] == DT_JMPREL) jmprel = dynamic_address(v, map->l_addr);
            else if (d[0] == DT_PLTRELSZ) size = v;
            else if (d[0] == DT_SYMTAB) symtab = dynamic_address(v, map->l_addr);
            else if (d[0] == DT_STRTAB) strtab = dynamic_address(v, map->l_addr);
            else if (d[0] == DT_BIND_NOW) bind_now = 1;
            else if (d[0] == DT_FLAGS) bind_now |= v & DF_BIND_NOW;
            else if (d[0] == DT_FLAGS_1) bind_now |= v & DF_1_NOW;
        }
        if (exits && library && !exit_patched && symtab && strtab)
            exit_patched = patch_entry(defined_function(map->l_ld, map->l_addr, symtab, strtab, "_Exit"),
                                       map->l_addr, (uint32_t)c_library_exit);
        if (exits && library && symtab && strtab && names_c_library(map->l_name))
            register_fork_handlers(map, symtab, strtab);
        if (exits && library && !death_callback_set && symtab && strtab) {
            const uint32_t *set = defined_function(map->l_ld, map->l_addr, symtab, strtab,
                                                   "__sanitizer_set_death_callback");
            if (set) {
                ((void (*)(void (*)(void)))(map->l_addr + set[1]))(sanitizer_death);
                death_callback_set = 1;
            }
        }
        if (!library) {
            exe_jmprel = jmprel;
            exe_jmprel_size = size;
            exe_symtab = symtab;
            exe_strtab = strtab;
        }
        if (!jmprel || !symtab || !strtab)
            continue;
        const uint32_t *rel = (const uint32_t *)jmprel;
        for (uint32_t i = 0; i < size / 8; i++) {
            const char *name = jump_slot_name(rel + 2 * i, symtab, strtab);
            if (!name)
                continue;
            uint32_t to = 0;
            anvil_word *real;
            if (exits && library && names_exit(name)) {
                to = (uint32_t)library_exit;
            } else if (wrap_handlers && (to = wrapped_function(name, &real)) != 0) {
                if (!*real)
                    *real = bound_function(debug->map, name);
                /* The executable's slot still leading to its lazy binder is left so: the
                   binder's instructions in the executable run and are counted as they are
                   in the original (anvil_signal_plt; decision 0143). */
                if (!*real || *real == to
                    || (!library && !bind_now && *(const uint32_t *)(map->l_addr + rel[2 * i]) != *real))
                    continue;
            } else {
                continue;
            }
            uint32_t slot = map->l_addr + rel[2 * i], page = slot & ~(PAGE - 1);
            anvil_syscall(SYS_mprotect, page, PAGE, PROT_RW, 0, 0, 0);
            *(volatile uint32_t *)slot = to;
            if (bind_now && sealed_after_relocation(map, !library, page))
                anvil_syscall(SYS_mprotect, page, PAGE, PROT_R, 0, 0, 0);
        }
    }
}

/* A signal-action function's PLT entry in the executable, before its jump out through GOT
 * slot ``slot`` (run-time address), r0 the signal and r1 the action or handler (decision
 * 0143). First, as at every such call, the default goes back where the action is the
 * results handler (anvil_signal_action); then the slot, left to the lazy binder by
 * hook_libraries, is led to the runtime's function once bound (wrap_through_slot). */
void anvil_signal_plt(uint32_t slot, uint32_t sig, uint32_t arg)
{
    anvil_signal_action(SYS_rt_sigaction, sig, 0, 0);
    if (!wrap_handlers || !exe_jmprel || !exe_symtab || !exe_strtab || sig == 0 || sig > 64)
        return;
    const char *name = 0;
    const uint32_t *rel = (const uint32_t *)exe_jmprel;
    for (uint32_t i = 0; i < exe_jmprel_size / 8 && !name; i++)
        if (loaded->l_addr + rel[2 * i] == slot)
            name = jump_slot_name(rel + 2 * i, exe_symtab, exe_strtab);
    wrap_through_slot(slot, name, sig, arg);
}

/* The C library's function ``name`` as the dynamic linker binds it (anvil_signal_wrap.h). */
static anvil_word library_function(const char *name)
{
    return bound_function(loaded, name);
}

/* ---------------------------------------------------------------- files */

/* The lowest descriptor a results file is given: above the program's own (and ReHost's
 * channel, 1000), as Valgrind keeps its files at the top of the table. A file opened at the
 * start (memtrace's trace) would otherwise take the program's first free descriptor: the
 * program's own files would get other numbers than in the original, and a program that
 * closes or reuses descriptors it did not open (tcsh moves its own to 16-19 and closes
 * the rest) would cut the trace short or have it written into its own files. */
#define ANVIL_SYS_FCNTL SYS_fcntl64
#define ANVIL_O_EXTRA 0400000
/* ARM EABI: the 64-bit offset in an even register pair, after a pad */
#define ANVIL_PREAD(fd, buffer, length, offset) \
    anvil_syscall(SYS_pread64, fd, (long)buffer, length, 0, (long)(uint32_t)(offset), (long)((offset) >> 32))
#include "anvil_results.h"  /* (a .h: the compile cache hashes the headers) */

void anvil_close(int fd) { anvil_syscall(SYS_close, fd, 0, 0, 0, 0, 0); }

void anvil_cut_at(int fd, uint64_t length)
{
    uint32_t result[2];
    /* ARM EABI: ftruncate64(fd, pad, low, high); _llseek(fd, high, low, &result, SEEK_SET) */
    anvil_syscall(SYS_ftruncate64, fd, 0, (long)(uint32_t)length, (long)(length >> 32), 0, 0);
    anvil_syscall(SYS_llseek, fd, (long)(length >> 32), (long)(uint32_t)length, (long)result, 0, 0);
}

long anvil_write_fd(int fd, const char *buf, uint32_t len)
{
    return anvil_syscall(SYS_write, fd, (long)buf, len, 0, 0, 0);
}
