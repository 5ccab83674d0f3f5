/* Coroutines by the C library's ucontext: a generator that makecontext starts on a stack of
 * its own and swapcontext switches to and from, many times; setcontext resuming a context
 * saved by getcontext; and setjmp/longjmp out of a deep recursion. glibc's A32 setcontext
 * (which swapcontext ends in) jumps by ``ldm lr, {lr, pc}``, a load of several registers with
 * PC among them from a base other than SP; so do jump_by_load and jump_by_load_back (in both
 * instruction sets, one with the base written back). Prints what each part computed. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

static ucontext_t caller, generator;
static char generator_stack[32768];
static volatile unsigned long yielded;

/* Yields the Collatz steps of each start in turn, forever. */
static void collatz_steps(void)
{
    for (unsigned long start = 1;; start++) {
        unsigned long n = start, steps = 0;
        while (n != 1) {
            n = n & 1 ? 3 * n + 1 : n / 2;
            steps++;
        }
        yielded = steps;
        swapcontext(&generator, &caller);
    }
}

static jmp_buf escape;

static unsigned long dive(unsigned long depth, unsigned long sum)
{
    if (depth == 0)
        longjmp(escape, (int)(sum % 1000) + 1);
    return dive(depth - 1, sum * 31 + depth) + 1;
}

__attribute__((noinline)) unsigned landed(unsigned a)
{
    return a * 7 + 1;
}

__attribute__((noinline)) unsigned landed_back(unsigned a, const unsigned *after, unsigned b)
{
    return a * 5 + b * 3 + after[1];
}

/* A tail call of landed(words[0]) through words[1]. */
__attribute__((naked, noinline)) unsigned jump_by_load(const unsigned *words)
{
    __asm__("ldm r0, {r0, pc}");
}

/* A tail call of landed_back: r0, r2 and PC loaded upwards from r1, written back past them. */
__attribute__((naked, noinline)) unsigned jump_by_load_back(const unsigned *words)
{
#ifdef __thumb__
    __asm__("mov r1, r0\n\tldm r1!, {r0, r2, pc}");      /* words[0], [1], [2]; r1 = &words[3] */
#else
    __asm__("mov r1, r0\n\tldmib r1!, {r0, r2, pc}");    /* words[1], [2], [3]; r1 = &words[3] */
#endif
}

int main(int argc, char **argv)
{
    unsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 10) : 3000, total = 0, longest = 0;
    getcontext(&generator);
    generator.uc_stack.ss_sp = generator_stack;
    generator.uc_stack.ss_size = sizeof generator_stack;
    generator.uc_link = 0;
    makecontext(&generator, collatz_steps, 0);
    for (unsigned long i = 0; i < rounds; i++) {
        swapcontext(&caller, &generator);
        total += yielded;
        if (yielded > longest)
            longest = yielded;
    }
    printf("steps %lu, longest %lu\n", total, longest);

    /* getcontext returns twice: setcontext resumes here until the count runs out. */
    volatile int resumed = 0;
    ucontext_t again;
    getcontext(&again);
    if (++resumed < 100)
        setcontext(&again);
    printf("resumed %d times\n", resumed);

    int escaped = setjmp(escape);
    if (escaped == 0)
        dive(200, 7);
    printf("longjmp gave %d\n", escaped);

    unsigned first[2] = {rounds, (unsigned)landed};
#ifdef __thumb__
    unsigned second[5] = {11, 13, (unsigned)landed_back, 0, 17};
#else
    unsigned second[5] = {0, 11, 13, (unsigned)landed_back, 17};
#endif
    unsigned sum = 0;
    for (unsigned i = 0; i < 50; i++)
        sum += jump_by_load(first) + jump_by_load_back(second);
    printf("jumps by loads gave %u\n", sum);
    return 0;
}
