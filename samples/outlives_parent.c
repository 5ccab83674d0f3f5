/* A program whose forked child outlives it: the parent works, forks and returns at once;
 * the child waits a little, works on and prints. With the argument "session" the child
 * leaves the session first (setsid) and does the same. With "daemon" it leaves the session,
 * closes its standard output and writes what it computed to the file daemon.out instead,
 * seconds later.
 * `anvil run` of its ReHost copy waits for the child (its results are written), for a while
 * for the child in a session of its own, but not for the daemon, which it names
 * (tests/test_rehost_channel.py, decision 0126). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static unsigned table[4096];

__attribute__((noipa)) static unsigned work(unsigned rounds)
{
    unsigned carry = 7;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
            carry = table[i] = carry * 5 + i + r + table[(i * 7) % 4096];
    return carry;
}

int main(int argc, char **argv)
{
    int daemon_like = argc > 1 && strcmp(argv[1], "daemon") == 0;
    int own_session = argc > 1 && strcmp(argv[1], "session") == 0;
    printf("parent: %u\n", work(3));
    fflush(stdout);
    if (fork() != 0)
        return 0;  /* the parent ends first */
    if (daemon_like) {
        setsid();
        fclose(stdout);
        fclose(stderr);
        sleep(4);  /* still running when `anvil run` ends */
        FILE *out = fopen("daemon.out", "w");
        fprintf(out, "daemon: %u\n", work(5));
        fclose(out);
        return 0;
    }
    if (own_session)
        setsid();
    usleep(300000);
    printf("child: %u\n", work(5));
    return 0;
}
