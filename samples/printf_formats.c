/* printf through its conversions (integers, doubles, strings, hexadecimal): glibc's
 * __printf_buffer dispatches each through a computed goto (decision 0205). */
#include <stdio.h>

int main(void)
{
    double x = 2.5;
    for (int i = 0; i < 20; i++) {
        printf("%d %5.2f %s %x\n", i, x, "abc", i * 7);
        x *= 1.5;
    }
    return 0;
}
