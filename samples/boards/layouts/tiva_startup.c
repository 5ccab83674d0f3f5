/*
 * tiva_startup.c - start-up in the style of TI's TivaWare startup_gcc.c, for
 * layouts/tiva.ld: the stack is a static array (in .bss), the vector table's word 0 is
 * its end; ResetISR copies .data from _ldata with a C loop and zeroes .bss with an
 * assembler loop whose label is a .thumb_func (a function symbol in the middle of
 * ResetISR, as TI's is); then (for semihosting and newlib, which TI's does not use) the
 * handles, main and exit with its status. The handlers are plain functions that spin.
 */
#include <stdint.h>
#include <stdlib.h>

#ifndef STACK_WORDS
#define STACK_WORDS 1024
#endif

void ResetISR(void);
static void NmiSR(void);
static void FaultISR(void);
static void IntDefaultHandler(void);
void SysTick_Handler(void) __attribute__((weak, alias("IntDefaultHandler")));

extern int main(void);
extern void initialise_monitor_handles(void);

static uint32_t pui32Stack[STACK_WORDS];

__attribute__((section(".isr_vector"), used)) void (*const g_pfnVectors[])(void) = {
    (void (*)(void))((uint32_t)pui32Stack + sizeof(pui32Stack)),
    ResetISR, NmiSR, FaultISR, IntDefaultHandler, IntDefaultHandler, IntDefaultHandler, 0, 0, 0, 0,
    IntDefaultHandler, IntDefaultHandler, 0, IntDefaultHandler, SysTick_Handler,
    [16 ... 16 + 42] = IntDefaultHandler,
};

extern uint32_t _ldata, _data, _edata, _bss, _ebss;

/* newlib's exit runs __libc_fini_array, which calls _fini (crti.o's, left out). */
__attribute__((used)) void _init(void) {}
__attribute__((used)) void _fini(void) {}

void ResetISR(void)
{
    uint32_t *pui32Src, *pui32Dest;

    pui32Src = &_ldata;
    for (pui32Dest = &_data; pui32Dest < &_edata;) {
        *pui32Dest++ = *pui32Src++;
    }
    __asm("    ldr     r0, =_bss\n"
          "    ldr     r1, =_ebss\n"
          "    mov     r2, #0\n"
          "    .thumb_func\n"
          "zero_loop:\n"
          "        cmp     r0, r1\n"
          "        it      lt\n"
          "        strlt   r2, [r0], #4\n"
          "        blt     zero_loop" ::: "r0", "r1", "r2", "memory");
    initialise_monitor_handles();
    exit(main());
}

static void NmiSR(void)
{
    for (;;) {
    }
}

static void FaultISR(void)
{
    for (;;) {
    }
}

static void IntDefaultHandler(void)
{
    for (;;) {
    }
}
