/* Calls Free Pascal shaped case statements (case.S) for values in and out of their ranges. */
#include <stdio.h>

int classify(int selector);
int grade(int selector);

int main(int argc, char **argv)
{
    (void)argv;
    int sum = 0;
    for (int round = 0; round < argc * 20; round++)
        for (int i = -2; i < 16; i++)
            sum += classify(i) + grade(i);
    printf("sum %d\n", sum);
    return 0;
}
