/*
 * mcux_startup.c - start-up in the style of NXP MCUXpresso's startup_<part>.c, for
 * layouts/mcux.ld: the vector table g_pfnVectors in .isr_vector (word 0 _vStackTop),
 * ResetISR in .after_vectors. ResetISR switches the FPU on where there is one, then
 * walks the linker script's section table: copies each .data from its load address
 * (data_init) and zeroes each .bss (bss_init), then opens newlib's semihosting handles,
 * runs the constructors (newlib's __libc_init_array) and main, whose status goes to exit.
 */
#include <stdint.h>
#include <stdlib.h>

extern void _vStackTop(void);
extern unsigned int __data_section_table;
extern unsigned int __data_section_table_end;
extern unsigned int __bss_section_table;
extern unsigned int __bss_section_table_end;

extern int main(void);
extern void initialise_monitor_handles(void);
extern void __libc_init_array(void);

void ResetISR(void);
__attribute__((section(".after_vectors"))) void IntDefaultHandler(void)
{
    for (;;) {
    }
}

#define ALIAS(f) __attribute__((weak, alias(#f)))
void NMI_Handler(void) ALIAS(IntDefaultHandler);
void HardFault_Handler(void) ALIAS(IntDefaultHandler);
void MemManage_Handler(void) ALIAS(IntDefaultHandler);
void BusFault_Handler(void) ALIAS(IntDefaultHandler);
void UsageFault_Handler(void) ALIAS(IntDefaultHandler);
void SVC_Handler(void) ALIAS(IntDefaultHandler);
void DebugMon_Handler(void) ALIAS(IntDefaultHandler);
void PendSV_Handler(void) ALIAS(IntDefaultHandler);
void SysTick_Handler(void) ALIAS(IntDefaultHandler);
void UART0_IRQHandler(void) ALIAS(IntDefaultHandler);

extern void (*const g_pfnVectors[])(void);
__attribute__((used, section(".isr_vector"))) void (*const g_pfnVectors[16 + 32])(void) = {
    &_vStackTop, ResetISR, NMI_Handler, HardFault_Handler, MemManage_Handler, BusFault_Handler,
    UsageFault_Handler, 0, 0, 0, 0, SVC_Handler, DebugMon_Handler, 0, PendSV_Handler, SysTick_Handler,
    UART0_IRQHandler, [17 ... 47] = IntDefaultHandler,
};

__attribute__((section(".after_vectors"), used)) void data_init(unsigned int romstart, unsigned int start, unsigned int len)
{
    unsigned int *pulDest = (unsigned int *)start;
    unsigned int *pulSrc = (unsigned int *)romstart;
    for (unsigned int loop = 0; loop < len; loop = loop + 4) {
        *pulDest++ = *pulSrc++;
    }
}

__attribute__((section(".after_vectors"), used)) void bss_init(unsigned int start, unsigned int len)
{
    unsigned int *pulDest = (unsigned int *)start;
    for (unsigned int loop = 0; loop < len; loop = loop + 4) {
        *pulDest++ = 0;
    }
}

/* newlib's __libc_init_array calls _init, __libc_fini_array _fini (crti.o's, left out). */
__attribute__((used)) void _init(void) {}
__attribute__((used)) void _fini(void) {}

__attribute__((used, noinline, noreturn)) void start_main(void)
{
    initialise_monitor_handles();
    __libc_init_array();
    exit(main());
}

__attribute__((section(".after_vectors"), naked)) void ResetISR(void)
{
    __asm__ volatile("cpsid i");
#if defined(__ARM_FP)
    __asm__ volatile(
        "ldr r0, =0xE000ED88\n\t"
        "ldr r1, [r0]\n\t"
        "orr r1, r1, #(0xF << 20)\n\t"
        "str r1, [r0]\n\t"
        "dsb\n\t"
        "isb" ::: "r0", "r1", "memory");
#endif
    __asm__ volatile(
        "ldr r4, =__data_section_table\n\t"
        "ldr r5, =__data_section_table_end\n"
        "1:\n\t"
        "cmp r4, r5\n\t"
        "bhs 2f\n\t"
        "ldmia r4!, {r0, r1, r2}\n\t"
        "bl data_init\n\t"
        "b 1b\n"
        "2:\n\t"
        "ldr r5, =__bss_section_table_end\n"
        "3:\n\t"
        "cmp r4, r5\n\t"
        "bhs 4f\n\t"
        "ldmia r4!, {r0, r1}\n\t"
        "bl bss_init\n\t"
        "b 3b\n"
        "4:\n\t"
        "cpsie i\n\t"
        "b start_main\n\t"
        ".ltorg" ::: "memory");
}
