/* Runtime interface for analysis routines. The same tool source builds for the target
 * (InHost: freestanding, linked into the instrumented program; no libc, system calls
 * made directly, so it never touches the program's heap, stdio or errno) and for the
 * host (ReHost: a shared library loaded by `anvil rehost-server`, ANVIL_HOST defined).
 * On the host the site tables and arrays are pointers the server fills per session. */
#ifndef ANVIL_RT_H
#define ANVIL_RT_H

#ifdef ANVIL_HOST
#include <stddef.h>
#include <stdint.h>
/* A tool's array: zero-filled, its length fixed at instrumentation time. */
#define ANVIL_ARRAY(type, name) __attribute__((weak)) type *anvil_array_##name
#define ANVIL_TABLE(type, name) extern type *name
#define ANVIL_CONST(type, name) extern type name

/* ReHost's batch dispatcher (runtime_stubs/host/anvil_host.c). Every routine is called
 * with four 64-bit words: a routine declared with fewer (32-bit or pointer) parameters
 * reads the registers it knows and ignores the rest, as the x86-64 and AArch64 calling
 * conventions pass the first arguments in registers. */
typedef void (*anvil_routine)(uint64_t, uint64_t, uint64_t, uint64_t);

/* A site as the server packs it (rehost/dispatch_c.py, field for field). */
struct anvil_site {
    anvil_routine fn;
    uint64_t args[4];   /* static arguments; dynamic slots are overwritten per record */
    uint16_t ndynamic;  /* words after the site id in the record */
    uint16_t shape;     /* how the record's words go among the arguments: anvil_prepare_sites */
    uint8_t slot[4];    /* argument position of each dynamic word */
};

/* Shapes: no dynamic word (0); one word to argument k; two words to arguments k0 and k1. */
#define ANVIL_ONE_WORD_TO(k) (4 + (k))
#define ANVIL_TWO_WORDS_TO(k0, k1) (8 + 4 * (k0) + (k1))

#else
#pragma GCC visibility push(hidden)
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef unsigned long long uint64_t;
#ifdef __x86_64__
typedef unsigned long size_t;
#else
typedef uint32_t size_t;
#endif
#define ANVIL_ARRAY(type, name) extern type anvil_array_##name[]
#define ANVIL_TABLE(type, name) extern type name[]
#define ANVIL_CONST(type, name) extern const type name
#endif

#define ANVIL_HIDDEN __attribute__((visibility("hidden")))

/* A value as wide as the target's registers: what start and end routines are passed (a
 * string's address, a constant), the load bias. */
#if defined(ANVIL_HOST) || defined(__x86_64__)
typedef uint64_t anvil_word;
#else
typedef uint32_t anvil_word;
#endif

/* The program under analysis is an x86-64 one: on the target itself, or on the ReHost host
 * in a library built for the sessions of x86-64 programs (rehost/host_build.py defines it). */
#if defined(__x86_64__) && !defined(ANVIL_HOST) && !defined(ANVIL_TARGET_X86_64)
#define ANVIL_TARGET_X86_64 1
#endif

/* An address of the program under analysis as a tool keeps it (a cache line's key, a
 * table's entry), and a word of a ReHost record (the site id, a run-time argument): 64
 * bits for an x86-64 program, 32 for an ARM one, on the target and on the host alike. */
#ifdef ANVIL_TARGET_X86_64
typedef uint64_t anvil_addr;
#else
typedef uint32_t anvil_addr;
#endif

#ifdef ANVIL_HOST
/* A routine's run form (optional): runs the records at words[0..nwords) one after the
 * other for as long as each is complete and its site id is below nsites with
 * sites[id].shape == shape, with the effect of calling the routine once per record;
 * returns how many it ran. The dispatcher calls it at a complete record of one of its
 * sites (so it runs one at least), so that a tool's hottest routine keeps its state in
 * registers across records (no call per record, no reload of its globals, counters
 * summed locally). A tool lists its run forms in `anvil_run_forms`, ended by a zero
 * entry. */
typedef size_t (*anvil_run)(const struct anvil_site *sites, uint32_t nsites, uint32_t shape,
                            const anvil_addr *words, size_t nwords);
