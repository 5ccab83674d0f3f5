/* String and memory helpers of the runtimes (target and host): what start-up, results
 * file names and the communicator need even where no results are formatted (a ReHost
 * image links this file, not anvil_format.c). */
#include "anvil_rt.h"

int anvil_decimal(char *to, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        to[i] = tmp[n - 1 - i];
    return n;
}

int anvil_streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

void anvil_memset(void *p, int c, size_t n)
{
    unsigned char *q = p;
    while (n--)
        *q++ = (unsigned char)c;
}

