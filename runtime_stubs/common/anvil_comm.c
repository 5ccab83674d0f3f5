/* ReHost communicator: hook records go to a ring buffer in the target's memory and
 * are flushed through the platform's channel when it fills and at program end.
 * Compiled with ANVIL_RING_LOCAL set, the same ring serves InHost's deferred routines
 * (rewriter/emit/deferred.py): a flush runs the records' routines in the program, through
 * the generated anvil_ring_dispatch, and there is no stream header, channel or end record.
 * Stream format (little-endian words as wide as the program's addresses, anvil_addr: 32-bit
 * on ARM, 64-bit on x86-64; see rehost/stream.py):
 *   header  MAGIC VERSION hash0 hash1 bias
 *   record  site-id dynamic-arg...        (as many args as the site's routine has)
 *   end     END narrays {index bytes data padded to 4}...
 * The program never waits for the analysis, only for the channel when it is full.
 *
 * Interrupt and signal handlers make records too, possibly while the code they
 * interrupted is in the middle of one (docs/decisions/0010-interrupt-safe-records.md):
 *
 * - Cortex-M: an append runs with interrupts masked (PRIMASK), and so does a flush.
 * - Linux: an append first reserves its words (LDREX/STREX on the cursor: a handler
 *   that appended in between makes the STREX fail, and the reservation is made again
 *   past the handler's records; on x86-64 one atomic add), then writes them. Words are never written where they
 *   are not reserved, so a handler's committed record is never overwritten. Between
 *   the two steps the reserved words hold garbage: ``writers`` counts the appends
 *   under way (a plain increment and decrement: a handler always gives back what it
 *   took before the code it interrupted goes on), and a flush that finds one (it was
 *   called by a handler that interrupted it) sends nothing: records go on past the
 *   limit, and the next record after the interrupted append has finished flushes. A
 *   flush runs with the signals blocked. Sites inside the program's own LDREX/STREX
 *   window reserve with a plain load and store instead (``_in_exclusive``): an
 *   exclusive of ours there would make the program's STREX fail each time round its
 *   loop; they are not safe against a signal handler's records.
 *
 * Threads: ``writers`` tells an interrupted append from another thread's only when one
 * thread makes records. In a program the rewrite found to start threads (ANVIL_THREADS)
 * every record is appended under the call stub's lock (rewriter/arch/arm/call_stubs.py;
 * on x86-64 anvil_site_locked);
 * elsewhere records are appended inline on the assumption that there is one thread. When
 * that is wrong (threads started in a way the rewrite did not see), the threads' appends
 * race on ``writers`` and on the ring's start: a flush made on a second thread says so
 * and gives up the stream (decision 0087), and a put-off flush leaves a margin of the
 * slack free, so that the appends other threads have under way meanwhile still land
 * inside the ring. The flush and the record routines are called under the lock in every
 * Linux copy (rewriter/emit/inhost.py), so they never run on two threads at once.
 *
 * The inline T32 form of the Linux append is in rewriter/arch/arm/hooks.py (_emit_record);
 * x86-64's, for the misses of repeat filters in a program of one thread, is
 * rewriter/arch/x86_64/calls.py's _ring_record (its other records are made in C). */
#include "anvil_rt.h"

#define STREAM_MAGIC 0x48524E41u /* "ANRH" */
#define STREAM_VERSION 1u
#define END_MARK ((anvil_addr)-1)
#define MAX_RECORD 4u            /* words: the site id and at most three arguments */
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
#define CORTEX_M 1
#define RING_WORDS 4096u     /* 16 KiB between flushes: microcontrollers have little RAM */
#define RING_SLACK 8u        /* a record started below the limit may end past it */
#define RING_MARGIN 0u       /* one core, and appends masked */
#else
#define CORTEX_M 0
#define RING_WORDS 65536u    /* 256 KiB between flushes */
/* Past the limit: a record started below it, and the records of a signal handler that
 * interrupted an append (the flush waits for it). A handler that fills this too loses
 * the stream (the results are reported incomplete). */
#define RING_SLACK 16384u
/* Of the slack, what a put-off flush leaves free: records other threads have reserved
 * and not yet written while it gives up (a program whose threads the rewrite missed). */
#define RING_MARGIN 1024u
#ifdef __x86_64__
#define SYS_arch_prctl 158
#define ARCH_GET_FS 0x1003
#define COMM_SYS_OPENAT 257
#define COMM_SYS_CLOSE 3
#else
#define COMM_SYS_OPENAT 322
#define COMM_SYS_CLOSE 6
#endif
#define COMM_SYS_GETDENTS64 217  /* (the same number on both) */
#endif

