/*
 * irq.c - count SysTick interrupts.
 *
 * Starts SysTick (processor clock, 25 MHz on QEMU's MPS2 boards) to fire once after
 * RELOAD + 1 cycles (1 ms) and sleeps with WFI, interrupts masked; then unmasks them
 * for the handler to run, and repeats until the counter reaches TARGET.
 * SysTick_Handler increments a volatile counter, folds it into an accumulator
 * (acc = acc * 33 + ticks, mod 2^32), stops the timer and clears any pending tick.
 * One tick per round, so the program executes the same instructions however the ticks
 * fall in host time (the instruction-count oracles compare separate runs).
 *
 * Prints "target=<N> ticks=<count> acc=<hex>".  Exit status: the tick count
 * (TARGET when all went well).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define TARGET 20u
#define RELOAD (25000u - 1u)

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define SCB_SHPR3 (*(volatile uint32_t *)0xE000ED20u)

#define CSR_ENABLE (1u << 0)
#define CSR_TICKINT (1u << 1)
#define CSR_CLKSOURCE (1u << 2)
#define ICSR_PENDSTCLR (1u << 25)

static volatile uint32_t ticks;
static volatile uint32_t acc = 7u; /* in .data */

void SysTick_Handler(void)
{
    uint32_t t = ticks + 1u;
    ticks = t;
    acc = acc * 33u + t;
    SYST_CSR = 0;
    SCB_ICSR = ICSR_PENDSTCLR;
}

int main(void)
{
    SCB_SHPR3 = (SCB_SHPR3 & 0x00FFFFFFu) | (0x80u << 24); /* SysTick priority */
    SYST_RVR = RELOAD;
    __asm__ volatile("cpsid i" ::: "memory");
    while (ticks < TARGET) {
        SYST_CVR = 0;
        SYST_CSR = CSR_CLKSOURCE | CSR_TICKINT | CSR_ENABLE;
        /* WFI wakes when the tick is pending even with interrupts masked; the handler
         * runs between CPSIE and CPSID. */
        __asm__ volatile("wfi\n\tcpsie i\n\tisb\n\tcpsid i" ::: "memory");
    }
    __asm__ volatile("cpsie i" ::: "memory");
    uint32_t count = ticks;
    printf("target=%u ticks=%" PRIu32 " acc=%08" PRIx32 "\n", TARGET, count, acc);
    return (int)count;
}
