/* inscount analysis: the total and the per-procedure counts from anvil_array_procs. The
   program counts blocks (inline counters, derived ones) and procedure sums in registers
   (decision 0014); `blocks` is declared read only as per-procedure sums of count x
   instructions, so the emitter's code folds it into `procs` at program end (decision 0025). */
#include "anvil_rt.h"

ANVIL_ARRAY(uint64_t, procs);

void inscount_report(const char *path, uint32_t json)
{
    uint64_t total = 0;
    for (uint32_t p = 0; p < anvil_nprocs; p++)
        total += anvil_array_procs[p];
    if (anvil_out_open(path) < 0)
        return;
    if (json) {
        anvil_puts("{\"tool\": \"inscount\", \"total\": ");
        anvil_putu(total);
        anvil_puts(", \"procedures\": {");
    } else {
        anvil_puts("inscount: ");
        anvil_putu(total);
        anvil_puts(" instructions executed\n\nper procedure (executed ones, most first):\n");
        anvil_puts("  instructions  share%  procedure\n");
    }
    /* Most first, equal counts in procedure order. Each pass over the procedures keeps the
     * next BATCH of them (a sorted list on the stack) after the last one written: a pass
     * per BATCH executed procedures, where picking one at a time cost a pass each (40 % of
     * an instrumented cc1plus run went there), and no memory but the list. */
    enum { BATCH = 32 };
    uint32_t next[BATCH];
    uint64_t after_count = ~(uint64_t)0;  /* the last one written: (count, index) */
    uint32_t after_index = 0;
    int first = 1, started = 0;
    for (;;) {
        uint32_t held = 0;
        for (uint32_t p = 0; p < anvil_nprocs; p++) {
            uint64_t n = anvil_array_procs[p];
            /* Only those after the last written: fewer, or as many and later. */
            if (!n || n > after_count || (n == after_count && (!started || p <= after_index)))
                continue;
            if (held == BATCH && n <= anvil_array_procs[next[BATCH - 1]])
                continue;  /* no better than the list's last (equal: an earlier one is there) */
            uint32_t at = held < BATCH ? held++ : BATCH - 1;
            while (at > 0 && anvil_array_procs[next[at - 1]] < n) {
                next[at] = next[at - 1];
                at--;
            }
            next[at] = p;
        }
        if (!held)
            break;
        for (uint32_t k = 0; k < held; k++) {
            uint32_t best = next[k];
            uint64_t n = anvil_array_procs[best];
            const char *name = anvil_names + anvil_proc_name[best];
            if (json) {
                if (!first)
                    anvil_puts(", ");
                anvil_put_json_string(name);
                anvil_puts(": ");
                anvil_putu(n);
            } else {
                anvil_putu_width(n, 14);
                anvil_puts("  ");
                anvil_put_ratio(n * 100, total, 2);
                anvil_puts("  ");
                anvil_puts(name);
                anvil_putc('\n');
            }
            first = 0;
        }
        after_count = anvil_array_procs[next[held - 1]];
        after_index = next[held - 1];
        started = 1;
    }
    anvil_puts(json ? "}}\n" : "");
    anvil_out_close();
}
