/* walk's analysis routines (walk.py says what the tool does). */
#include "anvil_rt.h"

ANVIL_ARRAY(uint64_t, entries);

static uint64_t total, weighted, blocks_run;

void walk_entry(uint32_t index)
{
    anvil_array_entries[index]++;
}

void walk_block(uint32_t address, uint32_t insns)
{
    total += insns;
    weighted += (uint32_t)(address - anvil_bias);
    blocks_run++;
}

void walk_report(const char *path)
{
    if (anvil_out_open(path) < 0)
        return;
    anvil_puts("{\"tool\": \"walk\", \"total\": ");
    anvil_putu(total);
    anvil_puts(", \"blocks_run\": ");
    anvil_putu(blocks_run);
    anvil_puts(", \"weighted\": ");
    anvil_putu(weighted);
    anvil_puts(", \"entries\": [");
    int first = 1;
    for (uint32_t p = 0; p < anvil_nprocs; p++) {
        if (!anvil_array_entries[p])
            continue;
        anvil_puts(first ? "[" : ", [");
        anvil_putu(anvil_proc_addr[p]);
        anvil_puts(", ");
        anvil_putu(anvil_array_entries[p]);
        anvil_putc(']');
        first = 0;
    }
    anvil_puts("]}\n");
    anvil_out_close();
}
