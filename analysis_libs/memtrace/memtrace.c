/* memtrace analysis: every data access as it happens: instruction address, effective
 * address, size, load or store. Records stream to the results file through the
 * runtime's buffered writer (opened at program start). */
#include "anvil_rt.h"

static int json_format;
static uint64_t records;

void memtrace_start(const char *path, uint32_t json)
{
    json_format = json;
    if (anvil_out_open(path) < 0)
        return;
    anvil_puts(json ? "{\"tool\": \"memtrace\", \"records\": [" : "# pc ea size kind\n");
}

void memtrace_access(anvil_word pc, anvil_word ea, uint32_t size, uint32_t is_store)
{
    if (json_format) {
        if (records)
            anvil_puts(", ");
        anvil_putc('[');
        anvil_putu(pc);
        anvil_puts(", ");
        anvil_putu(ea);
        anvil_puts(", ");
        anvil_putu(size);
        anvil_puts(is_store ? ", \"S\"]" : ", \"L\"]");
    } else {
        anvil_putaddr(pc);
        anvil_putc(' ');
        anvil_putaddr(ea);
        anvil_putc(' ');
        anvil_putu(size);
        anvil_puts(is_store ? " S\n" : " L\n");
    }
    records++;
}

void memtrace_end(void)
{
    if (json_format) {
        anvil_puts("], \"accesses\": ");
        anvil_putu(records);
        anvil_puts("}\n");
    }
    anvil_out_close();
}
