"""What is particular to each instruction set: one folder per ISA, every folder shaped alike.

``code.py`` is the buffer every ISA's code is written into (labels, late fixups, islands
of veneers for branches that cannot reach); it knows no instruction set. Each ISA's folder
(``arm/`` for A32 and T32) holds its decoding facts, encoders, the lowering of what a site
needs (calls of analysis routines with their saves and arguments, counters and sums,
repeat filters, records), the relocation of its instructions into the copies, and its
jump-table patterns. Decision 0105 says what moved here and what is still to come out of
the ISA's modules into ``emit/``.
"""
