/* A program that changes its working directory (as make -C, tar -C and daemons do) and
 * works there: a tool's results named relative to where it started must still be written
 * there (tests/test_moves_away.py). */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((noipa)) static unsigned work(unsigned n)
{
    unsigned s = 1;
    for (unsigned i = 0; i < n; i++)
        s = s * 2654435761u + i;
    return s;
}

int main(void)
{
    mkdir("elsewhere", 0755);
    if (chdir("elsewhere") != 0)
        return 1;
    FILE *f = fopen("made-here.txt", "w");
    if (f) {
        fprintf(f, "%u\n", work(1000));
        fclose(f);
    }
    printf("%u\n", work(5000));
    return 0;
}
