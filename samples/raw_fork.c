/* A program that forks by the system call itself (an inline `svc`), naming no function that
 * forks: the rewrite finds nothing in it that makes a process (Binary.forks is false) and
 * ReHost keeps no stream for children. The child's records cannot be given a session: its
 * results are missing and `anvil run` must say so, while the parent's are whole
 * (tests/test_rehost.py). The parent waits for the child and prints its status. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned table[8192];

__attribute__((noipa)) static unsigned work(unsigned rounds, unsigned seed)
{
    unsigned carry = seed;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
            carry = table[i] = carry * 3 + i + r;
    return carry;
}

static long raw_fork(void)
{
    register long number __asm__("r7") = 2; /* __NR_fork, ARM EABI */
    register long result __asm__("r0");
    __asm__ volatile("svc 0" : "=r"(result) : "r"(number) : "memory");
    return result;
}

int main(void)
{
    printf("before: %u\n", work(3, 1));
    fflush(stdout);
    long pid = raw_fork();
    if (pid == 0) {
        printf("child: %u\n", work(2, 7));
        exit(3);  /* exit(): the child's copy sends its records and their end */
    }
    int status = 0;
    waitpid((pid_t)pid, &status, 0);
    printf("parent: %u, child status %d\n", work(1, 5), WEXITSTATUS(status));
    return 0;
}
