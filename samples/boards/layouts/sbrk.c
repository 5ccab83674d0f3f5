/*
 * sbrk.c - a heap between two linker-script symbols, HEAP_START and HEAP_END (-D; by
 * default Zephyr's: from _end up to the end of RAM, __kernel_ram_end, above the main
 * stack in .noinit, as Zephyr's newlib hooks give it). Replaces librdimon's _sbrk,
 * which grows the heap from "end" up to the stack pointer.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifndef HEAP_START
#define HEAP_START _end
#endif
#ifndef HEAP_END
#define HEAP_END __kernel_ram_end
#endif

extern uint8_t HEAP_START;  /* where the heap starts */
extern uint8_t HEAP_END;    /* where it must stop */

void *_sbrk(ptrdiff_t increment)
{
    static uint8_t *heap_end;
    if (heap_end == NULL) {
        heap_end = &HEAP_START;
    }
    if (heap_end + increment > &HEAP_END) {
        errno = ENOMEM;
        return (void *)-1;
    }
    uint8_t *previous = heap_end;
    heap_end += increment;
    return previous;
}
