/* Force-included in every unit of the analysis library: all symbols, declared or
 * defined, are hidden, so every address is PC-relative and no GOT is needed. The
 * region is mapped at (load bias + fixed offset); a GOT would hold link-time
 * addresses that are wrong in position-independent executables. */
#pragma GCC visibility push(hidden)
