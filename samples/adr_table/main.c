/* Calls pick of table.S for each case (tests/test_adr_table.py). */
#include <stdio.h>

int pick(int x);

int main(int argc, char **argv) {
    (void)argv;
    int s = 0;
    for (int i = 0; i < 4; i++)
        s = s * 100 + pick(argc - 1 + i); /* 10, 20, 30, 7 */
    printf("s=%d\n", s);
    return 0;
}
