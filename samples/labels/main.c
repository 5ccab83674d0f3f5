/* Calls step of labels.S with numbers from its table (tests/test_labels_in_data.py). */
#include <stdio.h>

int step(int x, int y);
int nudge(int x, int y);
extern const unsigned numbers[6];

int main(int argc, char **argv) {
    (void)argv;
    int a = step(argc, 2);        /* twice(1 + 1 + 8) + 3 = 23 */
    int b = step(argc + 200, 1);  /* the block after the return site: 206 + 1 + 3 = 210 */
    int c = step(0, 0);           /* 5 + 3 = 8 */
    int d = nudge(argc + 2, 2);   /* 9 + 8 + 1 = 18 */
    printf("a=%d b=%d c=%d d=%d n=%u\n", a, b, c, d, numbers[0] & 0xff);
    return 0;
}
