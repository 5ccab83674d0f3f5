/* System calls made as klibc's Thumb code makes them (Debian's mksh-static, klibc-utils):
 * each stub is `push {r4, r5, r7, lr}; bl common` with the call's number as a halfword
 * after the BL, and the common part reads it at its return address (LR - 1), makes the
 * call and returns with `pop {r4, r5, r7, pc}` to the stub's caller: the bytes after the
 * BL are data, and nothing returns there (decision 0103). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

long k_write(long fd, const void *buf, long n);
long k_getpid(void);
long k_getppid(void);

__asm__(
    "  .syntax unified\n"
    "  .thumb\n"
    "  .text\n"
    "  .balign 4\n"
    "  .global k_write\n"
    "  .type k_write, %function\n"
    "  .thumb_func\n"
    "k_write:\n"
    "  push {r4, r5, r7, lr}\n"
    "  bl k_syscall_common\n"
    "  .short 4\n" /* __NR_write */
    "  .size k_write, . - k_write\n"
    "  .global k_getpid\n"
    "  .type k_getpid, %function\n"
    "  .thumb_func\n"
    "k_getpid:\n"
    "  push {r4, r5, r7, lr}\n"
    "  bl k_syscall_common\n"
    "  .short 20\n" /* __NR_getpid */
    "  .size k_getpid, . - k_getpid\n"
    "  .global k_getppid\n"
    "  .type k_getppid, %function\n"
    "  .thumb_func\n"
    "k_getppid:\n"
    "  push {r4, r5, r7, lr}\n"
    "  bl k_syscall_common\n"
    "  .short 64\n" /* __NR_getppid */
    "  .size k_getppid, . - k_getppid\n"
    "  .type k_syscall_common, %function\n"
    "  .thumb_func\n"
    "k_syscall_common:\n"
    "  mov r7, lr\n"
    "  ldr r4, [sp, #16]\n"
    "  subs r7, #1\n"
    "  ldr r5, [sp, #20]\n"
    "  ldrh r7, [r7]\n"
    "  svc 0\n"
    "  pop {r4, r5, r7, pc}\n"
    "  .size k_syscall_common, . - k_syscall_common\n");

int main(void)
{
    char line[64];
    long same = 0;
    for (int i = 0; i < 40; i++) {
        same += k_getpid() == getpid();
        int n = snprintf(line, sizeof line, "line %d: %ld of %d the same\n", i, same, i + 1);
        if (k_write(1, line, n) != n)
            return 1;
    }
    return k_getppid() == getppid() ? 3 : 4;
}
