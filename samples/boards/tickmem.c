/*
 * tickmem.c - memory-heavy work that SysTick interrupts often, with a handler that
 * accesses memory too: the test of instrumentation that an interrupt handler's own
 * instrumentation may interrupt (tests/test_rehost_interrupts.py).
 *
 * main first bumps a counter four times with an atomic add (an LDREX/STREX loop, so
 * the image has an exclusive-access window for the instrumentation to respect), then
 * starts SysTick on the processor clock with a short period (RELOAD + 1 = 100
 * cycles) and mixes a 2 KiB table for ROUNDS passes (two loads and a store per
 * step), while SysTick_Handler runs between any two of its instructions.
 *
 * SysTick_Handler (assembler: its memory accesses are exactly these) reads the tick
 * count and the accumulator, stores tick + 1 and acc * 33 + tick + 1, and on the
 * TARGET-th tick stops the timer and clears a pending tick. Its accesses alternate
 * between two 32-byte lines (then the SysTick and SCB registers), so no access of the
 * handler is to the line its predecessor touched.
 *
 * The handler runs exactly TARGET times, wherever the ticks fall: when the work is
 * done first, wait_for_ticks sleeps until the last one. So the printed results do not
 * depend on the interrupts' timing, and the work (instructions and accesses) depends
 * on it only inside wait_for_ticks (which the test leaves uninstrumented).
 *
 * Prints "atomic=<n> ticks=<count> acc=<hex> sum=<hex>". Exit status: the low 7 bits
 * of sum.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define TARGET 400          /* handler runs */
#define RELOAD 99u          /* a tick every 100 cycles (4 us at 25 MHz; QEMU makes it 10 us without -icount) */
#define WORDS 512u          /* the table: 2 KiB */
#define ROUNDS 24u

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_SHPR3 (*(volatile uint32_t *)0xE000ED20u)

#define CSR_ENABLE (1u << 0)
#define CSR_TICKINT (1u << 1)
#define CSR_CLKSOURCE (1u << 2)

#define STR(x) #x
#define XSTR(x) STR(x)

/* Each on a 32-byte line of its own (the handler's two lines). */
struct line {
    volatile uint32_t word;
    uint32_t pad[7];
} __attribute__((aligned(32)));

struct line tick_count;
struct line tick_acc = {7u, {0}};

static uint32_t table[WORDS];
static uint32_t atomic_count;

/* r0-r3, ip and the flags are stacked by the exception entry: the handler needs no push. */
__asm__(
    "    .text\n"
    "    .syntax unified\n"
    "    .thumb\n"
    "    .align 2\n"
    "    .global SysTick_Handler\n"
    "    .type SysTick_Handler, %function\n"
    "    .thumb_func\n"
    "SysTick_Handler:\n"
    "    movw r0, #:lower16:tick_count\n"
    "    movt r0, #:upper16:tick_count\n"
    "    movw r1, #:lower16:tick_acc\n"
    "    movt r1, #:upper16:tick_acc\n"
    "    ldr r2, [r0]\n"               /* tick_count */
    "    ldr r3, [r1]\n"               /* tick_acc */
    "    adds r2, r2, #1\n"
    "    str r2, [r0]\n"               /* tick_count = tick + 1 */
    "    add r3, r3, r3, lsl #5\n"
    "    add r3, r3, r2\n"
    "    str r3, [r1]\n"               /* tick_acc = acc * 33 + tick + 1 */
    "    movw r1, #" XSTR(TARGET) "\n"
    "    cmp r2, r1\n"
    "    bne 1f\n"
    "    movw r0, #0xE010\n"           /* the last tick: SYST_CSR = 0 ... */
    "    movt r0, #0xE000\n"
    "    movs r1, #0\n"
    "    str r1, [r0]\n"
    "    movw r0, #0xED04\n"           /* ... and SCB_ICSR = PENDSTCLR (a tick pending meanwhile) */
    "    movt r0, #0xE000\n"
    "    mov r1, #0x02000000\n"
    "    str r1, [r0]\n"
    "1:  bx lr\n"
    "    .size SysTick_Handler, . - SysTick_Handler\n");

/* Sleeps until the handler has run TARGET times (WFI wakes on a pending tick even with
 * interrupts masked; the handler runs between CPSIE and CPSID). */
__attribute__((noinline)) static void wait_for_ticks(void)
{
    __asm__ volatile("cpsid i" ::: "memory");
    while (tick_count.word < TARGET)
        __asm__ volatile("wfi\n\tcpsie i\n\tisb\n\tcpsid i" ::: "memory");
    __asm__ volatile("cpsie i" ::: "memory");
}

__attribute__((noinline)) static uint32_t work(void)
{
    for (uint32_t i = 0; i < WORDS; i++)
        table[i] = i * 2654435761u;
    uint32_t sum = 0;
    for (uint32_t r = 0; r < ROUNDS; r++) {
        for (uint32_t i = 0; i < WORDS; i++) {
            uint32_t x = table[i] * 33u + table[(i * 7u + r) % WORDS] + r;
            table[i] = x;
            sum = (sum ^ x) * 16777619u;
        }
    }
    return sum;
}

int main(void)
{
    for (int k = 0; k < 4; k++)
        __atomic_fetch_add(&atomic_count, 1u, __ATOMIC_RELAXED);
    SCB_SHPR3 = (SCB_SHPR3 & 0x00FFFFFFu) | (0x80u << 24); /* SysTick priority */
    SYST_RVR = RELOAD;
    SYST_CVR = 0;
    SYST_CSR = CSR_CLKSOURCE | CSR_TICKINT | CSR_ENABLE;
    uint32_t sum = work();
    wait_for_ticks();
    printf("atomic=%" PRIu32 " ticks=%" PRIu32 " acc=%08" PRIx32 " sum=%08" PRIx32 "\n", atomic_count,
           tick_count.word, tick_acc.word, sum);
    return (int)(sum & 0x7Fu);
}
