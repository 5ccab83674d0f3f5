/* bbcount analysis: execution count of every basic block, top N first. */
#include "anvil_rt.h"

ANVIL_ARRAY(uint64_t, blocks);
ANVIL_ARRAY(uint32_t, order);

static void put_block(uint32_t b, int json)
{
    const char *proc = anvil_names + anvil_proc_name[anvil_block_proc[b]];
    uint32_t addr = ANVIL_CODE_ADDRESS(anvil_block_addr[b]);
    if (json) {
        anvil_puts("{\"address\": ");
        anvil_putu(addr);
        anvil_puts(", \"count\": ");
        anvil_putu(anvil_array_blocks[b]);
        anvil_puts(", \"instructions\": ");
        anvil_putu(anvil_block_insns[b]);
        anvil_puts(", \"procedure\": ");
        anvil_put_json_string(proc);
        anvil_puts("}");
    } else {
        anvil_puts("  ");
        anvil_puthex(addr);
        anvil_putu_width(anvil_array_blocks[b], 14);
        anvil_putu_width(anvil_block_insns[b], 7);
        anvil_puts("  ");
        anvil_puts(proc);
        anvil_putc('\n');
    }
}

void bbcount_report(const char *path, uint32_t json, uint32_t top)
{
    uint32_t executed = 0;
    uint64_t total = 0;
    for (uint32_t b = 0; b < anvil_nblocks; b++)
        if (anvil_array_blocks[b]) {
            anvil_array_order[executed++] = b;
            total += anvil_array_blocks[b];
        }
    /* Top N by partial selection: the first N slots of the order array. */
    if (top > executed)
        top = executed;
    for (uint32_t i = 0; i < top; i++) {
        uint32_t best = i;
        for (uint32_t j = i + 1; j < executed; j++)
            if (anvil_array_blocks[anvil_array_order[j]] > anvil_array_blocks[anvil_array_order[best]])
                best = j;
        uint32_t t = anvil_array_order[i];
        anvil_array_order[i] = anvil_array_order[best];
        anvil_array_order[best] = t;
    }
    if (anvil_out_open(path) < 0)
        return;
    if (json) {
        anvil_puts("{\"tool\": \"bbcount\", \"blocks_executed\": ");
        anvil_putu(executed);
        anvil_puts(", \"blocks\": ");
        anvil_putu(anvil_nblocks);
        anvil_puts(", \"block_entries\": ");
        anvil_putu(total);
        anvil_puts(", \"top\": [");
        for (uint32_t i = 0; i < top; i++) {
            if (i)
                anvil_puts(", ");
            put_block(anvil_array_order[i], 1);
        }
        anvil_puts("], \"counts\": [");
        for (uint32_t b = 0, first = 1; b < anvil_nblocks; b++) {
            if (!anvil_array_blocks[b])
                continue;
            if (!first)
                anvil_puts(", ");
            first = 0;
            put_block(b, 1);
        }
        anvil_puts("]}\n");
    } else {
        anvil_puts("bbcount: ");
        anvil_putu(executed);
        anvil_puts(" of ");
        anvil_putu(anvil_nblocks);
        anvil_puts(" blocks executed, ");
        anvil_putu(total);
        anvil_puts(" block entries\n\ntop ");
        anvil_putu(top);
        anvil_puts(" blocks:\n     address         count  insns  procedure\n");
        for (uint32_t i = 0; i < top; i++)
            put_block(anvil_array_order[i], 0);
        anvil_puts("\nall executed blocks, by address:\n     address         count  insns  procedure\n");
        for (uint32_t b = 0; b < anvil_nblocks; b++)
            if (anvil_array_blocks[b])
                put_block(b, 0);
    }
    anvil_out_close();
}