struct anvil_run_form {
    anvil_routine routine;
    uint32_t shape;  /* the one shape (above) of the routine's sites that `run` is written for */
    /* 0, or called once by anvil_prepare_sites when every site has its shape, the form's
     * sites the value `shape` passed here (which `run` is passed too): the run form may
     * derive a table of its own from the sites. Nonzero declines (out of memory): the
     * form's sites then have their routine called per record. */
    int (*prepare)(const struct anvil_site *sites, uint32_t nsites, uint32_t shape);
    anvil_run run;
    /* 0, or called by anvil_end_session before the session's copy of the library is
     * unloaded: frees what `prepare` allocated (the heap outlives the library). */
    void (*release)(void);
};
#endif

/* A block's or procedure's address from the facts below: on ARM the lowest bit says Thumb
 * code; x86-64 instructions start at any byte. */
#ifdef ANVIL_TARGET_X86_64
#define ANVIL_CODE_ADDRESS(a) (a)
#else
#define ANVIL_CODE_ADDRESS(a) ((a) & ~1u)
#endif

/* The static facts of the instrumented image (generated C on the target; the site
 * table sent when a ReHost session opens on the host). */
ANVIL_CONST(uint32_t, anvil_nblocks);
ANVIL_TABLE(const uint32_t, anvil_block_addr);   /* link-time address of each block */
ANVIL_TABLE(const uint16_t, anvil_block_insns);  /* instructions in each block */
ANVIL_TABLE(const uint32_t, anvil_block_proc);   /* procedure index of each block */
ANVIL_CONST(uint32_t, anvil_nprocs);
ANVIL_TABLE(const uint32_t, anvil_proc_addr);
ANVIL_TABLE(const uint32_t, anvil_proc_name);    /* offsets into anvil_names */
ANVIL_TABLE(const char, anvil_names);
extern anvil_word anvil_bias;                    /* runtime minus link-time address */

#ifndef ANVIL_HOST
/* System calls (ARM EABI). */
long anvil_syscall(long nr, long a, long b, long c, long d, long e, long f);
/* The value of the program's environment variable ``name`` (as the kernel passed it), or 0. */
const char *anvil_getenv(const char *name);
/* Write ``text`` to the program's stderr (for the runtime's own one-line messages). */
void anvil_warn(const char *text);
int anvil_open_write(const char *path);
void anvil_close(int fd);
#ifdef ANVIL_BARE_METAL
/* No process forks or closes descriptors on bare metal (Cortex-M): these compile to nothing there. */
static inline long anvil_forked_child(void) { return 0; }
/* One thread on a board: the analysis lock is not needed (see the Linux declarations). */
static inline anvil_word anvil_analysis_take(void) { return 0; }
static inline void anvil_analysis_give(anvil_word taken) { (void)taken; }
static inline int anvil_reopen_write(const char *path) { (void)path; return -1; }
static inline int anvil_reopen_write_of(const char *path, long owner) { (void)path, (void)owner; return -1; }
static inline void anvil_cut_at(int fd, uint64_t length) { (void)fd, (void)length; }
static inline int anvil_output_of_this_process(int fd, const char *path, long *owner, uint64_t written)
{
    (void)path, (void)owner, (void)written;
    return fd;
}
#else
/* This process's id when it is a child the program forked, else 0 (Linux). */
long anvil_forked_child(void);
/* The analysis lock of a program that starts threads (the one the call sites take), taken
 * by a caller outside any call site: waits for it unless this thread has it already.
 * Returns what anvil_analysis_give needs to give back exactly what was taken. */
anvil_word anvil_analysis_take(void);
void anvil_analysis_give(anvil_word taken);
/* How long anvil_analysis_take waits for the lock: a thread may hold it for ever (stopped
 * in a signal handler that interrupted its call, or gone by siglongjmp out of one), and the
 * end must not hang where the original ends at once. A call holds it for microseconds, a
 * ReHost flush for as long as the host takes to read a ring. */
