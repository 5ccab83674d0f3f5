/*
 * tickshare.c - a function that both the main loop and the SysTick handler call: the
 * test of inline counters that an interrupt handler may interrupt while it updates the
 * very counter the handler updates too (tests/test_firmware_interrupts.py).
 *
 * main calls mix() CALLS times in a loop while SysTick fires every 100 cycles; the
 * handler calls mix() once per tick and stops the timer on the TARGET-th tick, so mix()
 * runs exactly CALLS + TARGET times wherever the ticks fall. mix() is straight-line code
 * (one block, the same instructions each call). Only wait_for_ticks, which sleeps until
 * the last tick, does work that depends on the timing (leave it uninstrumented).
 *
 * Prints "ticks=<count> acc=<hex> sum=<hex>". Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define TARGET 300u         /* handler runs */
#define RELOAD 99u          /* a tick every 100 cycles */
#define CALLS 4000u         /* main's calls of mix */

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)

static volatile uint32_t ticks;
static volatile uint32_t acc = 7u;

__attribute__((noinline)) uint32_t mix(uint32_t x)
{
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return x * 3266489917u;
}

void SysTick_Handler(void)
{
    uint32_t t = ticks + 1u;
    acc = acc * 33u + mix(t);
    ticks = t;
    if (t == TARGET) {
        SYST_CSR = 0;               /* no more ticks ... */
        SCB_ICSR = 1u << 25;        /* ... and none pending (PENDSTCLR) */
    }
}

/* Sleeps until the handler has run TARGET times (WFI wakes on a pending tick even with
 * interrupts masked; the handler runs between CPSIE and CPSID). */
__attribute__((noinline)) static void wait_for_ticks(void)
{
    __asm__ volatile("cpsid i" ::: "memory");
    while (ticks < TARGET)
        __asm__ volatile("wfi\n\tcpsie i\n\tisb\n\tcpsid i" ::: "memory");
    __asm__ volatile("cpsie i" ::: "memory");
}

int main(void)
{
    SYST_RVR = RELOAD;
    SYST_CVR = 0;
    SYST_CSR = 7u;                  /* processor clock, interrupt, enabled */
    uint32_t sum = 0;
    for (uint32_t i = 0; i < CALLS; i++)
        sum += mix(i);
    wait_for_ticks();
    printf("ticks=%" PRIu32 " acc=%08" PRIx32 " sum=%08" PRIx32 "\n", ticks, acc, sum);
    return 0;
}
