/* second.c - see first.c. Aligned to 64 bytes: ld.lld fills the gap before it. */
__attribute__((noinline, aligned(64))) static int twice(int value)
{
    int sum = 0;
    for (int k = 0; k < (value & 7); k++)
        sum += value >> k;
    return sum + value;
}

__attribute__((noinline)) static int halve(int value)
{
    return value / 2 + 7;
}

int (*const steps[])(int) = {twice, halve};
const int step_count = 2;