#define ANVIL_LOCK_WAIT_MS 1000u
#ifdef __x86_64__
#define ANVIL_SYS_NANOSLEEP 35
#define ANVIL_SYS_RT_SIGPROCMASK 14
#define ANVIL_RELAX() __builtin_ia32_pause()
#else
#define ANVIL_SYS_NANOSLEEP 162
#define ANVIL_SYS_RT_SIGPROCMASK 175
#define ANVIL_RELAX() __asm__ volatile("yield")
#endif
/* One more round of waiting for the analysis lock another thread holds (``round``: how
 * many went before): a pause of the processor for the first thousand, then a millisecond's
 * sleep each; 0 once ANVIL_LOCK_WAIT_MS of those have passed. */
static inline int anvil_lock_wait_round(uint32_t round)
{
    if (round < 1000) {
        ANVIL_RELAX();
        return 1;
    }
    if (round - 1000 >= ANVIL_LOCK_WAIT_MS)
        return 0;
    const long interval[2] = {0, 1000000};  /* struct timespec: a millisecond */
    anvil_syscall(ANVIL_SYS_NANOSLEEP, (long)interval, 0, 0, 0, 0, 0);
    return 1;
}
/* Block every signal (the kernel keeps KILL and STOP), ``saved`` what the mask was; and
 * put that mask back. */
static inline void anvil_block_signals(uint32_t saved[2])
{
    static const uint32_t all[2] = {0xFFFFFFFFu, 0xFFFFFFFFu};
    anvil_syscall(ANVIL_SYS_RT_SIGPROCMASK, 0 /* SIG_BLOCK */, (long)all, (long)saved, sizeof all, 0, 0);
}
static inline void anvil_restore_signals(const uint32_t saved[2])
{
    anvil_syscall(ANVIL_SYS_RT_SIGPROCMASK, 2 /* SIG_SETMASK */, (long)saved, 0, 2 * sizeof *saved, 0, 0);
}
/* anvil_open_write's file opened again to write at its end (the program closed it). */
int anvil_reopen_write(const char *path);
/* The results file ``path`` of process ``owner`` (anvil_forked_child's value there), opened
 * to write at its end. */
int anvil_reopen_write_of(const char *path, long owner);
/* Cut the file ``fd`` to ``length`` bytes and write on from there. */
void anvil_cut_at(int fd, uint64_t length);
/* The descriptor this process writes a results file to: ``fd``, which process ``*owner``
 * (anvil_forked_child's value) opened for ``path`` and had written ``written`` bytes to, or
 * in a child forked since, a file of its own (updating ``*owner``). */
int anvil_output_of_this_process(int fd, const char *path, long *owner, uint64_t written);
#endif
/* Write up to ``len`` bytes to ``fd``; the number written, or <= 0 on failure. */
long anvil_write_fd(int fd, const char *buf, uint32_t len);
#endif

/* Buffered output to one results file at a time (anvil_format.c). */
int anvil_out_open(const char *path);
void anvil_out_close(void);
void anvil_puts(const char *s);
void anvil_putc(char c);
/* Room for ``bytes`` more in the buffer (flushing it if there is not): what is then
 * written up to that many bytes stays in the buffer, where anvil_out_cut can take it back
 * to anvil_out_mark's place. */
void anvil_out_room(uint32_t bytes);
uint32_t anvil_out_mark(void);
void anvil_out_cut(uint32_t mark);
/* ``v`` in decimal at ``to`` (at most 20 characters, no terminator); returns how many. */
int anvil_decimal(char *to, uint64_t v);
void anvil_putu(uint64_t v);
void anvil_putu_width(uint64_t v, int width);
void anvil_puthex(uint32_t v);
/* A run-time address in hex: 8 digits, more where it needs them (x86-64's stack). */
#if defined(ANVIL_HOST) || defined(__x86_64__)
void anvil_putaddr(anvil_word v);
#else
#define anvil_putaddr anvil_puthex
#endif
void anvil_put_ratio(uint64_t num, uint64_t den, int decimals);
void anvil_put_json_string(const char *s);
void anvil_put_padded(const char *s, int width);
int anvil_streq(const char *a, const char *b);
void anvil_memset(void *p, int c, size_t n);

#ifndef ANVIL_HOST
#pragma GCC visibility pop
#endif
#endif
