/* Reads the info tables before the code that static closures name, as GHC's runtime does,
   and enters that code (tests/test_info_tables.py). */
#include <stdio.h>

extern const unsigned *const closures[];

int main(void) {
    for (int i = 0; closures[2 * i]; i++) {
        const unsigned *info = closures[2 * i];
        int (*code)(void) = (int (*)(void))info;
        printf("closure %d: layout %#x, type %u, returns %d\n", i, info[-2], info[-1], code());
    }
    return 0;
}
