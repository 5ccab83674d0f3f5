/*
 * bubble: bubble sort of 500 pseudo-random ints, then a checksum printed
 * through write().  Exits 0 when the result is sorted, 1 otherwise.
 */
#include "sample.h"

#define N 500

static int data[N];

static void __attribute__((noinline)) fill(unsigned int seed)
{
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (int)(seed >> 8) - (1 << 22);
    }
}

static void __attribute__((noinline)) bubble_sort(int *a, int n)
{
    for (int i = 0; i < n - 1; i++) {
        int swapped = 0;
        for (int j = 0; j < n - 1 - i; j++) {
            if (a[j] > a[j + 1]) {
                int t = a[j];
                a[j] = a[j + 1];
                a[j + 1] = t;
                swapped = 1;
            }
        }
        if (!swapped)
            break;
    }
}

int main(void)
{
    fill(12345u);
    bubble_sort(data, N);
    unsigned int sum = 0;
    int sorted = 1;
    for (int i = 0; i < N; i++) {
        sum = sum * 31u + (unsigned int)data[i];
        if (i && data[i - 1] > data[i])
            sorted = 0;
    }
    put_hex("bubble checksum ", sum);
    return sorted ? 0 : 1;
}
