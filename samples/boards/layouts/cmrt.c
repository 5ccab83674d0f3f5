/*
 * cmrt.c - start-up in the style of Rust's cortex-m-rt, for layouts/cortex-m-rt.ld.
 *
 * The vector table comes in three sections (.vector_table.reset_vector, .exceptions,
 * .interrupts; the script writes word 0, the stack top, itself). The reset handler,
 * Reset, sits in a section of its own (.Reset) at the start of .text; it calls
 * __pre_init (weak, DefaultPreInit, as cortex-m-rt's), zeroes .bss and copies .data
 * with word loops of its own, switches the FPU on where there is one, then runs what a
 * C program needs (newlib's semihosting handles, the constructors) and main, whose
 * status goes to exit. HardFault goes through HardFaultTrampoline (assembler: it passes
 * the stacked frame's address, as cortex-m-rt's does), every other exception and
 * interrupt to DefaultHandler_, overridable by name (SysTick_Handler: the programs'
 * name, not cortex-m-rt's SysTick).
 */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t __sbss, __ebss, __sdata, __edata, __sidata;

typedef void (*vector_fn)(void);
extern vector_fn __init_array_start[];
extern vector_fn __init_array_end[];

extern int main(void);
extern void initialise_monitor_handles(void);

__attribute__((noreturn)) void Reset(void);
void HardFaultTrampoline(void);

void DefaultHandler_(void)
{
    for (;;) {
    }
}

void DefaultPreInit(void) {}
void __pre_init(void) __attribute__((weak, alias("DefaultPreInit")));

__attribute__((used, noreturn)) void HardFault_(const uint32_t *frame)
{
    (void)frame;
    for (;;) {
    }
}

void NonMaskableInt(void) __attribute__((weak, alias("DefaultHandler_")));
void MemoryManagement(void) __attribute__((weak, alias("DefaultHandler_")));
void BusFault(void) __attribute__((weak, alias("DefaultHandler_")));
void UsageFault(void) __attribute__((weak, alias("DefaultHandler_")));
void SVCall(void) __attribute__((weak, alias("DefaultHandler_")));
void DebugMonitor(void) __attribute__((weak, alias("DefaultHandler_")));
void PendSV(void) __attribute__((weak, alias("DefaultHandler_")));
void SysTick_Handler(void) __attribute__((weak, alias("DefaultHandler_")));
void DefaultInterrupt(void) __attribute__((weak, alias("DefaultHandler_")));

__attribute__((section(".vector_table.reset_vector"), used))
const vector_fn __RESET_VECTOR = Reset;

__attribute__((section(".vector_table.exceptions"), used))
const vector_fn __EXCEPTIONS[14] = {
    NonMaskableInt, HardFaultTrampoline, MemoryManagement, BusFault, UsageFault, 0, 0, 0, 0,
    SVCall, DebugMonitor, 0, PendSV, SysTick_Handler,
};

__attribute__((section(".vector_table.interrupts"), used))
const vector_fn __INTERRUPTS[32] = {
    DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt,
    DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt,
    DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt,
    DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt,
    DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt, DefaultInterrupt,
    DefaultInterrupt, DefaultInterrupt,
};

/* Which stack the fault used (EXC_RETURN bit 2), that frame's address to HardFault_. */
__asm__(
    "    .section .HardFaultTrampoline, \"ax\", %progbits\n"
    "    .global HardFaultTrampoline\n"
    "    .type HardFaultTrampoline, %function\n"
    "    .thumb_func\n"
    "HardFaultTrampoline:\n"
    "    mov r0, lr\n"
    "    movs r1, #4\n"
    "    tst r0, r1\n"
    "    bne 0f\n"
    "    mrs r0, MSP\n"
    "    b HardFault_\n"
    "0:\n"
    "    mrs r0, PSP\n"
    "    b HardFault_\n"
    "    .size HardFaultTrampoline, . - HardFaultTrampoline\n"
    "    .text\n");

/* _init/_fini: newlib's __libc_fini_array calls _fini; -nostartfiles leaves crti.o out. */
__attribute__((used)) void _init(void) {}
__attribute__((used)) void _fini(void) {}

/* After the FPU is on (a hard-float build may use FP registers here). */
__attribute__((noinline, noreturn)) static void run_main(void)
{
    initialise_monitor_handles();
    for (vector_fn *fn = __init_array_start; fn < __init_array_end; fn++) {
        (*fn)();
    }
    exit(main());
}

__attribute__((section(".Reset"), noreturn)) void Reset(void)
{
    __pre_init();
    for (volatile uint32_t *p = &__sbss; p < &__ebss; p++) {
        *p = 0;
    }
    const volatile uint32_t *src = &__sidata;
    for (volatile uint32_t *p = &__sdata; p < &__edata; p++) {
        *p = *src++;
    }
#if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10, CP11 */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    run_main();
}
