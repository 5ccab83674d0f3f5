@ The pointer to helper, alone in a section flagged writable and executable ("awx").
    .syntax unified
    .section .wxdata,"awx",%progbits
    .global table
    .p2align 2
table:
    .word helper        @ a Thumb function: the linker sets bit 0
    .section .note.GNU-stack,"",%progbits
