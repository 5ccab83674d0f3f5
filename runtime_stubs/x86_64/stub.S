# Loader stub of an x86-64 program, made the ELF entry point. It maps the instrumentation
# region from the file itself (/proc/self/exe) at its fixed offset from the image (below
# it: the heap the kernel starts after the image stays where it was), calls
# anvil_start(bias, initial RSP, &saved rdx) there (runtime_stubs/x86_64/anvil_rt.c, which
# may change the rdx the program starts with), restores every register and the flags as
# the kernel or the dynamic linker handed them over (rdx: the dynamic linker's fini
# function) and goes on at the program's entry, whose patch jumps to its copy.
#
# It is in pieces, each a section of its own (.anvil_stub1 ...) ending in a jump to the
# next (every reference between pieces is RIP-relative, so each piece may be linked
# anywhere within 2 GiB of the others): the rewriter puts them after the text segment
# where there is room for all, else in dead runs of the copied procedures (decision 0109).
#
# Symbols defined at link time (--defsym): ANVIL_REGION (the region's link address),
# ANVIL_LENGTH (its size), ANVIL_OFFSET (its page-aligned offset in the file), ANVIL_ENTRY
# (the program's entry), ANVIL_INIT (anvil_start's link address, 0: a region of copies
# alone), ANVIL_PATCHES (the link address of the table of jumps anvil_start writes over
# the original code, 0: they are in the file already); with ANVIL_PREINIT also
# ANVIL_INIT_SLOT and ANVIL_GO_ON (the link addresses of the slot and of anvil_go_on).
#
# Assembled with ANVIL_PREINIT defined, the stub also has _anvil_preinit, which the dynamic
# linker calls from DT_PREINIT_ARRAY (argc, argv, envp) before any library's initialiser
# (rewriter/emit/preinit.py, decision 0176): it maps the region there and returns (or goes
# on to the program's own first preinit function); the entry then only finishes
# (anvil_start's stage 2). Where the dynamic linker never made that call (the stub's address
# still stands in the slot ANVIL_INIT_SLOT), the entry maps the region itself (stage 0).
# Either way the stub ends by jumping where anvil_start says (anvil_go_on, at ANVIL_GO_ON):
# the program's entry, back into the dynamic linker through `ret`, or that preinit function.
#
# The stack just below the initial RSP is the program's: it may read it before writing it
# (never-touched stack reads as zero), so the stub works FAR_BELOW bytes lower and zeroes
# the slots it used there before it leaves.
    .equ FAR_BELOW, 16384
    .equ SLOTS, 12                      # the registers pushed below, and the flags
    .equ O_RDONLY, 0
    .equ PROT_ALL, 7                    # the copies, and the counters and data they write
    .equ MAP_PRIVATE_FIXED_NOREPLACE, 0x100002
    .equ SYS_WRITE, 1
    .equ SYS_OPEN, 2
    .equ SYS_CLOSE, 3
    .equ SYS_MMAP, 9
    .equ SYS_EXIT_GROUP, 231
    .equ STARTED_AT_ENTRY, 0            # anvil_start's stages (anvil_rt.c)
    .equ STARTED_AT_PREINIT, 1
    .equ ENTRY_AFTER_PREINIT, 2

# The end of piece n-1: a jump to piece n, which starts a section of its own.
.macro piece n
    jmp .Lpiece\n
    .section .anvil_stub\n, "ax", @progbits
.Lpiece\n:
.endm

# Below the work area: every register but rsp (rbx holds the stage), and the flags.
.macro save
    lea -FAR_BELOW(%rsp), %rsp
    push %rbx
    push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    pushfq
.endm

    .section .anvil_stub1, "ax", @progbits
    .globl _anvil_stub
    .type _anvil_stub, @function
_anvil_stub:
    save
    mov $STARTED_AT_ENTRY, %ebx
#ifdef ANVIL_PREINIT
    jmp .Lpiece2

    .globl _anvil_preinit
    .type _anvil_preinit, @function
_anvil_preinit:                         # called by the dynamic linker: argc, argv, envp
    save
    mov $STARTED_AT_PREINIT, %ebx
#endif
    piece 2
    lea _anvil_stub(%rip), %r12
    movabs $_anvil_stub, %rax
    sub %rax, %r12                      # the load bias
#ifdef ANVIL_PREINIT
    test %ebx, %ebx
    jnz map                             # called from the preinit array
    piece 3
    mov ANVIL_INIT_SLOT(%rip), %rax     # at the entry: given back if that call was made
    lea _anvil_preinit(%rip), %rcx
    cmp %rax, %rcx
    je map
    mov $ENTRY_AFTER_PREINIT, %ebx
    jmp mapped
map:
#endif
    piece 4
    lea path(%rip), %rdi
    mov $O_RDONLY, %esi
    xor %edx, %edx
    mov $SYS_OPEN, %eax
    syscall
    test %rax, %rax
    js fail
    piece 5
    mov %rax, %r8                       # the file
    movabs $ANVIL_REGION, %rdi
    add %r12, %rdi                      # where the region goes (kept: syscall leaves rdi)
    movabs $ANVIL_LENGTH, %rsi
    piece 6
    mov $PROT_ALL, %edx
    mov $MAP_PRIVATE_FIXED_NOREPLACE, %r10d
    movabs $ANVIL_OFFSET, %r9
    mov $SYS_MMAP, %eax
    syscall
    piece 7
    cmp %rax, %rdi                      # another mapping there, or a kernel without NOREPLACE
    jne fail
    mov %r8, %rdi
    mov $SYS_CLOSE, %eax
    syscall
mapped:
    piece 8
    mov %r12, %rdi                      # the load bias
    lea FAR_BELOW+8*SLOTS(%rsp), %rsi   # the initial stack (at the entry)
    lea 8*8(%rsp), %rdx                 # the saved rdx
    mov %ebx, %r8d                      # the stage
    movabs $ANVIL_INIT, %rax
    piece 9
    test %rax, %rax
    jz started
    add %r12, %rax
    movabs $ANVIL_PATCHES, %rcx         # the jumps to write over the original code, or 0
    piece 10
    push %rbp
    mov %rsp, %rbp
    and $-16, %rsp
    call *%rax
    mov %rbp, %rsp
    pop %rbp
    piece 11
started:
    popfq
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    pop %rbx
    piece 12
    .irp slot, 1, 2, 3, 4
    movq $0, -8*\slot(%rsp)
    .endr
    piece 13
    .irp slot, 5, 6, 7, 8
    movq $0, -8*\slot(%rsp)
    .endr
    piece 14
    .irp slot, 9, 10, 11, 12
    movq $0, -8*\slot(%rsp)
    .endr
    lea FAR_BELOW(%rsp), %rsp
#ifdef ANVIL_PREINIT
    jmp *ANVIL_GO_ON(%rip)              # the entry, the dynamic linker (go_back) or a preinit function

    .section .anvil_stub15, "ax", @progbits
    .globl _anvil_go_back
    .type _anvil_go_back, @function
_anvil_go_back:
    ret
#else
    jmp ANVIL_ENTRY
#endif

    .section .anvil_stub16, "ax", @progbits
fail:
    mov $2, %edi
    lea message(%rip), %rsi
    mov $(message_end - message), %edx
    mov $SYS_WRITE, %eax
    syscall
    mov $127, %edi
    mov $SYS_EXIT_GROUP, %eax
    syscall

    .section .anvil_stub17, "a", @progbits
path:
    .asciz "/proc/self/exe"

    .section .anvil_stub18, "a", @progbits
message:
    .ascii "anvil: cannot map the instrumentation region\n"
message_end:
