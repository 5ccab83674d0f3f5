/* Freestanding runtime for analysis routines linked into instrumented ARM Linux
 * binaries (InHost). No libc: system calls are made directly, output goes through a
 * small buffered writer. Everything here runs inside the instrumented program, so
 * it must never touch the program's own heap, stdio or errno. */
#ifndef ANVIL_RT_H
#define ANVIL_RT_H

#pragma GCC visibility push(hidden)

typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef unsigned long long uint64_t;
typedef uint32_t size_t;

#define ANVIL_HIDDEN __attribute__((visibility("hidden")))

/* Written by the emitter (generated C): the static facts of the instrumented image. */
extern const uint32_t anvil_nblocks;
extern const uint32_t anvil_block_addr[];      /* link-time address of each block */
extern const uint16_t anvil_block_insns[];     /* instructions in each block */
extern const uint16_t anvil_block_proc[];      /* procedure index of each block */
extern const uint32_t anvil_nprocs;
extern const uint32_t anvil_proc_addr[];
extern const uint32_t anvil_proc_name[];       /* offsets into anvil_names */
extern const char anvil_names[];
extern uint32_t anvil_bias;                    /* runtime minus link-time address */

/* System calls (ARM EABI). */
long anvil_syscall(long nr, long a, long b, long c, long d, long e, long f);
int anvil_open_write(const char *path);
void anvil_close(int fd);

/* Buffered output to one file at a time. */
int anvil_out_open(const char *path);
void anvil_out_close(void);
void anvil_puts(const char *s);
void anvil_putc(char c);
void anvil_putu(uint64_t v);
void anvil_putu_width(uint64_t v, int width);
void anvil_puthex(uint32_t v);
void anvil_put_ratio(uint64_t num, uint64_t den, int decimals);
void anvil_put_json_string(const char *s);
void anvil_put_padded(const char *s, int width);
int anvil_streq(const char *a, const char *b);
void anvil_memset(void *p, int c, size_t n);

#pragma GCC visibility pop
#endif