#ifdef ANVIL_RING_WORDS      /* anvil instrument --ring-size: the user's choice */
#undef RING_WORDS
#define RING_WORDS ANVIL_RING_WORDS
#endif

#ifndef ANVIL_RING_LOCAL
#define ANVIL_RING_LOCAL 0
#endif

#ifndef ANVIL_THREADS  /* records appended under the call stub's lock (a program that starts threads) */
#define ANVIL_THREADS 0
#endif

#if ANVIL_RING_LOCAL
/* Runs the records in [words, end) in order (generated with the deferred routines). */
void anvil_ring_dispatch(const anvil_addr *words, const anvil_addr *end);
#else
extern const uint32_t anvil_rh_table_hash[2];
extern const uint32_t anvil_rh_narrays;
void anvil_rh_send_arrays(void);
/* The platform's channel (arm/anvil_channel.c: Linux; cortexm/anvil_channel.c: semihosting). */
void anvil_channel_open(void);
void anvil_channel_send(const void *data, uint32_t len);
#endif

static anvil_addr ring[RING_WORDS + RING_SLACK];
/* Read and written by inline record code (rewriter/arch/arm/hooks.py, _emit_record, at these
 * offsets: 0, 4, 8; x86-64: calls.py, _ring_record, at 0, 8, 16). */
struct {
    anvil_addr *cursor;         /* the next free word */
    anvil_addr *limit;          /* the word past which the ring must be flushed */
    volatile uint32_t writers;  /* appends under way (Linux) */
} anvil_rh_state;
#define anvil_rh_cursor anvil_rh_state.cursor
#define anvil_rh_limit anvil_rh_state.limit
#define anvil_rh_writers anvil_rh_state.writers
static int ended;  /* the end record has gone: later records (a late handler's) are dropped */
#if !ANVIL_RING_LOCAL
/* A ReHost image's records go to the host (anvil_rt.c's before_exec asks; its own weak
 * definition says no). */
int anvil_records_to_host(void) { return 1; }
/* What tells `anvil run` a ReHost image whose site table is not beside it (rewriter/emit/
 * rehost.py REHOST_MARK): run without one, its records would go nowhere, silently. */
__attribute__((used)) const char anvil_rehost_mark[] = "ANVIL-REHOST-COPY";
#endif
static int lost;   /* records were lost: nothing more is sent, the host sees no end record */

/* What masking saved, for unmask (PRIMASK, or the signal mask). */
typedef struct {
#if CORTEX_M
    uint32_t primask;
#else
    uint32_t sigset[2];
#endif
} masked_t;

/* Keep interrupt or signal handlers (and their records) out until unmask. On Cortex-M,
 * CPSID works in privileged code (unprivileged, it is ignored: see the decision). */
static inline masked_t mask(void)
{
    masked_t old;
#if CORTEX_M
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(old.primask) : : "memory");
#else
    anvil_block_signals(old.sigset);
#endif
    return old;
}

static inline void unmask(masked_t *old)
{
#if CORTEX_M
    __asm__ volatile("msr primask, %0" : : "r"(old->primask) : "memory");
#else
    anvil_restore_signals(old->sigset);
#endif
}

#define THREADS_MISSED "anvil: records were made on more than one thread, but the rewrite found no thread start " \
                       "in the program (its threads were started in a way it does not know); records lost, the " \
                       "results will be incomplete\n"

#if !CORTEX_M && !ANVIL_THREADS
/* The thread pointer (TPIDRURO; x86-64: the fs base) of the first flush's thread; 0 before
 * the C library set it. */
static anvil_word first_thread;

/* How many threads the process has now: /proc/self/task holds an entry for each (0: not
 * readable). Under qemu-user those are the emulator's own too. */
static int count_threads(void)
{
    char entries[512];
    long fd = anvil_syscall(COMM_SYS_OPENAT, -100 /* AT_FDCWD */, (long)"/proc/self/task", 0, 0, 0, 0);
    int threads = 0;
    long n;
    if (fd < 0)
        return 0;
    while ((n = anvil_syscall(COMM_SYS_GETDENTS64, fd, (long)entries, sizeof entries, 0, 0, 0)) > 0) {
        for (long at = 0; at < n;) {  /* struct linux_dirent64: d_reclen at 16, d_name at 19 */
            threads += entries[at + 19] != '.';
            at += *(unsigned short *)(entries + at + 16);
        }
    }
    anvil_syscall(COMM_SYS_CLOSE, fd, 0, 0, 0, 0, 0);
    return threads;
}

