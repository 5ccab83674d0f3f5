/*
 * startup.S - hand-written start-up code in assembly, as many projects carry one (a
 * trimmed copy of a vendor's startup_<part>.s): the vector table and Reset_Handler for
 * the boards' own linker scripts (mps2-an385.ld, mps2-an386.ld), replacing startup.c.
 *
 * As such files often are: labels marked .thumb_func but without .type or .size (no
 * function sizes in the symbol table), literal pools after the code (.ltorg), the
 * handlers weak aliases of one Default_Handler made with .thumb_set, and newlib's
 * _init/_fini as bare labels sharing one "bx lr".
 *
 * Reset_Handler switches the FPU on where there is one, copies .data from flash
 * (_sidata) to _sdata.._edata, zeroes _sbss.._ebss, opens newlib's semihosting handles,
 * runs the constructors (newlib's __libc_init_array), calls main and passes its status
 * to exit.
 */
    .syntax unified
    .thumb

    .section .vectors, "a"
    .align 2
    .globl vector_table
vector_table:
    .word __StackTop
    .word Reset_Handler
    .word NMI_Handler
    .word HardFault_Handler
    .word MemManage_Handler
    .word BusFault_Handler
    .word UsageFault_Handler
    .word 0, 0, 0, 0
    .word SVC_Handler
    .word DebugMon_Handler
    .word 0
    .word PendSV_Handler
    .word SysTick_Handler
    .rept 32
    .word Default_Handler
    .endr

    .text
    .align 2
    .thumb_func
    .globl Reset_Handler
Reset_Handler:
#if defined(__ARM_FP)
    ldr r0, =0xE000ED88         /* CPACR: full access to CP10 and CP11 */
    ldr r1, [r0]
    orr r1, r1, #(0xF << 20)
    str r1, [r0]
    dsb
    isb
#endif
    ldr r1, =_sidata
    ldr r2, =_sdata
    ldr r3, =_edata
copy_data:
    cmp r2, r3
    ittt lt
    ldrlt r0, [r1], #4
    strlt r0, [r2], #4
    blt copy_data
    ldr r2, =_sbss
    ldr r3, =_ebss
    movs r0, #0
zero_bss:
    cmp r2, r3
    itt lt
    strlt r0, [r2], #4
    blt zero_bss
    bl initialise_monitor_handles
    bl __libc_init_array
    bl main
    bl exit
    .ltorg

    .thumb_func
    .globl _init
    .globl _fini
_init:
_fini:
    bx lr

    .thumb_func
    .weak Default_Handler
Default_Handler:
    b Default_Handler

    .macro weak_handler name
    .weak \name
    .thumb_set \name, Default_Handler
    .endm
    weak_handler NMI_Handler
    weak_handler HardFault_Handler
    weak_handler MemManage_Handler
    weak_handler BusFault_Handler
    weak_handler UsageFault_Handler
    weak_handler SVC_Handler
    weak_handler DebugMon_Handler
    weak_handler PendSV_Handler
    weak_handler SysTick_Handler
