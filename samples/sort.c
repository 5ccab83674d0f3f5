/*
 * sort.c - sorting a few thousand pseudo-random ints three ways.
 *
 * A hand-written quicksort (with insertion sort for short ranges), libc qsort with
 * a comparator passed by function pointer (a callback into the program), and a
 * plain insertion sort on a smaller array.  The results are cross-checked and
 * summarised as checksums.  Exit status 0 when every check holds, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 3000
#define N_SMALL 400

static unsigned int lcg_state = 12345u;

/* Numerical Recipes LCG: deterministic pseudo-random numbers. */
static unsigned int lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state;
}

static void insertion_sort(int *a, int lo, int hi)
{
    for (int i = lo + 1; i <= hi; i++) {
        int v = a[i];
        int j = i - 1;
        while (j >= lo && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

static void quicksort(int *a, int lo, int hi)
{
    while (hi - lo > 12) {
        int mid = lo + (hi - lo) / 2;
        int pivot = a[mid];
        int i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                int t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        /* Recurse into the smaller half, loop on the larger. */
        if (j - lo < hi - i) {
            quicksort(a, lo, j);
            lo = i;
        } else {
            quicksort(a, i, hi);
            hi = j;
        }
    }
    insertion_sort(a, lo, hi);
}

static int compare_ints(const void *pa, const void *pb)
{
    int a = *(const int *)pa;
    int b = *(const int *)pb;
    return (a > b) - (a < b);
}

static int is_sorted(const int *a, int n)
{
    for (int i = 1; i < n; i++)
        if (a[i - 1] > a[i])
            return 0;
    return 1;
}

static unsigned int checksum(const int *a, int n)
{
    unsigned int h = 2166136261u;
    for (int i = 0; i < n; i++)
        h = (h ^ (unsigned int)a[i]) * 16777619u;
    return h;
}

static int data[N], copy_q[N], copy_c[N], small[N_SMALL];

int main(void)
{
    int failures = 0;
    long long total = 0;

    for (int i = 0; i < N; i++) {
        data[i] = (int)(lcg() >> 8) % 100000 - 50000;
        total += data[i];
    }
    for (int i = 0; i < N_SMALL; i++)
        small[i] = (int)(lcg() >> 16) % 1000;

    memcpy(copy_q, data, sizeof data);
    memcpy(copy_c, data, sizeof data);

    quicksort(copy_q, 0, N - 1);
    qsort(copy_c, N, sizeof copy_c[0], compare_ints);
    insertion_sort(small, 0, N_SMALL - 1);

    if (!is_sorted(copy_q, N)) {
        puts("quicksort: not sorted");
        failures++;
    }
    if (!is_sorted(copy_c, N)) {
        puts("qsort: not sorted");
        failures++;
    }
    if (!is_sorted(small, N_SMALL)) {
        puts("insertion: not sorted");
        failures++;
    }
    if (memcmp(copy_q, copy_c, sizeof copy_q) != 0) {
        puts("quicksort and qsort disagree");
        failures++;
    }

    printf("n=%d sum=%lld min=%d max=%d median=%d\n", N, total, copy_q[0], copy_q[N - 1],
           copy_q[N / 2]);
    printf("quicksort=%08x qsort=%08x\n", checksum(copy_q, N), checksum(copy_c, N));
    printf("insertion n=%d min=%d max=%d sum=%08x\n", N_SMALL, small[0], small[N_SMALL - 1],
           checksum(small, N_SMALL));
    printf("%s\n", failures ? "FAIL" : "OK");
    return failures ? 1 : 0;
}
