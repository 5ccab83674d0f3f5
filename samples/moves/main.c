/* Calls run of moves.S, which passes a function built by movw/movt (tests/test_code_in_moves.py). */
#include <stdio.h>
#include <stdlib.h>

int run(int x);

/* Called by check for a non-zero argument (never here): it returns on one path, so a
   descent cannot take it for a function that never returns. */
int fail(int x) {
    if (x == 1000)
        return 0;
    fprintf(stderr, "fail %d\n", x);
    exit(x);
}

int main(int argc, char **argv) {
    (void)argv;
    printf("r=%d\n", run(argc + 4)); /* cb(5) + 1 = 15 + 5 + 1 = 21 */
    return 0;
}
