/* The CMSIS and FreeRTOS handler idiom: find the stack the exception frame is on,
 *     tst lr, #4; ite eq; mrseq r0, msp; mrsne r0, psp; b handler_c
 * (MRS of MSP/PSP is ARMv7-M's alone: decoded apart from its IT block, both MRS ran
 * unconditionally in the copy). Here the SVC handler adds 100 to the caller's stacked r0,
 * from the main stack and, after switching the thread to the process stack, from that one. */
#include <stdint.h>
#include <stdio.h>

static uint32_t process_stack[256] __attribute__((aligned(8)));

void svc_c(uint32_t *frame) { frame[0] += 100; }

__attribute__((naked)) void SVC_Handler(void)
{
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b svc_c\n");
}

static uint32_t call_svc(uint32_t value)
{
    register uint32_t r0 __asm("r0") = value;
    __asm volatile("svc #0" : "+r"(r0) : : "memory");
    return r0;
}

int main(void)
{
    uint32_t sum = 0;
    for (uint32_t i = 0; i < 50; i++)
        sum += call_svc(i);
    printf("main stack: %lu\n", (unsigned long)sum);
    /* The thread on the process stack (CONTROL.SPSEL = 1): the frame is on PSP. */
    __asm volatile("msr psp, %0\n mov r0, #2\n msr control, r0\n isb\n"
                   : : "r"(process_stack + 256) : "r0", "memory");
    sum = 0;
    for (uint32_t i = 0; i < 50; i++)
        sum += call_svc(i);
    __asm volatile("mov r0, #0\n msr control, r0\n isb\n" : : : "r0", "memory");  /* back to MSP */
    printf("process stack: %lu\n", (unsigned long)sum);
    return 0;
}
