/*
 * calls.c - control transfer in many forms.
 *
 * Recursion (fib), dispatch through a table of function pointers, a variadic
 * function, setjmp/longjmp across several frames, output on both stdout and
 * stderr, and the command line: argc and argv[1..] are echoed; when argv[1] is
 * "stdin" all of standard input is read and its length printed.  Exits with
 * status 3 so that tests can check a non-zero status survives rewriting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static jmp_buf escape;
static int depth_reached;

static int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int op_add(int a, int b) { return a + b; }
static int op_sub(int a, int b) { return a - b; }
static int op_mul(int a, int b) { return a * b; }
static int op_div(int a, int b) { return b ? a / b : 0; }
static int op_mod(int a, int b) { return b ? a % b : 0; }
static int op_xor(int a, int b) { return a ^ b; }

typedef int (*binop)(int, int);

static const struct {
    const char *name;
    binop fn;
} ops[] = {
    {"add", op_add}, {"sub", op_sub}, {"mul", op_mul},
    {"div", op_div}, {"mod", op_mod}, {"xor", op_xor},
};

/* Sums `count` ints, then `count` doubles weighted by their position. */
static double weighted_sum(int count, ...)
{
    va_list ap;
    double total = 0.0;

    va_start(ap, count);
    for (int i = 0; i < count; i++)
        total += va_arg(ap, int);
    for (int i = 0; i < count; i++)
        total += (i + 1) * va_arg(ap, double);
    va_end(ap);
    return total;
}

/* Recurses until `limit`, then jumps straight back to main. */
static void dive(int depth, int limit)
{
    depth_reached = depth;
    if (depth == limit)
        longjmp(escape, depth * 10);
    dive(depth + 1, limit);
}

static long read_all_stdin(void)
{
    char buf[4096];
    long total = 0;
    ssize_t n;

    while ((n = read(0, buf, sizeof buf)) > 0)
        total += n;
    return n < 0 ? -1 : total;
}

int main(int argc, char **argv)
{
    printf("argc=%d\n", argc);
    for (int i = 1; i < argc; i++)
        printf("argv[%d]=%s\n", i, argv[i]);

    if (argc > 1 && strcmp(argv[1], "stdin") == 0)
        printf("stdin bytes=%ld\n", read_all_stdin());

    printf("fib(20)=%d\n", fib(20));

    int acc = 1000;
    for (unsigned int i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        acc = ops[i].fn(acc, (int)i + 7);
        printf("%s -> %d\n", ops[i].name, acc);
    }

    printf("weighted_sum=%.2f\n", weighted_sum(3, 1, 2, 3, 0.5, 1.5, 2.5));

    int code = setjmp(escape);
    if (code == 0) {
        dive(0, 25);
        puts("not reached");
    } else {
        printf("longjmp code=%d depth=%d\n", code, depth_reached);
    }

    fprintf(stderr, "calls: this line goes to stderr\n");
    fflush(stdout);
    return 3;
}
