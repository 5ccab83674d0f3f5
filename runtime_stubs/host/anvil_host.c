/* Host runtime of a ReHost analysis library: the tool's C (the same source InHost links
 * into the program) built as a shared library with this file, anvil_format.c and anvil_string.c.
 * The server loads one copy per session, so every static variable of the tool is
 * per session. It fills the site facts and arrays below through ctypes, runs the
 * program start routines, feeds record batches to anvil_dispatch, runs the end
 * routines and collects what the tool wrote (anvil_outputs) to send back. */
#include <stdlib.h>
#include <string.h>

#include "anvil_rt.h"

uint32_t anvil_nblocks, anvil_nprocs;
anvil_word anvil_bias;
const uint32_t *anvil_block_addr;
const uint16_t *anvil_block_insns;
const uint32_t *anvil_block_proc;
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

/* What a session can send back (rehost/stream.py RESULTS_LIMIT, which the dispatcher sets
 * here for each session): past it the tool's bytes are counted in their output's length,
 * not kept, and the check at the end refuses the results by those lengths. Before, the
 * check came after every byte was held: a ReHost memtrace of a run of 3.1 G instructions
 * grew `anvil run` to 22.7 GB, and the kernel killed it. */
uint64_t anvil_results_limit = UINT64_MAX;
static uint64_t kept;    /* the bytes of every output kept so far */
static int overflowed;   /* a write did not fit: from then on, lengths only */

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
    if (overflowed || kept + len > anvil_results_limit) {
        overflowed = 1;
        current->len += len;
        return;
    }
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
    kept += len;
}

void anvil_sink_close(void) { current = NULL; }

void anvil_free_outputs(void)
{
    for (uint32_t i = 0; i < anvil_noutputs; i++) {
        free(anvil_outputs[i].path);
        free(anvil_outputs[i].data);
    }
    anvil_noutputs = 0;
    kept = 0;
    overflowed = 0;
}

/* ------------------------------------------------------------ dispatch */

/* The tool's run forms (anvil_rt.h), if it has any. */
extern const struct anvil_run_form anvil_run_forms[] __attribute__((weak));

/* Shapes (ANVIL_ONE_WORD_TO, ANVIL_TWO_WORDS_TO in anvil_rt.h); anything else (GENERAL)
 * goes through a copy of the arguments; RUN_FORM(f): a site whose routine and shape are
 * those of the tool's run form f. */
#define ONE_WORD_TO(k) ANVIL_ONE_WORD_TO(k)
#define TWO_WORDS_TO(k0, k1) ANVIL_TWO_WORDS_TO(k0, k1)
#define GENERAL 24
#define RUN_FORM(f) (32 + (f))

/* Give every site its shape; called once when a session's site array is built. */
void anvil_prepare_sites(struct anvil_site *sites, uint32_t nsites)
{
    for (uint32_t i = 0; i < nsites; i++) {
        struct anvil_site *s = &sites[i];
        s->shape = s->ndynamic == 0 ? 0
                 : s->ndynamic == 1 ? ONE_WORD_TO(s->slot[0])
                 : s->ndynamic == 2 ? TWO_WORDS_TO(s->slot[0], s->slot[1])
                 : GENERAL;
        for (uint32_t f = 0; anvil_run_forms && anvil_run_forms[f].routine; f++)
            if (anvil_run_forms[f].routine == s->fn && anvil_run_forms[f].shape == s->shape) {
                s->shape = RUN_FORM(f);
                break;
            }
    }
    for (uint32_t f = 0; anvil_run_forms && anvil_run_forms[f].routine; f++) {
        const struct anvil_run_form *form = &anvil_run_forms[f];
        if (form->prepare && form->prepare(sites, nsites, RUN_FORM(f)) != 0)
            for (uint32_t i = 0; i < nsites; i++)  /* declined: back to a call per record */
                if (sites[i].shape == RUN_FORM(f))
                    sites[i].shape = (uint16_t)form->shape;
    }
}

/* The session is over and its copy of the library is about to be unloaded: free what
 * the library allocated on the process's heap (results not taken, the run forms' tables). */
void anvil_end_session(void)
{
    anvil_free_outputs();
    for (uint32_t f = 0; anvil_run_forms && anvil_run_forms[f].routine; f++)
        if (anvil_run_forms[f].release)
            anvil_run_forms[f].release();
}

