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
    /* Repeatedly pick the largest remaining procedure: O(P * executed), fine at exit. */
    int first = 1;
    for (;;) {
        uint32_t best = 0xFFFFFFFFu;
        for (uint32_t p = 0; p < anvil_nprocs; p++)
            if (anvil_array_procs[p] && (best == 0xFFFFFFFFu || anvil_array_procs[p] > anvil_array_procs[best]))
                best = p;
        if (best == 0xFFFFFFFFu)
            break;
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
        anvil_array_procs[best] = 0;
    }
    anvil_puts(json ? "}}\n" : "");
    anvil_out_close();
}
