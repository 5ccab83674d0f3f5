@ Loader stub, placed in the unused tail of the program's text segment and made the
@ ELF entry point. It maps the instrumentation region from the file itself
@ (/proc/self/exe) at its fixed offset from the image, calls anvil_init, restores
@ every register the loader handed over (r0 = rtld_fini for dynamic programs) and
@ continues at the relocated entry. Symbols defined at link time (--defsym):
@ ANVIL_REGION, ANVIL_LENGTH, ANVIL_PGOFF, ANVIL_HEADER, ANVIL_INIT.
    .syntax unified
    .thumb
    .text
    .global _anvil_stub
    .type _anvil_stub, %function
    .thumb_func
_anvil_stub:
    sub sp, sp, #4              @ slot for the continuation address
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
    ldr r2, =ANVIL_INIT
    add r2, r2, r6
    blx r2
    str r0, [sp, #56]
    pop {r0-r12, lr}
    ldr pc, [sp], #4
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
