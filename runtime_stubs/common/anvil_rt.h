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
#else
#pragma GCC visibility push(hidden)
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef unsigned long long uint64_t;
typedef uint32_t size_t;
#define ANVIL_ARRAY(type, name) extern type anvil_array_##name[]
#define ANVIL_TABLE(type, name) extern type name[]
#define ANVIL_CONST(type, name) extern const type name
#endif

#define ANVIL_HIDDEN __attribute__((visibility("hidden")))

/* The static facts of the instrumented image (generated C on the target; the site
 * table sent when a ReHost session opens on the host). */
ANVIL_CONST(uint32_t, anvil_nblocks);
ANVIL_TABLE(const uint32_t, anvil_block_addr);   /* link-time address of each block */
ANVIL_TABLE(const uint16_t, anvil_block_insns);  /* instructions in each block */
ANVIL_TABLE(const uint16_t, anvil_block_proc);   /* procedure index of each block */
ANVIL_CONST(uint32_t, anvil_nprocs);
ANVIL_TABLE(const uint32_t, anvil_proc_addr);
ANVIL_TABLE(const uint32_t, anvil_proc_name);    /* offsets into anvil_names */
ANVIL_TABLE(const char, anvil_names);
extern uint32_t anvil_bias;                      /* runtime minus link-time address */

#ifndef ANVIL_HOST
/* System calls (ARM EABI). */
long anvil_syscall(long nr, long a, long b, long c, long d, long e, long f);
/* The value of the program's environment variable ``name`` (as the kernel passed it), or 0. */
const char *anvil_getenv(const char *name);
/* Write ``text`` to the program's stderr (for the runtime's own one-line messages). */
void anvil_warn(const char *text);
int anvil_open_write(const char *path);
void anvil_close(int fd);
/* This process's id when it is a child the program forked, else 0 (Linux). */
long anvil_forked_child(void);
/* Write up to ``len`` bytes to ``fd``; the number written, or <= 0 on failure. */
long anvil_write_fd(int fd, const char *buf, uint32_t len);
#endif

/* Buffered output to one results file at a time (anvil_format.c). */
int anvil_out_open(const char *path);
void anvil_out_close(void);
void anvil_puts(const char *s);
void anvil_putc(char c);
/* ``v`` in decimal at ``to`` (at most 20 characters, no terminator); returns how many. */
int anvil_decimal(char *to, uint64_t v);
void anvil_putu(uint64_t v);
void anvil_putu_width(uint64_t v, int width);
void anvil_puthex(uint32_t v);
void anvil_put_ratio(uint64_t num, uint64_t den, int decimals);
void anvil_put_json_string(const char *s);
void anvil_put_padded(const char *s, int width);
int anvil_streq(const char *a, const char *b);
void anvil_memset(void *p, int c, size_t n);

#ifndef ANVIL_HOST
#pragma GCC visibility pop
#endif
#endif