/* The argument in position k of a call whose record words w[0] (and w[1]) go to
 * positions k0 (and k1; 4 for none): with constant k, k0 and k1 the selects fold away. */
#define ARG(k, k0, k1) ((k) == (k0) ? (uint64_t)w[0] : (k) == (k1) ? (uint64_t)w[1] : s->args[k])
#define CALL(k0, k1) s->fn(ARG(0, k0, k1), ARG(1, k0, k1), ARG(2, k0, k1), ARG(3, k0, k1))
#define ONE_WORD(k) case ONE_WORD_TO(k): CALL(k, 4); i += 2; break;
#define TWO_WORDS(k0, k1) case TWO_WORDS_TO(k0, k1): CALL(k0, k1); i += 3; break;

enum { DISPATCH_MORE = 0, DISPATCH_END = 1, DISPATCH_BAD_SITE = -1 };

#define END_MARK ((anvil_addr)-1)

/* How wide the record words this library reads are (anvil_rt.h's anvil_addr): 4 for ARM
 * programs, 8 for x86-64 ones; the server checks it against the site table. */
const uint32_t anvil_record_word_bytes = sizeof(anvil_addr);

/* Run the complete records in words[0..nwords). *consumed: words used. Stops at the
 * end marker (DISPATCH_END, marker not consumed) or at an unknown site id
 * (DISPATCH_BAD_SITE, the id at words[*consumed]). */
int anvil_dispatch(const struct anvil_site *sites, uint32_t nsites, const anvil_addr *words, size_t nwords,
                   size_t *consumed, uint64_t *records)
{
    size_t i = 0;
    uint64_t n = 0;
    int status = DISPATCH_MORE;
    while (i < nwords) {
        anvil_addr id = words[i];
        if (id >= nsites) {
            status = id == END_MARK ? DISPATCH_END : DISPATCH_BAD_SITE;
            break;
        }
        const struct anvil_site *s = &sites[id];
        uint32_t nd = s->ndynamic;
        if (nwords - i <= 4 && i + 1 + nd > nwords)  /* nd <= 4: only near the end can a record be cut */
            break;
        /* One case per shape, each passing its arguments straight from the record and
         * the site (no selects, no copy through memory) and stepping to the next record
         * by a constant: were it i + 1 + nd, finding the next record would wait for this
         * record's site id and site loads, a chain of two dependent loads per record that
         * bounds the loop at ~6 ns/record. Sites of one routine share a shape, so the
         * jump is predicted. */
        const anvil_addr *w = words + i + 1;
        switch (s->shape) {
        case 0: s->fn(s->args[0], s->args[1], s->args[2], s->args[3]); i += 1; break;
        ONE_WORD(0) ONE_WORD(1) ONE_WORD(2) ONE_WORD(3)
        TWO_WORDS(0, 1) TWO_WORDS(0, 2) TWO_WORDS(0, 3) TWO_WORDS(1, 0) TWO_WORDS(1, 2) TWO_WORDS(1, 3)
        TWO_WORDS(2, 0) TWO_WORDS(2, 1) TWO_WORDS(2, 3) TWO_WORDS(3, 0) TWO_WORDS(3, 1) TWO_WORDS(3, 2)
        case GENERAL: {
            uint64_t a[4] = {s->args[0], s->args[1], s->args[2], s->args[3]};
            for (uint32_t k = 0; k < nd; k++)
                a[s->slot[k]] = w[k];
            s->fn(a[0], a[1], a[2], a[3]);
            i += 1 + nd;
            break;
        }
        default: {
            /* A run form takes this record (complete: checked above) and the ones after
             * it that are its own: in cachesim's stream, every record up to the end of
             * the batch. */
            size_t ran = anvil_run_forms[s->shape - RUN_FORM(0)].run(sites, nsites, s->shape, words + i, nwords - i);
            if (ran == 0) {  /* a run form that breaks its contract: stop rather than spin */
                status = DISPATCH_BAD_SITE;
                break;
            }
            i += ran * (1 + nd);
            n += ran;
            continue;
        }
        }
        n++;
    }
    *consumed = i;
    *records += n;
    return status;
}
