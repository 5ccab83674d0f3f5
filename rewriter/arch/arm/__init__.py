"""32-bit ARM, A32 and T32 (Thumb-2), for Linux programs and Cortex-M firmware.

- decoding facts: ``decode.py`` (capstone into IR instructions), ``operands.py`` (facts
  read from capstone's text), ``jump_tables.py`` (the compilers' switch patterns);
- encoders: ``encode.py`` (the instructions the rewriter writes itself), ``isa.py`` (one
  interface over A32 and T32 with the registers hooks borrow);
- hook lowering: ``hooks.py`` (a site's call with its arguments, filter and record),
  ``call_stubs.py`` (save, switch stacks, call, restore), ``shared_calls.py`` (compact
  firmware sites), ``counters.py`` (inline counters and NEON sums), ``repeat_filter.py``,
  ``appends.py`` (record append routines), ``exclusives.py`` (exclusive pairs as
  compare-and-swap);
- relocation: ``relocate.py`` (each procedure copied with its hooks inline, PC-relative
  reads and branches fixed up).
"""
