/* Functions that end in `rep ret` (AMD's two-byte return, which OpenSSL's and older
 * compilers' assembly still write: the prefix means nothing there) beside a real string
 * instruction (`rep movsb`, which runs once per byte), called from a loop. */
#include <stdio.h>
#include <string.h>

long twice(long x);
void copy_bytes(char *to, const char *from, long n);
__asm__(".text\n"
        ".globl twice\n.type twice, @function\n"
        "twice:\n  lea (%rdi,%rdi), %rax\n  rep ret\n"
        ".globl copy_bytes\n.type copy_bytes, @function\n"
        "copy_bytes:\n  mov %rdx, %rcx\n  rep movsb\n  repz ret\n");

int main(int argc, char **argv) {
    char from[64], to[64];
    long sum = 0;
    (void)argv;
    for (int i = 0; i < 64; i++) from[i] = (char)(i * 7 + argc);
    for (long i = 0; i < 1000; i++) {
        sum += twice(i);
        copy_bytes(to, from, i % 64);
        sum += to[i % 64 ? i % 64 - 1 : 0];
    }
    printf("%ld\n", sum);
    return 0;
}
