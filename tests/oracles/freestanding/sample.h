/* Shared declarations of the freestanding oracle runtime (start.c). */
#ifndef ANVIL_SAMPLE_H
#define ANVIL_SAMPLE_H

long anvil_syscall3(long a0, long a1, long a2, long nr);
long write(int fd, const void *buf, unsigned long len);
void sys_exit(int status) __attribute__((noreturn));
void put_str(const char *s);
void put_hex(const char *label, unsigned int value);

#endif
