/* A program that closes every descriptor it inherited above standard error, as daemons and
 * closefrom() callers do at their start, then works a while and prints what it computed.
 * ReHost's record channel is not among them (decision 0126): its copy's results are whole
 * (tests/test_rehost_faults.py). */
#include <stdio.h>
#include <unistd.h>

static unsigned table[4096];

__attribute__((noipa)) static unsigned work(unsigned rounds)
{
    unsigned carry = 1;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
            carry = table[i] = carry * 3 + i + r;
    return carry;
}

int main(void)
{
    printf("before: %u\n", work(4));
    fflush(stdout);
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    usleep(100000);  /* a daemon goes on a while after */
    printf("after: %u\n", work(8));
    return 0;
}
