/* Host runtime of a ReHost analysis library: the tool's C (the same source InHost links
 * into the program) built as a shared library with this file and anvil_format.c.
 * The server loads one copy per session, so every static variable of the tool is
 * per session. It fills the site facts and arrays below through ctypes, runs the
 * program start routines, feeds record batches to anvil_dispatch, runs the end
 * routines and collects what the tool wrote (anvil_outputs) to send back. */
#include <stdlib.h>
#include <string.h>

#include "anvil_rt.h"

uint32_t anvil_nblocks, anvil_nprocs, anvil_bias;
const uint32_t *anvil_block_addr;
const uint16_t *anvil_block_insns;
const uint16_t *anvil_block_proc;
const uint32_t *anvil_proc_addr;
const uint32_t *anvil_proc_name;
const char *anvil_names;

/* ------------------------------------------------------------ results in memory */

#define MAX_OUTPUTS 64

struct anvil_output {
    char *path;
    char *data;
    size_t len, cap;
};

struct anvil_output anvil_outputs[MAX_OUTPUTS];
uint32_t anvil_noutputs;
static struct anvil_output *current;

int anvil_sink_open(const char *path)
{
    if (anvil_noutputs == MAX_OUTPUTS)
        return -1;
    current = &anvil_outputs[anvil_noutputs++];
    current->path = strdup(path);
    current->data = NULL;
    current->len = current->cap = 0;
    return (int)anvil_noutputs - 1;
}

void anvil_sink_write(const char *buf, uint32_t len)
{
    if (!current || !len)
        return;
    if (current->len + len > current->cap) {
        size_t cap = current->cap ? current->cap : 4096;
        while (cap < current->len + len)
            cap *= 2;
        char *grown = realloc(current->data, cap);
        if (!grown)
            return;
        current->data = grown;
        current->cap = cap;
    }
    memcpy(current->data + current->len, buf, len);
    current->len += len;
}

void anvil_sink_close(void) { current = NULL; }

void anvil_free_outputs(void)
{
    for (uint32_t i = 0; i < anvil_noutputs; i++) {
        free(anvil_outputs[i].path);
        free(anvil_outputs[i].data);
    }
    anvil_noutputs = 0;
}

/* ------------------------------------------------------------ dispatch */

/* Every routine is called with four 64-bit words: a routine declared with fewer
 * (32-bit or pointer) parameters reads the registers it knows and ignores the rest,
 * as the x86-64 and AArch64 calling conventions pass the first arguments in registers. */
typedef void (*anvil_routine)(uint64_t, uint64_t, uint64_t, uint64_t);

struct anvil_site {
    anvil_routine fn;
    uint64_t args[4];   /* static arguments; dynamic slots are overwritten per record */
    uint32_t ndynamic;  /* words after the site id in the record */
    uint8_t slot[4];    /* argument position of each dynamic word */
};

enum { DISPATCH_MORE = 0, DISPATCH_END = 1, DISPATCH_BAD_SITE = -1 };

#define END_MARK 0xFFFFFFFFu

/* Run the complete records in words[0..nwords). *consumed: words used. Stops at the
 * end marker (DISPATCH_END, marker not consumed) or at an unknown site id
 * (DISPATCH_BAD_SITE, the id at words[*consumed]). */
int anvil_dispatch(const struct anvil_site *sites, uint32_t nsites, const uint32_t *words, size_t nwords,
                   size_t *consumed, uint64_t *records)
{
    size_t i = 0;
    uint64_t n = 0;
    int status = DISPATCH_MORE;
    while (i < nwords) {
        uint32_t id = words[i];
        if (id >= nsites) {
            status = id == END_MARK ? DISPATCH_END : DISPATCH_BAD_SITE;
            break;
        }
        const struct anvil_site *s = &sites[id];
        uint32_t nd = s->ndynamic;
        if (i + 1 + nd > nwords)
            break;
        if (nd == 1) {
            /* The common case (one dynamic word). The word goes straight into its
             * argument register (conditional selects, no copy through the stack), and
             * the next record's position is a constant: were it i + 1 + nd, finding the
             * next record would wait for this record's site id and site loads, a chain
             * of two dependent loads per record that bounds the loop at ~6 ns/record. */
            uint64_t w = words[i + 1];
            uint32_t k = s->slot[0];
            s->fn(k == 0 ? w : s->args[0], k == 1 ? w : s->args[1], k == 2 ? w : s->args[2],
                  k == 3 ? w : s->args[3]);
            i += 2;
        } else if (nd == 2) {
            /* Two dynamic words (cachesim: the address and the line that left the
             * program's filter, decision 0015), the same way. */
            uint64_t w0 = words[i + 1], w1 = words[i + 2];
            uint32_t k0 = s->slot[0], k1 = s->slot[1];
            s->fn(k0 == 0 ? w0 : k1 == 0 ? w1 : s->args[0], k0 == 1 ? w0 : k1 == 1 ? w1 : s->args[1],
                  k0 == 2 ? w0 : k1 == 2 ? w1 : s->args[2], k0 == 3 ? w0 : k1 == 3 ? w1 : s->args[3]);
            i += 3;
        } else {
            uint64_t a[4] = {s->args[0], s->args[1], s->args[2], s->args[3]};
            for (uint32_t k = 0; k < nd; k++)
                a[s->slot[k]] = words[i + 1 + k];
            s->fn(a[0], a[1], a[2], a[3]);
            i += 1 + nd;
        }
        n++;
    }
    *consumed = i;
    *records += n;
    return status;
}
