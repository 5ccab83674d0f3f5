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
# the original code, 0: they are in the file already).
#
# The stack just below the initial RSP is the program's: it may read it before writing it
# (never-touched stack reads as zero), so the stub works FAR_BELOW bytes lower and zeroes
# the slots it used there before it leaves.
    .equ FAR_BELOW, 16384
    .equ SLOTS, 11                      # the registers pushed below, and the flags
    .equ O_RDONLY, 0
    .equ PROT_ALL, 7                    # the copies, and the counters and data they write
    .equ MAP_PRIVATE_FIXED_NOREPLACE, 0x100002
    .equ SYS_WRITE, 1
    .equ SYS_OPEN, 2
    .equ SYS_CLOSE, 3
    .equ SYS_MMAP, 9
    .equ SYS_EXIT_GROUP, 231

# The end of piece n-1: a jump to piece n, which starts a section of its own.
.macro piece n
    jmp .Lpiece\n
    .section .anvil_stub\n, "ax", @progbits
.Lpiece\n:
.endm

    .section .anvil_stub1, "ax", @progbits
    .globl _anvil_stub
    .type _anvil_stub, @function
_anvil_stub:
    lea -FAR_BELOW(%rsp), %rsp
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
    piece 2
    lea _anvil_stub(%rip), %r12
    movabs $_anvil_stub, %rax
    sub %rax, %r12                      # the load bias
    lea path(%rip), %rdi
    mov $O_RDONLY, %esi
    xor %edx, %edx
    piece 3
    mov $SYS_OPEN, %eax
    syscall
    test %rax, %rax
    js fail
    mov %rax, %r8                       # the file
    movabs $ANVIL_REGION, %rdi
    add %r12, %rdi                      # where the region goes (kept: syscall leaves rdi)
    piece 4
    movabs $ANVIL_LENGTH, %rsi
    mov $PROT_ALL, %edx
    mov $MAP_PRIVATE_FIXED_NOREPLACE, %r10d
    movabs $ANVIL_OFFSET, %r9
    piece 5
    mov $SYS_MMAP, %eax
    syscall
    cmp %rax, %rdi                      # another mapping there, or a kernel without NOREPLACE
    jne fail
    mov %r8, %rdi
    mov $SYS_CLOSE, %eax
    syscall
    piece 6
    mov %r12, %rdi                      # the load bias
    lea FAR_BELOW+8*SLOTS(%rsp), %rsi   # the initial stack
    lea 8*8(%rsp), %rdx                 # the saved rdx
    movabs $ANVIL_INIT, %rax
    test %rax, %rax
    jz started
    piece 7
    add %r12, %rax
    movabs $ANVIL_PATCHES, %rcx         # the jumps to write over the original code, or 0
    push %rbp
    mov %rsp, %rbp
    and $-16, %rsp
    call *%rax
    mov %rbp, %rsp
    pop %rbp
    piece 8
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
    piece 9
    .irp slot, 1, 2, 3, 4
    movq $0, -8*\slot(%rsp)
    .endr
    piece 10
    .irp slot, 5, 6, 7, 8
    movq $0, -8*\slot(%rsp)
    .endr
    piece 11
    .irp slot, 9, 10, 11
    movq $0, -8*\slot(%rsp)
    .endr
    lea FAR_BELOW(%rsp), %rsp
    jmp ANVIL_ENTRY

    .section .anvil_stub12, "ax", @progbits
fail:
    mov $2, %edi
    lea message(%rip), %rsi
    mov $(message_end - message), %edx
    mov $SYS_WRITE, %eax
    syscall
    mov $127, %edi
    mov $SYS_EXIT_GROUP, %eax
    syscall

    .section .anvil_stub13, "a", @progbits
path:
    .asciz "/proc/self/exe"

    .section .anvil_stub14, "a", @progbits
message:
    .ascii "anvil: cannot map the instrumentation region\n"
message_end:
