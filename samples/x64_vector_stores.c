/* SSE and AVX stores, each of a form capstone marks its memory destination read (not
 * written), beside the loads of the same widths; and an AVX2 gather, whose elements the
 * tools are not given (the report names it). Built with -mavx2 -mf16c. */
#include <stdio.h>
#include <string.h>

static unsigned char buf[512] __attribute__((aligned(64)));
static int table[64];

__attribute__((noinline)) static void stores(unsigned char *p)
{
    __asm__ volatile(
        "movdqu (%0), %%xmm1\n\t"
        "movups %%xmm1, 16(%0)\n\t"
        "movq %%xmm1, 32(%0)\n\t"
        "movhps %%xmm1, 40(%0)\n\t"
        "movlps %%xmm1, 48(%0)\n\t"
        "pextrw $1, %%xmm1, 56(%0)\n\t"
        "pextrd $1, %%xmm1, 60(%0)\n\t"
        "movntdq %%xmm1, 64(%0)\n\t"
        "vmovdqu (%0), %%ymm2\n\t"
        "vmovdqu %%ymm2, 96(%0)\n\t"
        "vmovups %%xmm1, 128(%0)\n\t"
        "vmovq %%xmm1, 144(%0)\n\t"
        "vmovd %%xmm1, 152(%0)\n\t"
        "vextracti128 $1, %%ymm2, 160(%0)\n\t"
        "vcvtps2ph $0, %%ymm2, 176(%0)\n\t"
        "sfence\n\t"
        "vzeroupper\n\t"
        : : "r"(p) : "xmm1", "xmm2", "memory");
}

__attribute__((noinline)) static int gather(const int *t)
{
    int out[8];
    __asm__ volatile(
        "vpcmpeqd %%ymm2, %%ymm2, %%ymm2\n\t"
        "vmovdqu %2, %%ymm3\n\t"
        "vpgatherdd %%ymm2, (%1,%%ymm3,4), %%ymm1\n\t"
        "vmovdqu %%ymm1, %0\n\t"
        "vzeroupper\n\t"
        : "=m"(out) : "r"(t), "m"(*(const int(*)[8]) "\0\0\0\0\3\0\0\0\7\0\0\0\11\0\0\0\15\0\0\0\20\0\0\0\25\0\0\0\37\0\0\0")
        : "xmm1", "xmm2", "xmm3");
    int s = 0;
    for (int i = 0; i < 8; i++)
        s += out[i];
    return s;
}

int main(void)
{
    for (int i = 0; i < 512; i++)
        buf[i] = (unsigned char)(i * 7);
    for (int i = 0; i < 64; i++)
        table[i] = i * i;
    stores(buf);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += buf[i] * (i + 1);
    printf("%u %d\n", sum, gather(table));
    return 0;
}
