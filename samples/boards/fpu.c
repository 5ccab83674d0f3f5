/*
 * fpu.c - single-precision float work in the main loop and in the SysTick handler:
 * on the AN386 (Cortex-M4F, hard-float ABI) every tick interrupts code whose FP
 * registers are live, so the core stacks an extended frame with lazy FP state
 * preservation (FPCCR.LSPEN) and the handler's own FP instructions make it save main's
 * S0-S15 and FPSCR then. On the AN385 the same source builds with soft float (libgcc).
 *
 * SysTick fires every 100 cycles; the handler mixes the tick number into an
 * accumulator with float arithmetic and stops the timer on the TARGET-th tick, so it
 * runs exactly TARGET times wherever the ticks fall. main iterates a float recurrence
 * ROUNDS times meanwhile. Only wait_for_ticks, which sleeps until the last tick, does
 * work that depends on the timing (leave it uninstrumented: --skip wait_for_ticks).
 *
 * Prints "ticks=<count> h=<bits> s=<bits> y=<bits>" (the floats' IEEE bits in hex):
 * a float register that an interrupt corrupts changes s or y. Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TARGET 200u        /* handler runs */
#define RELOAD 99u         /* a tick every 100 cycles */
#define ROUNDS 3000u       /* main's iterations */

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)

static volatile uint32_t ticks;
static volatile float handler_acc = 1.0f;

__attribute__((noinline)) float wave(float x)
{
    return x * 0.5f + 0.25f * x * x - 1.0f / (x + 3.0f);
}

void SysTick_Handler(void)
{
    uint32_t t = ticks + 1u;
    float v = handler_acc * 0.75f + wave((float)t * 0.01f);
    handler_acc = v;
    ticks = t;
    if (t == TARGET) {
        SYST_CSR = 0;          /* no more ticks ... */
        SCB_ICSR = 1u << 25;   /* ... and none pending (PENDSTCLR) */
    }
}

/* Sleeps until the handler has run TARGET times (as tickshare.c's). */
__attribute__((noinline)) static void wait_for_ticks(void)
{
    __asm__ volatile("cpsid i" ::: "memory");
    while (ticks < TARGET)
        __asm__ volatile("wfi\n\tcpsie i\n\tisb\n\tcpsid i" ::: "memory");
    __asm__ volatile("cpsie i" ::: "memory");
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int main(void)
{
    SYST_RVR = RELOAD;
    SYST_CVR = 0;
    SYST_CSR = 7u;             /* processor clock, interrupt, enabled */
    float s = 0.0f, y = 0.1f;
    for (uint32_t i = 0; i < ROUNDS; i++) {
        y = wave(y) * 0.3f + (float)(i & 63u) * 0.001f;
        s += y * y;
    }
    wait_for_ticks();
    printf("ticks=%" PRIu32 " h=%08" PRIx32 " s=%08" PRIx32 " y=%08" PRIx32 "\n", ticks, bits(handler_acc), bits(s),
           bits(y));
    return 0;
}
