/*
 * zephyr_sbrk.c - the heap of Zephyr-style images (zephyr.ld): from _end up to the end
 * of RAM (__kernel_ram_end), as Zephyr's newlib hooks give it, above the main stack
 * (in .noinit, below _end). Replaces librdimon's _sbrk, which refuses to grow a heap
 * past the stack pointer.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

extern uint8_t _end;              /* where the heap starts */
extern uint8_t __kernel_ram_end;  /* the end of RAM */

void *_sbrk(ptrdiff_t increment)
{
    static uint8_t *heap_end;
    if (heap_end == NULL) {
        heap_end = &_end;
    }
    if (heap_end + increment > &__kernel_ram_end) {
        errno = ENOMEM;
        return (void *)-1;
    }
    uint8_t *previous = heap_end;
    heap_end += increment;
    return previous;
}
