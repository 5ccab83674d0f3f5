/* pc_offsets/main.c - runs f (offsets.S) through run_f and prints what offset_user computes. */
#include <stdio.h>

int run_f(int n);
unsigned offset_user(void);

int main(void)
{
    int sum = 0;
    for (int i = 0; i < 50; i++)
        sum += run_f(i);
    printf("%d %08x\n", sum, offset_user());
    return 0;
}
