/* A program that works and then becomes another program (execl), as env, nice, xargs and
 * shells' "exec" do: no exit runs, so a tool's results must be written before the exec
 * (tests/test_execs.py). With an argument the first exec fails (no such file) and the
 * program goes on working before it ends normally. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noipa)) static unsigned work(unsigned n)
{
    unsigned s = 1;
    for (unsigned i = 0; i < n; i++)
        s = s * 2654435761u + i;
    return s;
}

int main(int argc, char **argv)
{
    (void)argv;
    printf("%u\n", work(5000));
    fflush(stdout);
    if (argc > 1) {
        execl("/nonexistent/program", "program", (char *)0);
        printf("exec failed, %u\n", work(3000));
        return 0;
    }
    execl("/bin/echo", "echo", "the other program", (char *)0);
    return 1;
}
