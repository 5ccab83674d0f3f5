/* Thumb and A32 functions calling each other by tail calls, which a B.W or B cannot make
 * across instruction sets: the linker puts an interworking veneer between (GNU ld's
 * __x_from_thumb / __x_from_arm, gold's stubs at the end of .text). In a stripped program
 * the A32 functions and t_back are reached only through those veneers. */
#include <stdio.h>

#define A32 __attribute__((noinline, target("arm")))
#define T32 __attribute__((noinline, target("thumb")))

T32 int t_back(int x);
A32 int a_work(int x) { return x * 3 + 1; }
T32 int t_back_helper(int x) { return x ^ 5; }
A32 int a_other(int x) { return x > 100 ? t_back(x - 7) : x; }   /* A32 b -> Thumb */
T32 int t_back(int x) { return t_back_helper(x) + 1; }
T32 int t_tail(int x) { return a_work(x + 1); }                   /* Thumb b.w -> A32 */
T32 int t_tail2(int x) { return a_other(x * 2); }

int main(void)
{
    int s = 0;
    for (int i = 0; i < 2000; i++)
        s += t_tail(i) + t_tail2(i);
    printf("%d\n", s);
    return 0;
}
