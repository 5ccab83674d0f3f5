/* A program that walks its own descriptors, as findutils does at its start (gnulib's
 * fdleak: /proc/self/fd, then fcntl on each) and closefrom's emulations do: it lists the
 * entries of /proc/self/fd and the descriptors fcntl(F_GETFD) finds open below the limit,
 * runs a procedure for each, works on memory, forks a child that walks them too, and walks
 * them again after the child. A descriptor the instrumentation holds while the program runs
 * (memtrace's trace) would be one more in both lists, and more work for the program
 * (tests/test_descriptors_walked.py). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned table[2048];

/* What the program does for each descriptor it finds (findutils remembers the ones not
 * closed on exec). */
__attribute__((noipa)) static unsigned visit(int fd, unsigned sum)
{
    int flags = fcntl(fd, F_GETFD);
    return sum * 31 + (unsigned)fd * 7 + (unsigned)(flags & FD_CLOEXEC);
}

/* One store into each entry of the table a round (tests/test_descriptors_walked.py counts
 * them in memtrace's traces): each entry from the one before. */
__attribute__((noipa)) static unsigned work(unsigned rounds)
{
    unsigned carry = 1;
    for (unsigned r = 0; r < rounds; r++) {
        table[0] = carry * 3 + r;
        for (unsigned i = 1; i < sizeof table / sizeof table[0]; i++)
            table[i] = table[i - 1] * 3 + i;
        carry = table[sizeof table / sizeof table[0] - 1];
    }
    return carry;
}

static void walk(const char *who)
{
    unsigned sum = 0;
    int listed = 0, found = 0;
    DIR *dir = opendir("/proc/self/fd");
    printf("%s: /proc/self/fd:", who);
    if (dir != NULL) {
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            if (entry->d_name[0] == '.')
                continue;
            int fd = atoi(entry->d_name);
            if (fd == dirfd(dir))
                continue;
            printf(" %d", fd);
            sum = visit(fd, sum);
            listed++;
        }
        closedir(dir);
    }
    printf(" (%d)\n%s: open by fcntl:", listed, who);
    long limit = sysconf(_SC_OPEN_MAX);
    for (long fd = 0; fd < limit; fd++)
        if (fcntl((int)fd, F_GETFD) >= 0) {
            printf(" %ld", fd);
            sum = visit((int)fd, sum);
            found++;
        }
    printf(" (%d)\n%s: sum %u\n", found, who, sum);
    fflush(stdout);
}

int main(void)
{
    walk("start");
    printf("work %u\n", work(3));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        walk("child");
        printf("child work %u\n", work(2));
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("child status %d\n", WEXITSTATUS(status));
    walk("end");
    printf("work %u\n", work(1));
    return 0;
}
