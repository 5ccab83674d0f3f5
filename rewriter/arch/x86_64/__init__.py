"""x86-64 (AMD64), for Linux ELF programs: decoding facts (``decode.py``), the compilers'
switch patterns (``jump_tables.py``) and the lifting of a program into procedures, blocks
and instructions (``lift.py``). Programs are read (``anvil inspect``); the lowering of hooks
and the relocation of instructions are still to come (decision 0105)."""
