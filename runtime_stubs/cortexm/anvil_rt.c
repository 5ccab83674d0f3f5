/* Start-up, end of program and files of the InHost runtime for bare-metal Cortex-M
 * images. There is no kernel: results files are written through ARM semihosting (the
 * debugger or emulator does the file operations on the host), and the runtime's data
 * is set up by a hook at the start of the reset handler (the shared parts are in
 * arm/anvil_target.c). */
#include "anvil_rt.h"

/* Semihosting operations (ARM "Semihosting for AArch32 and AArch64", version 2). */
#define SYS_OPEN 0x01
#define SYS_CLOSE 0x02
#define SYS_WRITE0 0x04
#define SYS_WRITE 0x05
#define SYS_EXIT 0x18
#define SYS_EXIT_EXTENDED 0x20
#define OPEN_MODE_W 4 /* fopen mode "w" */

/* Images run at their link addresses. */
uint32_t anvil_bias __attribute__((section(".data"))) = 0;

void anvil_program_start(void);
void anvil_program_end(void);

/* Where the linker put the runtime's RAM (emit/target_build.py) and the flash copy of
 * its initial data. */
extern char anvil_data_start[], anvil_data_end[], anvil_bss_end[], anvil_data_image[];

static long semihost(long op, const void *arg)
{
    register long r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt #0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* Hook before the first instruction of the reset handler (the vector table's entry 1):
 * the runtime's RAM holds garbage on a real board, and the program's own start-up
 * code initialises only its own data. */
void anvil_firmware_init(void)
{
    const char *from = anvil_data_image;
    for (char *p = anvil_data_start; p < anvil_data_end; p++)
        *p = *from++;
    anvil_memset(anvil_data_end, 0, (size_t)(anvil_bss_end - anvil_data_end));
    anvil_program_start();
}

/* Hook before every semihosting call: SYS_EXIT and SYS_EXIT_EXTENDED end the program.
 * (The second argument is for Linux's thread exits.) */
void anvil_on_syscall(uint32_t op, uint32_t unused)
{
    (void)unused;
    if (op == SYS_EXIT || op == SYS_EXIT_EXTENDED)
        anvil_program_end();
}

/* No environment on a board. */
const char *anvil_getenv(const char *name)
{
    (void)name;
    return 0;
}

void anvil_warn(const char *text) { semihost(SYS_WRITE0, text); }

int anvil_open_write(const char *path)
{
    uint32_t n = 0;
    while (path[n])
        n++;
    uint32_t block[3] = {(uint32_t)path, OPEN_MODE_W, n};
    return (int)semihost(SYS_OPEN, block);
}

void anvil_close(int fd)
{
    uint32_t block[1] = {(uint32_t)fd};
    semihost(SYS_CLOSE, block);
}

long anvil_write_fd(int fd, const char *buf, uint32_t len)
{
    uint32_t block[3] = {(uint32_t)fd, (uint32_t)buf, len};
    long not_written = semihost(SYS_WRITE, block);
    return (long)len - not_written;
}
