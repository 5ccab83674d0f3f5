/* Constants in the text section beside the functions that read them through a RIP-relative
 * lea, as OpenSSL's assembly keeps its SHA-2 and AES tables (x86-64 only; decision 0209). */
#include <stdio.h>

__asm__(".text\n"
        ".p2align 6\n"
        ".globl twice\n"
        ".type twice, @function\n"
        "twice:\n"
        ".cfi_startproc\n"
        "    lea (%rdi,%rdi), %eax\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size twice, .-twice\n"
        ".p2align 6\n"
        "table_in_text:\n"
        ".long 0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5\n"
        ".long 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174\n"
        ".globl sum_table\n"
        ".type sum_table, @function\n"
        "sum_table:\n"
        ".cfi_startproc\n"
        "    lea table_in_text+16(%rip), %rax\n"
        "    lea table_in_text+32(%rip), %rsi\n"   /* a place in its middle too */
        "    xor %edx, %edx\n"
        "1:  add (%rax), %edx\n"
        "    rol $3, %edx\n"
        "    add $4, %rax\n"
        "    cmp %rsi, %rax\n"
        "    jb 1b\n"
        "    add 28(%rsi), %edx\n"
        "    mov %edx, %eax\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size sum_table, .-sum_table\n");

unsigned sum_table(void);
unsigned twice(unsigned);

int main(void)
{
    printf("%08x %u\n", sum_table(), twice(21));
    return 0;
}
