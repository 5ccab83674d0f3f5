/* The contexts whose PC a signal's delivery changed from the copy's to the original's
 * (decisions 0202, 0203), until their handler returns to a restorer that asks for the
 * copy's back (or, one that never returns, until the slot is needed again: taken
 * round-robin, one whose context is the same first).
 *
 * Included by a Linux runtime, which defines anvil_word and SIGNAL_PC(context) (where a
 * ucontext keeps the interrupted PC, an lvalue of anvil_word). */

#define SIGNAL_SLOTS 32
static struct {
    anvil_word context, copy, original, restorer;
} signal_slots[SIGNAL_SLOTS];
static uint32_t signal_next;

/* ``context``'s PC, ``copy`` or past it in the copy, becomes as far past ``original``; the
 * handler returns to a restorer of Anvil's, which is to go on to ``restorer``. */
static void signal_slot_keep(uint8_t *context, anvil_word copy, anvil_word original, anvil_word restorer)
{
    uint32_t slot = SIGNAL_SLOTS;
    for (uint32_t k = 0; k < SIGNAL_SLOTS; k++)
        if (__atomic_load_n(&signal_slots[k].context, __ATOMIC_ACQUIRE) == (anvil_word)context)
            slot = k;  /* a handler before at this place never returned */
    if (slot == SIGNAL_SLOTS)
        slot = __atomic_fetch_add(&signal_next, 1, __ATOMIC_RELAXED) % SIGNAL_SLOTS;
    signal_slots[slot].copy = copy;
    signal_slots[slot].original = original;
    signal_slots[slot].restorer = restorer;
    __atomic_store_n(&signal_slots[slot].context, (anvil_word)context, __ATOMIC_RELEASE);
    SIGNAL_PC(context) = original + (SIGNAL_PC(context) - copy);
}

/* The context ``context`` a handler returns to the kernel: the copy's PC back where the
 * handler left the original's, or as far on from the copy as the handler moved it on past
 * the original, up to ``reach`` bytes (over the faulting instruction, as an emulator of it
 * does); elsewhere, where the handler says. Returns the restorer the handler was to return
 * to (0: the context's PC was not changed at its delivery, or later signals took its slot). */
static anvil_word signal_slot_resume(uint8_t *context, anvil_word reach)
{
    for (uint32_t k = 0; k < SIGNAL_SLOTS; k++) {
        if (__atomic_load_n(&signal_slots[k].context, __ATOMIC_ACQUIRE) != (anvil_word)context)
            continue;
        anvil_word moved = SIGNAL_PC(context) - signal_slots[k].original;
        if (moved <= reach)
            SIGNAL_PC(context) = signal_slots[k].copy + moved;
        anvil_word restorer = signal_slots[k].restorer;
        __atomic_store_n(&signal_slots[k].context, 0, __ATOMIC_RELEASE);
        return restorer;
    }
    return 0;
}
