/* Two switches whose tables of 32-bit offsets lie one after the other, the first without
 * its bounds check next to its jump (the compare's flags are tested in a block of their
 * own, as GCC left them in Debian's gold): read on past its end, the first table's entries
 * become the second's offsets from the wrong base, which name places inside the second
 * switch's cases that no instruction starts at. */
#include <stdio.h>

int pick(int selector, int which);
__asm__(".text\n"
        ".globl pick\n.type pick, @function\n"
        "pick:\n"
        "  test %esi, %esi\n  jne 2f\n"
        "  cmp $3, %edi\n  jne 1f\n  mov $100, %eax\n  ret\n"
        "1:ja 9f\n"                                  /* the bound: flags from the block before */
        "  lea .Lfirst(%rip), %rcx\n  movslq (%rcx,%rdi,4), %rdx\n  add %rcx, %rdx\n  jmp *%rdx\n"
        "2:cmp $3, %edi\n  ja 9f\n"
        "  lea .Lsecond(%rip), %rcx\n  movslq (%rcx,%rdi,4), %rdx\n  add %rcx, %rdx\n  jmp *%rdx\n"
        ".Lc10: mov $10, %eax\n  ret\n"
        ".Lc11: mov $11, %eax\n  ret\n"
        ".Lc12: mov $12, %eax\n  ret\n"
        /* each case 16 bytes: 12 bytes before a case is the last byte of a mov's immediate */
        "9:   mov $-1, %eax\n  movabs $0x1122334455667788, %rdx\n  ret\n"
        ".Lc20: mov $20, %eax\n  movabs $0x1122334455667788, %rdx\n  ret\n"
        ".Lc21: mov $21, %eax\n  movabs $0x1122334455667788, %rdx\n  ret\n"
        ".Lc22: mov $22, %eax\n  movabs $0x1122334455667788, %rdx\n  ret\n"
        ".Lc23: mov $23, %eax\n  movabs $0x1122334455667788, %rdx\n  ret\n"
        ".size pick, .-pick\n"
        ".section .rodata\n.p2align 2\n"
        ".Lfirst: .long .Lc10-.Lfirst, .Lc11-.Lfirst, .Lc12-.Lfirst\n"
        ".Lsecond: .long .Lc20-.Lsecond, .Lc21-.Lsecond, .Lc22-.Lsecond, .Lc23-.Lsecond\n"
        ".text\n");

int main(int argc, char **argv) {
    long sum = 0;
    (void)argv;
    for (int round = 0; round < 1000; round++)
        for (int selector = 0; selector < 5; selector++)
            for (int which = 0; which < 2; which++)
                sum += pick((selector + round + argc - 1) % 5, which) * (selector + 1);
    printf("%ld\n", sum);
    return 0;
}
