/* A freestanding x86-64 program (no C library) whose every data access an emulator can
 * record: its own stack and thread-local block (static, so that the addresses are the same
 * natively and under Unicorn), string instructions repeated forwards, backwards and up to
 * a difference, vector loads and stores, a jump table, recursion, RIP-relative, indexed and
 * fs-relative operands. It writes one line (a checksum) and exits. */
typedef unsigned long u64;

char bare_stack[65536] __attribute__((aligned(16)));
/* The thread pointer points at itself (x86-64 TLS ABI: fs:0 holds fs's base). */
static u64 thread_block[8] __attribute__((aligned(64)));
static char src[512], dst[512];
static u64 table[64];
static int small[100];

static long syscall3(long nr, long a, long b, long c)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}

static void copy(char *to, const char *from, long n, int backwards)
{
    if (backwards)
        __asm__ volatile("std\n\trep movsb\n\tcld" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
    else
        __asm__ volatile("rep movsb" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
}

static long same_prefix(const char *a, const char *b, long n)
{
    long left = n;
    __asm__ volatile("repe cmpsb" : "+D"(a), "+S"(b), "+c"(left) : : "memory", "cc");
    return n - left;
}

__attribute__((noinline)) static u64 pick(int k, u64 x)
{
    switch (k & 7) {  /* a jump table: a load from .rodata */
    case 0: return x + 1;
    case 1: return x * 3;
    case 2: return x ^ 0x55;
    case 3: return x >> 1;
    case 4: return x - 7;
    case 5: return x * x;
    case 6: return ~x;
    default: return x + table[k & 63];
    }
}

__attribute__((noinline)) static u64 depth(int n, u64 acc)
{
    volatile u64 local[3] = {acc, (u64)n, acc ^ (u64)n};
    return n ? depth(n - 1, local[0] + local[2]) + local[1] : local[0];
}

static u64 tls_add(u64 v)
{
    u64 old;
    __asm__ volatile("mov %%fs:8, %0\n\tadd %1, %%fs:8" : "=&r"(old) : "r"(v) : "memory", "cc");
    return old;
}

__attribute__((noinline)) static u64 work(void)
{
    u64 sum = 0;
    for (int i = 0; i < 512; i++)
        src[i] = (char)(i * 13 + 5);
    copy(dst, src, 300, 0);
    copy(dst + 511, src + 511, 40, 1);
    copy(dst, src, 0, 0);
    dst[100] ^= 1;
    sum += (u64)same_prefix(src, dst, 512);
    for (int i = 0; i < 64; i++)
        table[i] = (u64)i * 0x9E3779B97F4A7C15ul;
    for (int i = 0; i < 100; i++)  /* vectorised at -O2/-O3: 16-byte loads and stores */
        small[i] = i * 3 + (int)table[i & 63];
    for (int i = 0; i < 100; i++)
        sum += (u64)small[i];
    for (int k = 0; k < 40; k++)
        sum = pick(k, sum);
    sum += depth(6, sum);
    sum += tls_add(sum & 0xff) + tls_add(3);
    return sum;
}

static void put_hex(u64 v)
{
    char line[18];
    for (int i = 0; i < 16; i++)
        line[i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
    line[16] = '\n';
    syscall3(1, 1, (long)line, 17);
}

__attribute__((noreturn, used)) void bare_main(void)
{
    thread_block[0] = (u64)thread_block;
    syscall3(158, 0x1002, (long)thread_block, 0);  /* arch_prctl(ARCH_SET_FS) */
    put_hex(work());
    syscall3(231, 0, 0, 0);  /* exit_group */
    __builtin_unreachable();
}

__asm__(".globl _start\n_start:\n\tlea bare_stack+65536(%rip), %rsp\n\tcall bare_main\n\thlt\n");
