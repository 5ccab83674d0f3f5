/*
 * ramfunc_copy.c - copies the .ramfunc code from its load address in the ITCM's image to
 * where it runs (layouts/tcm.ld), as a constructor of the highest priority: before any
 * other constructor and main, after startup.c has copied .data.
 */
#include <stdint.h>

extern uint32_t __ramfunc_load, __ramfunc_start, __ramfunc_end;

__attribute__((constructor(101))) static void copy_ramfunc(void)
{
    const volatile uint32_t *src = &__ramfunc_load;
    for (volatile uint32_t *dst = &__ramfunc_start; dst < &__ramfunc_end;) {
        *dst++ = *src++;
    }
    __asm__ volatile("dsb\n\tisb" ::: "memory");
}
