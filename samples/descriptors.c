/* A program that prints the descriptor numbers it gets and closes the descriptors it did
 * not open, as shells and daemons do (tcsh moves its own to 16-19 and closes the rest):
 * 3-999, or with an argument every one up to 1023 (closefrom(3)), then puts a file of its
 * own on descriptors 3-9. A tool's results file that the
 * copy opened at the start (memtrace's trace) must neither shift those numbers nor be cut
 * short or written into the program's file (tests/test_descriptors.py). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned table[4096];

__attribute__((noipa)) static unsigned work(unsigned rounds)
{
    unsigned s = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++) {
            table[i] += i ^ r;
            s += table[i];
        }
    return s;
}

int main(int argc, char **argv)
{
    (void)argv;
    int first = open("/dev/null", O_RDONLY);
    printf("first free descriptor %d\n", first);
    printf("before closing: %u\n", work(4));
    for (int fd = 3; fd < (argc > 1 ? 1024 : 1000); fd++)
        close(fd);
    int own = open("own.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int fd = 3; fd < 10; fd++)
        if (fd != own)
            dup2(own, fd);
    printf("own file on descriptor %d\n", own);
    printf("after closing: %u\n", work(4));
    for (int fd = 3; fd < 10; fd++)
        dprintf(fd, "line %d\n", fd);
    struct stat st;
    stat("own.txt", &st);
    printf("own file: %lld bytes\n", (long long)st.st_size);
    /* for the test to compare with the trace */
    printf("stores into the table: %u\n", 2 * 4 * (unsigned)(sizeof table / sizeof table[0]));
    return 0;
}