/* The threads the process had as the program started (anvil_rh_start): qemu-user has a
 * thread of its own beside the program's, which is not a thread of the program. */
static int threads_at_start;

/* Whether the program has started threads (read only when records are lost, to say why:
 * a handler that made records again and again is the other cause). */
static int several_threads(void)
{
    return count_threads() > (threads_at_start > 1 ? threads_at_start : 1);
}

/* Called masked by a flush, in a program rewritten for one thread: a flush made on another
 * thread than the first flush's means the program's threads make records, which the
 * inline appends cannot keep apart (see the head of this file): the stream is given up,
 * saying why. */
static void one_thread(void)
{
#ifdef __x86_64__
    anvil_word self = 0;  /* (fs:0 cannot be read before the C library set fs: a system call) */
    anvil_syscall(SYS_arch_prctl, ARCH_GET_FS, (long)&self, 0, 0, 0, 0);
#else
    uint32_t self;
    __asm__ volatile("mrc p15, 0, %0, c13, c0, 3" : "=r"(self));
#endif
    if (!first_thread || !self) {
        if (!first_thread)
            first_thread = self;
        return;
    }
    if (self == first_thread || lost)
        return;
    lost = 1;
    anvil_warn(THREADS_MISSED);
}
#else
static inline void one_thread(void) {}
#endif

/* Records lost: a record was under way (a writer in the ring) when the ring filled. In a
 * program rewritten for one thread that is another thread's record as often as a signal
 * handler's (one_thread sees the other thread only once it flushes): which, is said. */
static void lose(void)
{
    lost = 1;
#if !CORTEX_M && !ANVIL_THREADS
    if (several_threads()) {
        anvil_warn(THREADS_MISSED);
        return;
    }
#endif
    anvil_warn("anvil: a signal handler made more records than the ring holds while another record "
               "was being made; records lost, the results will be incomplete\n");
}

/* Sends the committed records and restarts the ring, masked: a handler's record made
 * while the bytes are being sent would land at the ring's start, over bytes not yet sent
 * (the UART sends byte by byte, a Linux send may be partial), and one made between
 * reading the cursor and restarting the ring would be lost. */
void anvil_rh_flush(void)
{
    masked_t old = mask();
    one_thread();
    if (anvil_rh_writers && !lost) {
        /* Called by a handler that interrupted an append between its reservation and its
         * last word: those words cannot be sent yet. Go on past the limit (every record
         * comes back here) while a record still fits before the margin. */
        if (anvil_rh_cursor + MAX_RECORD <= ring + RING_WORDS + RING_SLACK - RING_MARGIN) {
            unmask(&old);
            return;
        }
        lose();
    }
    if (!ended && !lost) {
#if ANVIL_RING_LOCAL
        anvil_ring_dispatch(ring, anvil_rh_cursor);
#else
        anvil_channel_send(ring, (uint32_t)((char *)anvil_rh_cursor - (char *)ring));
#endif
    }
    anvil_rh_cursor = ring;
    unmask(&old);
}

#if !CORTEX_M && !defined(__x86_64__)
static inline anvil_addr *load_exclusive(anvil_addr **at)
{
    anvil_addr *value;
    __asm__ volatile("ldrex %0, [%1]" : "=r"(value) : "r"(at) : "memory");
    return value;
}

/* 0 when stored: no exception and no other STREX since load_exclusive. */
static inline uint32_t store_exclusive(anvil_addr **at, anvil_addr *value)
{
    uint32_t failed;
    __asm__ volatile("strex %0, %2, [%1]" : "=&r"(failed) : "r"(at), "r"(value) : "memory");
    return failed;
}
#endif

/* One record of ``n`` words; ``exclusive``: the cursor may be reserved with LDREX/STREX
 * (not inside the program's own exclusive window). */
