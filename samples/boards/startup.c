/*
 * startup.c - vector table and reset code for the bare-metal MPS2 samples.
 *
 * Shared by the AN385 (Cortex-M3) and AN386 (Cortex-M4F) boards.  The linker
 * scripts (mps2-an385.ld, mps2-an386.ld) place the ".vectors" section first in
 * the code memory at address 0, where the core fetches the initial stack pointer
 * and the reset vector from.
 *
 * Reset_Handler: enables the FPU when the program was built for one, copies the
 * initialised data from its load address in code memory to RAM, zeroes .bss, sets
 * up newlib's semihosting handles (librdimon), runs the C/C++ constructors, calls
 * main() and passes its return value to exit(), which flushes stdio and ends the
 * simulation through the semihosting SYS_EXIT(_EXTENDED) call.
 *
 * Link with -nostartfiles: this file replaces newlib's rdimon-crt0 (and the empty
 * _init/_fini of crti.o).
 *
 * Two build options move the vector table the core uses (samples/boards/variants.ld):
 * -DVECTORS_IN_RAM copies the table into RAM before main and points VTOR at the
 * copy; -DBOOT_TABLE adds a two-word table (initial SP, reset vector) in section
 * .boot, which variants.ld puts at address 0 when the image itself starts higher in
 * flash (APP_BASE), and the reset handler points VTOR at the image's own table.
 *
 * Every exception handler other than Reset_Handler is a weak alias of
 * Default_Handler, which spins forever; a program overrides one by defining a
 * function of the same name (e.g. SysTick_Handler).
 */
#include <stdint.h>
#include <stdlib.h>

/* Symbols defined by the linker script.  STACK_TOP: the initial stack pointer's
 * name (-DSTACK_TOP=_estack for ST-style scripts, __stack for newlib-style ones). */
#ifndef STACK_TOP
#define STACK_TOP __StackTop
#endif
extern uint32_t STACK_TOP;
extern uint32_t _sidata; /* load address of .data (in code memory) */
extern uint32_t _sdata;  /* start of .data in RAM */
extern uint32_t _edata;  /* end of .data in RAM */
extern uint32_t _sbss;   /* start of .bss */
extern uint32_t _ebss;   /* end of .bss */

typedef void (*init_fn)(void);
extern init_fn __preinit_array_start[];
extern init_fn __preinit_array_end[];
extern init_fn __init_array_start[];
extern init_fn __init_array_end[];

extern int main(void);
extern void initialise_monitor_handles(void); /* librdimon: opens ":tt" for stdio */

void Reset_Handler(void);
void Default_Handler(void);

