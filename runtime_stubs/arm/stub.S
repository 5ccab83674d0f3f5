@ Loader stub, placed in the unused tail of the program's text segment and made the
@ ELF entry point. It maps the instrumentation region from the file itself
@ (/proc/self/exe) at its fixed offset from the image, calls anvil_init, restores
@ every register the loader handed over (r0 = rtld_fini for dynamic programs) and
@ continues at the relocated entry. Symbols defined at link time (--defsym):
@ ANVIL_REGION, ANVIL_LENGTH, ANVIL_PGOFF, ANVIL_HEADER, ANVIL_INIT.
@
@ The stack just below the initial SP is the program's: it may read it before
@ writing it (uninitialised locals), so the stub works FAR_BELOW bytes lower, zeroes
@ what it used there afterwards (never-touched stack reads as zero) and keeps the
@ registers in the region, not on the stack, for the final jump.
    .syntax unified
    .thumb
    .text
    .global _anvil_stub
    .type _anvil_stub, %function
    .thumb_func
    .equ FAR_BELOW, 16384        @ = STUB_FAR_BELOW in anvil_rt.c (it finds the initial SP from it)
    .equ SCRUB, 4096
_anvil_stub:
    sub sp, sp, #FAR_BELOW
    push {r0-r12, lr}
    adr r6, anchor
    ldr r5, =anchor
    subs r6, r6, r5             @ r6 = load bias
    adr r0, path
    movs r1, #0
    movs r2, #0
    movs r7, #5                 @ open
    svc #0
    cmp r0, #0
    blt fail
    mov r8, r0
    ldr r0, =ANVIL_REGION
    add r0, r0, r6
    mov r9, r0
    ldr r1, =ANVIL_LENGTH
    movs r2, #7                 @ read, write, exec: anvil_init seals the code
    movs r3, #2                 @ MAP_PRIVATE
    mov r4, r8
    ldr r5, =ANVIL_PGOFF
    movs r7, #192               @ mmap2
    svc #0
    cmp r0, r9
    bne fail
    mov r0, r8
    movs r7, #6                 @ close
    svc #0
    mov r0, r6
    ldr r1, =ANVIL_HEADER
    add r1, r1, r6
    mov r2, sp                  @ the saved registers
    ldr r3, =ANVIL_INIT
    add r3, r3, r6
    blx r3                      @ r0 = {r0-r12, lr, continuation} kept in the region
    add r1, sp, #56             @ top of what the stub used
    sub r2, r1, #SCRUB
    movs r3, #0
scrub:
    str r3, [r2], #4
    cmp r2, r1
    blo scrub
    add sp, sp, #FAR_BELOW
    add sp, sp, #56
    adr r1, resume
    bx r1
    .arm
    .align 2
resume:
    ldm r0, {r0-r12, lr, pc}    @ every register as handed over, then the program
    .thumb
fail:
    movs r0, #2
    adr r1, msg
    movs r2, #(msg_end - msg)
    movs r7, #4                 @ write
    svc #0
    movs r0, #127
    movs r7, #248               @ exit_group
    svc #0
    .align 2
anchor:
path:
    .asciz "/proc/self/exe"
    .align 2
msg:
    .ascii "anvil: cannot map the instrumentation region\n"
msg_end:
    .align 2
    .ltorg
    .section .note.GNU-stack,"",%progbits