static inline void append(const anvil_addr *words, uint32_t n, int exclusive)
{
    anvil_addr *at, *next;
#if CORTEX_M
    (void)exclusive;  /* masking leaves the exclusive monitor alone */
    masked_t old = mask();
    at = anvil_rh_cursor;
    next = anvil_rh_cursor = at + n;
    for (uint32_t i = 0; i < n; i++)
        at[i] = words[i];
    unmask(&old);
#else
    anvil_rh_writers++;
    __asm__ volatile("" ::: "memory");  /* the append says it is under way before it reserves */
    if (exclusive) {
#ifdef __x86_64__
        /* One instruction reserves the words: a handler's records come before or after it.
         * XADD without LOCK: another thread's records are made under the call sites' lock
         * (ANVIL_THREADS), and a locked add costs about twenty times more. */
        size_t step = n * sizeof *at;  /* in: the bytes to reserve; out: the cursor before */
        __asm__ volatile("xaddq %0, %1" : "+r"(step), "+m"(anvil_rh_cursor) : : "memory");
        at = (anvil_addr *)step;
        next = at + n;
#else
        do {
            at = load_exclusive(&anvil_rh_cursor);
            next = at + n;
        } while (store_exclusive(&anvil_rh_cursor, next));
#endif
    } else {
        at = anvil_rh_cursor;
        next = anvil_rh_cursor = at + n;
    }
    for (uint32_t i = 0; i < n; i++)
        at[i] = words[i];
    __asm__ volatile("" ::: "memory");  /* the words are stored before the append says it is done */
    anvil_rh_writers--;
#endif
    if (next > anvil_rh_limit)
        anvil_rh_flush();
}

/* Program start (called before the program's first instruction, before any handler can
 * run: nothing to mask). */
void anvil_rh_start(void)
{
    anvil_addr *at = ring;
#if !ANVIL_RING_LOCAL
    anvil_channel_open();
    *at++ = STREAM_MAGIC;
    *at++ = STREAM_VERSION;
    *at++ = anvil_rh_table_hash[0];
    *at++ = anvil_rh_table_hash[1];
    *at++ = anvil_bias;
#endif
    anvil_rh_limit = ring + RING_WORDS;
    anvil_rh_cursor = at;
#if !CORTEX_M && !ANVIL_THREADS
    threads_at_start = count_threads();
#endif
}

/* The record routines sites call: anvil_rh_record<N>(site, N run-time arguments), and the
 * _in_exclusive forms for sites inside the program's own exclusive window (no LDREX/STREX). */
#define RECORD_ROUTINES(n, params, ...)                                                        \
    void anvil_rh_record##n params { anvil_addr w[] = {__VA_ARGS__}; append(w, (n) + 1, 1); }  \
    void anvil_rh_record##n##_in_exclusive params { anvil_addr w[] = {__VA_ARGS__}; append(w, (n) + 1, 0); }

RECORD_ROUTINES(0, (anvil_addr site), site)
RECORD_ROUTINES(1, (anvil_addr site, anvil_addr a), site, a)
RECORD_ROUTINES(2, (anvil_addr site, anvil_addr a, anvil_addr b), site, a, b)
RECORD_ROUTINES(3, (anvil_addr site, anvil_addr a, anvil_addr b, anvil_addr c), site, a, b, c)

#if !ANVIL_RING_LOCAL
/* Called masked (anvil_rh_end). */
static inline void put(anvil_addr word)
{
    *anvil_rh_cursor++ = word;
}

void anvil_rh_send_array(uint32_t index, const void *data, uint32_t bytes)
{
    put(index);
    put(bytes);
    anvil_rh_flush();
    if (lost)
        return;
    anvil_channel_send(data, bytes);
    static const anvil_addr zero;
    if (bytes % sizeof zero)
        anvil_channel_send(&zero, sizeof zero - bytes % sizeof zero);
}
#endif

/* Program end, masked, and records made afterwards are dropped. ReHost: the end marker,
 * the arrays the program filled inline (a handler's record among them would break the
 * end record) and the last flush. Local ring: the last records run, before the tools'
 * end routines, which anvil_program_end calls next. anvil_program_end has already
 * derived the counts not made inline. */
void anvil_rh_end(void)
{
    masked_t old = mask();
    if (anvil_rh_writers && !lost)
        lose();  /* the program ends in a handler that interrupted an append: its words never come */
#if !ANVIL_RING_LOCAL
    if (anvil_rh_cursor > anvil_rh_limit)
        anvil_rh_flush();  /* records past the limit (a flush put off, or not made yet) */
    put(END_MARK);
    put(anvil_rh_narrays);
    anvil_rh_send_arrays();
#endif
    anvil_rh_flush();
    ended = 1;
    unmask(&old);
}
