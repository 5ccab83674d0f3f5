/* memtrace analysis: every data access as it happens: instruction address, effective
 * address, size, load or store. Records stream to the results file through the
 * runtime's buffered writer (opened at program start). */
#include "anvil_rt.h"

static int json_format;
static uint64_t records;
/* A record being written: its number (records + 1; 0: none) and where its text starts in
 * the output buffer. The program may end in the middle of one: a fatal signal, or a
 * handler that calls exit(), interrupting memtrace_access. The end then takes back the
 * half-written text (it never spans a flush: anvil_out_room), so the trace stays whole. */
static volatile uint64_t open_record;
static volatile uint32_t record_start;
/* The longest record's text: ", [" then three numbers of up to 20 digits and the kind. */
#define LONGEST_RECORD 80u

void memtrace_start(const char *path, uint32_t json)
{
    json_format = json;
    if (anvil_out_open(path) < 0)
        return;
    anvil_puts(json ? "{\"tool\": \"memtrace\", \"records\": [" : "# pc ea size kind\n");
}

void memtrace_access(anvil_word pc, anvil_word ea, uint32_t size, uint32_t is_store)
{
    anvil_out_room(LONGEST_RECORD);
    record_start = anvil_out_mark();
    __asm__ volatile("" ::: "memory");
    open_record = records + 1;
    __asm__ volatile("" ::: "memory");
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
    __asm__ volatile("" ::: "memory");
    records = open_record;
    __asm__ volatile("" ::: "memory");
    open_record = 0;
}

void memtrace_end(void)
{
    if (open_record && records != open_record)
        anvil_out_cut(record_start);  /* the record the end interrupted */
    if (json_format) {
        anvil_puts("], \"accesses\": ");
        anvil_putu(records);
        anvil_puts("}\n");
    }
    anvil_out_close();
}
