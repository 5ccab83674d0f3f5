/* Code the program copies to run it elsewhere, as V8 does with its embedded builtins (node
 * copies them next to its JIT code): the builtins lie between the symbols V8 names them by,
 * v8_Default_embedded_blob_code_ and its size v8_Default_embedded_blob_code_size_, and are
 * position independent; main copies them into a page of its own and calls them there. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

__asm__(".text\n.p2align 4\n"
        ".globl v8_Default_embedded_blob_code_\nv8_Default_embedded_blob_code_:\n"
        ".globl builtin_square\n.type builtin_square, @function\n"
        "builtin_square:\n  mov %rdi, %rax\n  imul %rdi, %rax\n  ret\n"
        ".size builtin_square, .-builtin_square\n"
        ".p2align 4\n.globl builtin_sum\n.type builtin_sum, @function\n"
        "builtin_sum:\n  xor %eax, %eax\n1: add %rdi, %rax\n  dec %rdi\n  jnz 1b\n  ret\n"
        ".size builtin_sum, .-builtin_sum\n"
        ".Lblob_end:\n"
        ".section .rodata\n.p2align 2\n.globl v8_Default_embedded_blob_code_size_\n"
        "v8_Default_embedded_blob_code_size_: .long .Lblob_end - v8_Default_embedded_blob_code_\n"
        ".text\n");
extern const unsigned char v8_Default_embedded_blob_code_[];
extern const unsigned int v8_Default_embedded_blob_code_size_;
long builtin_square(long);
long builtin_sum(long);

int main(int argc, char **argv) {
    (void)argv;
    unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 2;
    memcpy(page, v8_Default_embedded_blob_code_, v8_Default_embedded_blob_code_size_);
    long (*square)(long) = (long (*)(long))(page + ((const unsigned char *)builtin_square - v8_Default_embedded_blob_code_));
    long (*sum)(long) = (long (*)(long))(page + ((const unsigned char *)builtin_sum - v8_Default_embedded_blob_code_));
    long total = 0;
    for (long i = 1; i <= 100 * argc; i++) total += square(i) + sum(i) + builtin_square(i);
    printf("%ld\n", total);
    return 0;
}
