/*
 * x64_flag_readers.c - flags read across instructions whose flag effects capstone
 * misreports (Free Pascal's ppcx64 wrote a different object file under cachesim):
 *
 * - ``bt; mov; fild; jae``: Free Pascal's qword -> extended. An x87 instruction leaves
 *   EFLAGS alone, but capstone's eflags field holds its FPU flags, which read as "writes
 *   CF": a hook at the store (cachesim's test) or at a block start (a counter) clobbered
 *   the carry ``jae`` reads.
 * - ``add; mov; rcr``: (a + b) / 2 without overflow; capstone does not say rcr reads CF.
 *
 * Prints the number of wrong results of each (0 0 0) and exits 0 when all are right.
 */
#include <stdio.h>
#include <stdlib.h>

static const float two64 = 18446744073709551616.0f;

__attribute__((noinline)) long double u64_to_ext(unsigned long long v)
{
    long double r;
    unsigned long long slot;
    __asm__ volatile("bt $63, %[v]\n\t"
                     "mov %[v], %[slot]\n\t"
                     "fildll %[slot]\n\t"
                     "jae 1f\n\t"
                     "fadds %[c]\n"
                     "1:\n\t"
                     "fstpt %[r]\n\t"
                     : [r] "=m"(r), [slot] "=m"(slot)
                     : [v] "r"(v), [c] "m"(two64)
                     : "cc", "st");
    return r;
}

/* The same with a block start between bt and the store: a block counter's add goes there. */
__attribute__((noinline)) long double u64_to_ext_block(unsigned long long v)
{
    long double r;
    unsigned long long slot;
    __asm__ volatile("bt $63, %[v]\n\t"
                     "jmp 2f\n"
                     "2:\n\t"
                     "mov %[v], %[slot]\n\t"
                     "fildll %[slot]\n\t"
                     "jae 1f\n\t"
                     "fadds %[c]\n"
                     "1:\n\t"
                     "fstpt %[r]\n\t"
                     : [r] "=m"(r), [slot] "=m"(slot)
                     : [v] "r"(v), [c] "m"(two64)
                     : "cc", "st");
    return r;
}

__attribute__((noinline)) unsigned long average(unsigned long a, unsigned long b, unsigned long *slot)
{
    __asm__ volatile("add %[b], %[a]\n\t"
                     "mov %[a], %[s]\n\t"
                     "rcr $1, %[a]\n\t"
                     : [a] "+r"(a), [s] "=m"(*slot)
                     : [b] "r"(b)
                     : "cc");
    return a;
}

int main(void)
{
    unsigned long wrong[3] = {0, 0, 0}, slot;
    for (unsigned long i = 0; i < 1000; i++) {
        unsigned long long v = i * 0x9E3779B97F4A7C15ull; /* top bit set about half the time */
        wrong[0] += u64_to_ext(v) != (long double)v;
        wrong[1] += u64_to_ext_block(v) != (long double)v;
        unsigned long a = i * 0x9E3779B97F4A7C15ul, b = ~i * 0xC2B2AE3D27D4EB4Ful;
        wrong[2] += average(a, b, &slot) != (unsigned long)(((unsigned __int128)a + b) >> 1);
    }
    printf("%lu %lu %lu\n", wrong[0], wrong[1], wrong[2]);
    return wrong[0] || wrong[1] || wrong[2];
}
