/*
 * Minimal freestanding runtime for the Anvil oracle samples.
 *
 * No libc: `_start` calls `main` and exits through `svc #0` (r7 = 1, exit).
 * `write` is a raw syscall (r7 = 4).  The same binary therefore runs both
 * under `qemu-arm` (Linux user mode) and under the unicorn oracle, which
 * implements exactly these two system calls (plus exit_group, r7 = 248).
 *
 * GCC may emit calls to memcpy/memset/memmove/memcmp even in freestanding
 * code (struct copies, zero-initialisation), so simple byte loops are
 * provided here.  The build passes -fno-tree-loop-distribute-patterns so
 * these loops are not turned back into calls to themselves.
 */
#include "sample.h"

int main(void);

/*
 * The syscall trampoline is plain assembly so that it does not depend on the
 * optimisation level (r7 is the Thumb frame pointer, which GCC refuses to
 * hand out as an asm operand at -O0).  Arguments: r0..r2 = syscall args,
 * r3 = syscall number.  The instructions are valid in both ARM and Thumb.
 */
__asm__(
    "  .text\n"
    "  .syntax unified\n"
    "  .align 2\n"
    "  .global anvil_syscall3\n"
    "  .type anvil_syscall3, %function\n"
#ifdef __thumb__
    "  .thumb\n"
    "  .thumb_func\n"
#else
    "  .arm\n"
#endif
    "anvil_syscall3:\n"
    "  push {r7}\n"
    "  mov r7, r3\n"
    "  svc #0\n"
    "  pop {r7}\n"
    "  bx lr\n"
    "  .size anvil_syscall3, . - anvil_syscall3\n");

long write(int fd, const void *buf, unsigned long len)
{
    return anvil_syscall3(fd, (long)buf, (long)len, 4);
}

void __attribute__((noreturn)) sys_exit(int status)
{
    for (;;)
        anvil_syscall3(status, 0, 0, 1);
}

void __attribute__((noreturn, used)) _start(void)
{
    sys_exit(main());
}

void *memcpy(void *dst, const void *src, unsigned long n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--)
        *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, unsigned long n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s) {
        while (n--)
            *d++ = *s++;
    } else {
        while (n--)
            d[n] = s[n];
    }
    return dst;
}

void *memset(void *dst, int c, unsigned long n)
{
    unsigned char *d = dst;
    while (n--)
        *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, unsigned long n)
{
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x - *y;
    return 0;
}

unsigned long anvil_strlen(const char *s)
{
    unsigned long n = 0;
    while (s[n])
        n++;
    return n;
}

void put_str(const char *s)
{
    write(1, s, anvil_strlen(s));
}

void put_hex(const char *label, unsigned int value)
{
    char buf[64];
    unsigned long n = 0;
    while (label[n] && n < 40) {
        buf[n] = label[n];
        n++;
    }
    buf[n++] = '0';
    buf[n++] = 'x';
    for (int shift = 28; shift >= 0; shift -= 4)
        buf[n++] = "0123456789abcdef"[(value >> shift) & 0xf];
    buf[n++] = '\n';
    write(1, buf, n);
}
