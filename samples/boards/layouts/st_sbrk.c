/*
 * st_sbrk.c - the heap of ST-style projects (st.ld): from _end up to
 * _estack - _Min_Stack_Size, the stack's reserve below the initial stack pointer.
 * Replaces newlib's (librdimon's) _sbrk, which grows the heap up to the stack pointer.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

extern uint8_t _end;             /* where the heap starts */
extern uint8_t _estack;          /* the initial stack pointer */
extern uint8_t _Min_Stack_Size;  /* absolute symbol: its address is the stack's reserve */

void *_sbrk(ptrdiff_t increment)
{
    static uint8_t *heap_end;
    const uint8_t *limit = &_estack - (uintptr_t)&_Min_Stack_Size;
    if (heap_end == NULL) {
        heap_end = &_end;
    }
    if (heap_end + increment > limit) {
        errno = ENOMEM;
        return (void *)-1;
    }
    uint8_t *previous = heap_end;
    heap_end += increment;
    return previous;
}