/* System exceptions (ARMv7-M). */
void NMI_Handler(void) __attribute__((weak, alias("Default_Handler")));
void HardFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void MemManage_Handler(void) __attribute__((weak, alias("Default_Handler")));
void BusFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void UsageFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SVC_Handler(void) __attribute__((weak, alias("Default_Handler")));
void DebugMon_Handler(void) __attribute__((weak, alias("Default_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

/* External interrupts 0..31 (QEMU wires 32 IRQ lines to the NVIC on both boards). */
#define WEAK_IRQ(n) void IRQ##n##_Handler(void) __attribute__((weak, alias("Default_Handler")))
WEAK_IRQ(0);  WEAK_IRQ(1);  WEAK_IRQ(2);  WEAK_IRQ(3);
WEAK_IRQ(4);  WEAK_IRQ(5);  WEAK_IRQ(6);  WEAK_IRQ(7);
WEAK_IRQ(8);  WEAK_IRQ(9);  WEAK_IRQ(10); WEAK_IRQ(11);
WEAK_IRQ(12); WEAK_IRQ(13); WEAK_IRQ(14); WEAK_IRQ(15);
WEAK_IRQ(16); WEAK_IRQ(17); WEAK_IRQ(18); WEAK_IRQ(19);
WEAK_IRQ(20); WEAK_IRQ(21); WEAK_IRQ(22); WEAK_IRQ(23);
WEAK_IRQ(24); WEAK_IRQ(25); WEAK_IRQ(26); WEAK_IRQ(27);
WEAK_IRQ(28); WEAK_IRQ(29); WEAK_IRQ(30); WEAK_IRQ(31);

typedef void (*vector_fn)(void);

/*
 * Entry 0 is the initial main stack pointer, entry 1 the reset vector, 2..15 the
 * system exceptions (0 = reserved slot), 16.. the external interrupts.
 */
__attribute__((section(".vectors"), used))
const vector_fn vector_table[16 + 32] = {
    (vector_fn)&STACK_TOP,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0,
    0,
    0,
    0,
    SVC_Handler,
    DebugMon_Handler,
    0,
    PendSV_Handler,
    SysTick_Handler,
    IRQ0_Handler,  IRQ1_Handler,  IRQ2_Handler,  IRQ3_Handler,
    IRQ4_Handler,  IRQ5_Handler,  IRQ6_Handler,  IRQ7_Handler,
    IRQ8_Handler,  IRQ9_Handler,  IRQ10_Handler, IRQ11_Handler,
    IRQ12_Handler, IRQ13_Handler, IRQ14_Handler, IRQ15_Handler,
    IRQ16_Handler, IRQ17_Handler, IRQ18_Handler, IRQ19_Handler,
    IRQ20_Handler, IRQ21_Handler, IRQ22_Handler, IRQ23_Handler,
    IRQ24_Handler, IRQ25_Handler, IRQ26_Handler, IRQ27_Handler,
    IRQ28_Handler, IRQ29_Handler, IRQ30_Handler, IRQ31_Handler,
};

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)

#if defined(BOOT_TABLE)
/* What a boot loader at address 0 would hold: where the image's reset code is. */
__attribute__((section(".boot"), used))
const vector_fn boot_table[2] = {(vector_fn)&STACK_TOP, Reset_Handler};
#endif

#if defined(VECTORS_IN_RAM)
/* VTOR's low 7 bits are zero; 48 entries need 256-byte alignment. In .bss. */
__attribute__((aligned(256))) static vector_fn ram_vectors[16 + 32];
#endif

/*
 * newlib's __libc_fini_array (registered with atexit by a constructor in libc)
 * calls _fini, which normally comes from crti.o; -nostartfiles leaves that out.
 * No .init/.fini code is used by these programs, so both hooks are empty. "used":
 * only newlib (an archive) calls them, which link-time optimisation does not see.
 */
__attribute__((used)) void _init(void) {}
__attribute__((used)) void _fini(void) {}

void Default_Handler(void)
{
    for (;;) {
    }
}

/*
 * The rest of the start-up sequence, kept out of Reset_Handler so that nothing the
 * compiler emits for it (in a hard-float build it may use FP registers) runs before
 * the FPU has been switched on.
 */
__attribute__((noinline, noreturn)) static void start_c_runtime(void)
{
    /* volatile: keep GCC from turning the loops into memcpy/memset calls. */
    const volatile uint32_t *src = &_sidata;
    volatile uint32_t *dst = &_sdata;
    while (dst < &_edata) {
        *dst++ = *src++;
    }
    for (dst = &_sbss; dst < &_ebss; dst++) {
        *dst = 0;
    }

#if defined(VECTORS_IN_RAM)
    for (unsigned i = 0; i < sizeof ram_vectors / sizeof ram_vectors[0]; i++) {
        ram_vectors[i] = vector_table[i];
    }
    SCB_VTOR = (uint32_t)ram_vectors;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif

    initialise_monitor_handles();

    for (init_fn *fn = __preinit_array_start; fn < __preinit_array_end; fn++) {
        (*fn)();
    }
    for (init_fn *fn = __init_array_start; fn < __init_array_end; fn++) {
        (*fn)();
    }

    exit(main());
}

void Reset_Handler(void)
{
#if defined(BOOT_TABLE)
    SCB_VTOR = (uint32_t)vector_table;
#endif
#if defined(__ARM_FP)
    /* CPACR (0xE000ED88): full access to coprocessors 10 and 11, i.e. the FPU. */
    volatile uint32_t *const cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= (0xFu << 20);
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    start_c_runtime();
}
