/* A function in a section of its own, placed far above the rest (a build option puts
 * .farcode 64 MiB up): in a PIE the program's data lies between its two code segments. The
 * program writes its data after calling the far function. */
#include <stdio.h>
#include <string.h>

int written[64];

__attribute__((noinline, section(".farcode"))) int far_work(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += (i * 7) ^ (s >> 3);
    return s + (int)strlen("far");
}

__attribute__((noinline)) int near_work(int n) { return far_work(n) + 1; }

int main(void)
{
    int near = near_work(1000);
    for (int i = 0; i < 64; i++)
        written[i] = near + i;
    printf("near=%d far=%d written=%d\n", near, far_work(10), written[63]);
    return 0;
}
