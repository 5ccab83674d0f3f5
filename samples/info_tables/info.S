@ Tables next to code, and a string whose characters read as a code address
@ (tests/test_info_tables.py, decision 0088).
@
@ GHC lays each closure's info table (small numbers: the layout, the closure type) in
@ .text just before its code, and a closure's first word, its info pointer, names the code:
@ the runtime reads the table at the info pointer minus 4 and 8. Here f1 and f2 are such
@ code, named by the static closures in .data, and main (main.c) reads their tables as
@ GHC's runtime does. The words around t1 are mostly those small numbers: few read as A32
@ instructions. In .rodata, a string has the characters of t1's address plus one ("A",
@ then the address's second and third bytes, printable where the text lies, then NUL: the
@ program is linked at 0x202000), which read as a Thumb code address: a weak entry. Taken
@ as one, its jump was written over t1, and main read the jump's bytes as f1's closure type.
@ f2's closure holds a number that reads as an address in t2, which no string test can
@ tell from one: the straight-line Thumb code there meets a zero halfword (t2's 0x000f),
@ which no compiler emits.
    .section .note.GNU-stack,"",%progbits
    .syntax unified
    .arm
    .text
    .balign 256
    .skip 0x28
    .word 0x00000001               @ f0's table: layout, closure type (FUN)
    .word 0x00000008
    .type f0, %function
f0:
    mov r0, #7
    bx lr
    .size f0, . - f0
    .word 0x00460fb8               @ numbers, as in a literal pool
    .word 0x003d0544
t1: .word 0x00020005               @ f1's table, at 0x..40: its address + 1 ends in "A"
    .word 0x0000000e
    .type f1, %function
f1:
    mov r0, #42
    bx lr
    .size f1, . - f1
t2: .word 0x00000003               @ f2's table
    .word 0x0000000f
    .type f2, %function
f2:
    mov r0, #5
    bx lr
    .size f2, . - f2
    .word 0x00460fb8               @ numbers again: the code after (main) is further away
    .word 0x003d0544
    .word 0x00000000
    .word 0x00000000

    .data
    .balign 4
    .global closures
closures:                          @ static closures: an info pointer and a payload word
    .word f0, 0
    .word f1, 0
    .word f2, t2 + 1               @ a payload (an Int, say) that reads as an address in t2
    .word 0, 0

    .section .rodata
    .balign 4
    .global names
names:
    .ascii "Sequence"
    .word t1 + 1                   @ three characters and a NUL, as "-16" of "UTF-16"
    .asciz "UTF-16BE"
