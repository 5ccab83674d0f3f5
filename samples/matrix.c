/*
 * matrix.c - integer and double-precision matrix multiply.
 *
 * The double version uses the VFP unit (hard-float ABI).  Results are checked
 * against identities (A * I == A, trace of a product computed two ways) and
 * printed as sums, the floating-point ones with "%.3f".  Exit status 0 when the
 * checks hold.
 */
#include <stdio.h>

#define N 24

static int ia[N][N], ib[N][N], ic[N][N], ident[N][N], itmp[N][N];
static double da[N][N], db[N][N], dc[N][N];

static void imatmul(int c[N][N], int a[N][N], int b[N][N])
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            int s = 0;
            for (int k = 0; k < N; k++)
                s += a[i][k] * b[k][j];
            c[i][j] = s;
        }
}

static void dmatmul(double c[N][N], double a[N][N], double b[N][N])
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < N; k++)
                s += a[i][k] * b[k][j];
            c[i][j] = s;
        }
}

static long long isum(int m[N][N])
{
    long long s = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            s += m[i][j];
    return s;
}

static double dsum(double m[N][N])
{
    double s = 0.0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            s += m[i][j];
    return s;
}

int main(void)
{
    int failures = 0;

    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            ia[i][j] = (i * 7 + j * 3) % 11 - 5;
            ib[i][j] = (i * 5 + j * 13) % 9 - 4;
            ident[i][j] = (i == j);
            da[i][j] = (double)(i + 1) / (double)(j + 2);
            db[i][j] = (double)((i * j) % 7) * 0.25 - 0.5;
        }

    imatmul(ic, ia, ib);
    imatmul(itmp, ia, ident);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (itmp[i][j] != ia[i][j])
                failures++;

    /* trace(A*B) == sum_ij A[i][j] * B[j][i] */
    long long trace = 0, trace2 = 0;
    for (int i = 0; i < N; i++) {
        trace += ic[i][i];
        for (int j = 0; j < N; j++)
            trace2 += (long long)ia[i][j] * ib[j][i];
    }
    if (trace != trace2)
        failures++;

    dmatmul(dc, da, db);
    double dtrace = 0.0, dtrace2 = 0.0;
    for (int i = 0; i < N; i++) {
        dtrace += dc[i][i];
        for (int j = 0; j < N; j++)
            dtrace2 += da[i][j] * db[j][i];
    }
    double diff = dtrace - dtrace2;
    if (diff < -1e-9 || diff > 1e-9)
        failures++;

    printf("int: sum=%lld trace=%lld c[3][5]=%d\n", isum(ic), trace, ic[3][5]);
    printf("double: sum=%.3f trace=%.3f c[3][5]=%.3f\n", dsum(dc), dtrace, dc[3][5]);
    printf("a-sum=%.3f b-sum=%.3f\n", dsum(da), dsum(db));
    printf("%s\n", failures ? "FAIL" : "OK");
    return failures ? 1 : 0;
}
