/* Functions shorter than a 5-byte jump, called only through pointers in data (tables the
 * compiler cannot see through): ``add`` is ``lea; ret`` (4 bytes), ``first`` ``mov; ret``
 * (3), ``nothing`` ``ret`` (1, first: the next function follows it at once). Linked so that each is followed by padding (mold pads
 * -ffunction-sections' sections with zeros) or by the next function at once
 * (-falign-functions=1). */
#include <stdio.h>

__attribute__((noinline)) static void nothing(void) {}
__attribute__((noinline)) static int add(int a, int b) { return a + b; }
__attribute__((noinline)) static int first(int a, int b) { (void)b; return a; }

int (*volatile table[])(int, int) = {add, first};
void (*volatile hooks[])(void) = {nothing};

int main(int argc, char **argv)
{
    (void)argv;
    int s = argc;
    for (int i = 0; i < 100; i++) {
        s = table[i & 1](s, i);
        hooks[0]();
    }
    printf("s %d\n", s);
    return 0;
}
