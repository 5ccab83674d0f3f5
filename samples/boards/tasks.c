/*
 * tasks.c - two tasks that a PendSV context switch preempts in turn, as an RTOS's
 * scheduler does (FreeRTOS, Zephyr): the test of inline counters in code that two threads
 * of control run, either one stopped between any two instructions while the other runs
 * (tests/test_firmware_interrupts.py).
 *
 * SysTick fires every 100 cycles and pends PendSV, whose handler saves the running
 * task's r4-r11 and EXC_RETURN on its process stack and resumes the other. Task A (main's
 * thread, moved onto a process stack) calls mix() CALLS_A times, task B CALLS_B times, so mix()
 * runs exactly CALLS_A + CALLS_B times wherever the switches fall; mix() is straight-line
 * code (one block). Only idle() and wait_for_b(), which spin until the other task is done,
 * do work that depends on the timing (leave them uninstrumented).
 *
 * Prints "a=<hex> b=<hex> switched" (whether the tasks were switched at least twice).
 * Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define RELOAD 99u          /* a tick every 100 cycles */
#define CALLS_A 3000u       /* task A's calls of mix */
#define CALLS_B 2000u       /* task B's */
#define STACK_WORDS 512u

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define SCB_SHPR3 (*(volatile uint32_t *)0xE000ED20u)

static uint32_t stack_a[STACK_WORDS] __attribute__((aligned(8)));
static uint32_t stack_b[STACK_WORDS] __attribute__((aligned(8)));
uint32_t *volatile saved_sp[2];     /* each task's process stack while the other runs */
volatile uint32_t current;          /* the running task: 0 = A, 1 = B */
static volatile uint32_t done_b, result_b, switches;

__attribute__((noinline)) uint32_t mix(uint32_t x)
{
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return x * 3266489917u;
}

void SysTick_Handler(void)
{
    switches++;
    SCB_ICSR = 1u << 28;            /* PENDSVSET: switch once no other handler runs */
}

/* The context switch: r4-r11 and EXC_RETURN onto the running task's process stack (the
 * core stacked the rest), then the other task's back and return into it. */
__attribute__((naked)) void PendSV_Handler(void)
{
    __asm__ volatile(
        "mrs r0, psp\n\t"
        "stmdb r0!, {r4-r11, lr}\n\t"
        "ldr r1, =current\n\t"
        "ldr r2, [r1]\n\t"
        "ldr r3, =saved_sp\n\t"
        "str r0, [r3, r2, lsl #2]\n\t"
        "eor r2, r2, #1\n\t"
        "str r2, [r1]\n\t"
        "ldr r0, [r3, r2, lsl #2]\n\t"
        "ldmia r0!, {r4-r11, lr}\n\t"
        "msr psp, r0\n\t"
        "bx lr\n\t"
        ".ltorg\n");
}

/* Spins until task A ends the program (the switches go on). */
__attribute__((noinline)) static void idle(void)
{
    for (;;)
        __asm__ volatile("" ::: "memory");
}

static void task_b(void)
{
    uint32_t sum = 0;
    for (uint32_t i = 0; i < CALLS_B; i++)
        sum += mix(i + 0x10000u);
    result_b = sum;
    done_b = 1;
    idle();
}

__attribute__((noinline)) static void wait_for_b(void)
{
    while (!done_b)
        __asm__ volatile("" ::: "memory");
}

/* Task B's first frame, as PendSV leaves a preempted task's: r4-r11 and EXC_RETURN (thread
 * mode, process stack, no FP state), then what the core stacks: r0-r3, r12, LR, PC, xPSR. */
static void prepare_b(void)
{
    uint32_t *sp = stack_b + STACK_WORDS - 8;
    for (int i = 0; i < 8; i++)
        sp[i] = 0;
    sp[6] = (uint32_t)task_b;       /* PC */
    sp[7] = 1u << 24;               /* xPSR: Thumb */
    sp -= 9;
    for (int i = 0; i < 8; i++)
        sp[i] = 0;
    sp[8] = 0xFFFFFFFDu;            /* EXC_RETURN: thread mode, PSP */
    saved_sp[1] = sp;
}

uint32_t *const stack_a_top = stack_a + STACK_WORDS;

__attribute__((noreturn)) void task_a(void)
{
    SCB_SHPR3 |= 0xFFu << 16;       /* PendSV at the lowest priority */
    SYST_RVR = RELOAD;
    SYST_CVR = 0;
    SYST_CSR = 7u;                  /* processor clock, interrupt, enabled */
    uint32_t sum = 0;
    for (uint32_t i = 0; i < CALLS_A; i++)
        sum += mix(i);
    wait_for_b();
    SYST_CSR = 0;
    printf("a=%08" PRIx32 " b=%08" PRIx32 " %s\n", sum, result_b, switches >= 2 ? "switched" : "not switched");
    exit(0);
}

/* Main's thread goes on as task A on its own process stack (CONTROL.SPSEL): a naked
 * function, so that no frame of main's is left on the other stack. */
__attribute__((naked, noreturn)) static void become_task_a(void)
{
    __asm__ volatile(
        "ldr r0, =stack_a_top\n\t"
        "ldr r0, [r0]\n\t"
        "msr psp, r0\n\t"
        "mrs r0, control\n\t"
        "orr r0, r0, #2\n\t"
        "msr control, r0\n\t"
        "isb\n\t"
        "b task_a\n\t"
        ".ltorg\n");
}

int main(void)
{
    prepare_b();
    become_task_a();
}
