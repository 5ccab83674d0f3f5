@ Loader stub, placed in the unused tail of the program's text segment and made the
@ ELF entry point. It maps the instrumentation region from the file itself
@ (/proc/self/exe) at its fixed offset from the image, calls anvil_init, restores
@ every register the loader handed over (r0 = rtld_fini for dynamic programs) and
@ continues at the relocated entry.
@
@ A dynamic program whose libraries may call into it while they initialise is started
@ earlier (decision 0071): the dynamic linker calls _anvil_preinit through
@ DT_PREINIT_ARRAY before any library's initialiser; it maps the region, has anvil_init
@ do all but what must wait for the program's own start, and returns. The ELF entry
@ then only finishes (ANVIL_ENTRY_STAGE 2, see anvil_rt.c's start_stage), unless the
@ dynamic linker never made that call (below).
@
@ Symbols defined at link time (--defsym): ANVIL_REGION, ANVIL_LENGTH, ANVIL_PGOFF,
@ ANVIL_HEADER, ANVIL_INIT, ANVIL_ENTRY_STAGE, ANVIL_INIT_SLOT (the first .init_array
@ word's link address, which the preinit function's address stands in).
@
@ Assembled with ANVIL_PREINIT defined when the program is started so (the stub is then
@ larger: a program with little room gets the stub without it).
@
@ The stack just below the initial SP is the program's: it may read it before
@ writing it (uninitialised locals), so the stub works FAR_BELOW bytes lower, zeroes
@ what it used there afterwards (never-touched stack reads as zero) and keeps the
@ registers in the region, not on the stack, for the final jump. Called as the preinit
@ function, it does the same below the dynamic linker's frames, and its final jump
@ returns there with every register as it was.
@ Assembled with ANVIL_PIECES defined, the stub is in pieces, each a section of its own
@ (.anvil_stub1, ...) ending in a jump to the next (decision 0097): where no free run of
@ the text holds it whole, each piece goes where one holds it (the rewriter links every
@ piece at its own address). So nothing names another piece's code PC-relatively but B.W,
@ and other pieces' data are link-time words plus the load bias (r6). Without it, PIECE
@ is nothing and the stub is one section.
    .syntax unified
    .thumb
    .equ FAR_BELOW, 16384        @ = STUB_FAR_BELOW in anvil_rt.c (it finds the initial SP from it)
    .equ SCRUB, 4096

#ifdef ANVIL_PIECES
@ The end of a piece that runs on into the next, and the start of that one (section N).
#define PIECE(N) b.w piece##N; .align 2; .ltorg; .section .anvil_stub##N, "ax", %progbits; .align 2; \
    .thumb_func; piece##N:
@ The start of a piece of data (nothing runs on into it).
#define DATA(N) .align 2; .ltorg; .section .anvil_stub##N, "a", %progbits; .align 2
@ Branch to TARGET, perhaps in another piece, if condition C holds (NOT_C: its inverse).
#define BRANCH_IF(C, NOT_C, TARGET) b##NOT_C 1f; b.w TARGET; 1:
@ R = LABEL's address, perhaps in another piece.
#define ADDRESS(R, LABEL) ldr R, =LABEL; add R, R, r6
#else
#define PIECE(N)
#define DATA(N) .align 2
#define BRANCH_IF(C, NOT_C, TARGET) b##C TARGET
#define ADDRESS(R, LABEL) adr R, LABEL
#endif

    .section .anvil_stub1, "ax", %progbits
    .align 2
anchor:                         @ (_anvil_stub's address: a plain label for ADR and LDR alike)
    .global _anvil_stub
    .type _anvil_stub, %function
    .thumb_func
_anvil_stub:
    sub sp, sp, #FAR_BELOW
    push {r0-r12, lr}
#ifdef ANVIL_PREINIT
    movw r10, #:lower16:ANVIL_ENTRY_STAGE  @ 2: the region was mapped from the preinit array
    b start

    .global _anvil_preinit
    .type _anvil_preinit, %function
    .thumb_func
_anvil_preinit:                 @ called by the dynamic linker: argc, argv, envp
    sub sp, sp, #FAR_BELOW
    push {r0-r12, lr}
    mov r10, #1                 @ STARTED_AT_PREINIT
start:
#endif
    adr r6, anchor
    ldr r5, =anchor
    subs r6, r6, r5             @ r6 = load bias
    PIECE(2)
#ifdef ANVIL_PREINIT
    cmp r10, #2
    bne map
    @ At the entry: did the dynamic linker call _anvil_preinit? That call gives the first
    @ .init_array word back; a C library whose dynamic linker ignores DT_PREINIT_ARRAY
    @ (musl, which runs every initialiser from the program's start) leaves the stub's
    @ address there, and the region is mapped now, as without the preinit function.
    ldr r0, =ANVIL_INIT_SLOT
    ldr r0, [r0, r6]
    ldr r1, =_anvil_preinit
    add r1, r1, r6
    cmp r0, r1
    BRANCH_IF(ne, eq, mapped)
    movs r10, #0                @ STARTED_AT_ENTRY (anvil_init gives the word back)
map:
#endif
    PIECE(3)
    ADDRESS(r0, path)
    movs r1, #0
    movs r2, #0
    movs r7, #5                 @ open
    svc #0
    cmp r0, #0
    BRANCH_IF(lt, ge, fail)
    mov r8, r0
    PIECE(4)
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
    PIECE(5)
    cmp r0, r9
    BRANCH_IF(ne, eq, fail)
    mov r0, r8
    movs r7, #6                 @ close
    svc #0
    PIECE(6)
    .thumb_func
mapped:
    mov r0, r6
    ldr r1, =ANVIL_HEADER
    add r1, r1, r6
    mov r2, sp                  @ the saved registers
#ifdef ANVIL_PREINIT
    mov r3, r10                 @ the stage (anvil_rt.c's start_stage)
#else
    movs r3, #0                 @ STARTED_AT_ENTRY
#endif
    ldr r4, =ANVIL_INIT
    add r4, r4, r6
    blx r4                      @ r0 = {r0-r12, lr, where to go on} kept in the region:
    PIECE(7)
    add r1, sp, #56             @ the program's entry, or back into the dynamic linker
    sub r2, r1, #SCRUB          @ zero what the stub used below SP
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
    .align 2
    .ltorg
#ifdef ANVIL_PIECES
    .section .anvil_stub8, "ax", %progbits
    .align 2
#endif
    .thumb_func
fail:
    movs r0, #2
    ADDRESS(r1, msg)
    movs r2, #(msg_end - msg)
    movs r7, #4                 @ write
    svc #0
    movs r0, #127
    movs r7, #248               @ exit_group
    svc #0
    DATA(9)
path:
    .asciz "/proc/self/exe"
    DATA(10)
msg:
    .ascii "anvil: cannot map the instrumented code\n"
msg_end:
    .align 2
    .ltorg
    .section .note.GNU-stack,"",%progbits
