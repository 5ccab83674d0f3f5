/* x86-64 string instructions, forward and backward, repeated and not, with the direction
 * flag set and cleared, and a repeated compare that stops early: each element is one
 * access (or two) of its own, which a trace of every access must show one by one. Also a
 * thread-local variable (fs-relative accesses) and pushes and pops of a frame. */
#include <stdio.h>
#include <string.h>

static char src[256], dst[256];
static long words[32];
__thread long tls_counter = 3;

static void copy_forward(char *to, const char *from, long n)
{
    __asm__ volatile("rep movsb" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
}

static void copy_backward(char *to, const char *from, long n)
{
    /* With DF set, each element moves RSI and RDI down. */
    __asm__ volatile("std\n\trep movsb\n\tcld" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
}

static void fill_words(long *to, long value, long n)
{
    __asm__ volatile("rep stosq" : "+D"(to), "+c"(n) : "a"(value) : "memory");
}

static long first_difference(const char *a, const char *b, long n)
{
    long left = n;
    /* repe: stops after the first element that differs (ZF clear), or when RCX runs out. */
    __asm__ volatile("repe cmpsb" : "+D"(a), "+S"(b), "+c"(left) : : "memory", "cc");
    return n - left;
}

static long scan_for(const char *s, char c, long n)
{
    long left = n;
    __asm__ volatile("repne scasb" : "+D"(s), "+c"(left) : "a"(c) : "memory", "cc");
    return n - left;
}

static long single_load(const char *s)
{
    long value;
    __asm__ volatile("lodsb" : "=a"(value), "+S"(s) : : "memory");
    return value & 0xff;
}

__attribute__((noinline)) static long frame(long depth)
{
    volatile long local[4] = {depth, depth + 1, depth + 2, depth + 3};
    tls_counter += local[depth & 3];
    return depth ? frame(depth - 1) + local[1] : local[0];
}

int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 256; i++)
        src[i] = (char)(i * 7 + argc);
    copy_forward(dst, src, 200);
    copy_backward(dst + 255, src + 255, 50);
    copy_forward(dst, src, 0);  /* no element: no access */
    fill_words(words, 0x1234 + argc, 32);
    dst[77] ^= 1;
    long same = first_difference(src, dst, 256);
    long where = scan_for(src, src[40], 256);
    long total = frame(5) + single_load(src + 9) + tls_counter;
    for (int i = 0; i < 32; i++)
        total += words[i];
    printf("%ld %ld %ld %d %p %p\n", same, where, total, memcmp(src, dst, 77), (void *)src, (void *)&tls_counter);
    return 0;
}
