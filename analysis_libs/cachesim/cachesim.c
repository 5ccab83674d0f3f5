/* cachesim analysis: a set-associative data cache with true LRU, write-allocate.
 * Structure of the ATOM example: profile_start (geometry), cache_sim (one access),
 * profile_end (report).
 *
 * The instrumented code keeps the `depth` most recently used lines of each set itself
 * (the slot of a depth-2 repeat filter, api.RepeatFilter; depth 1 when direct-mapped):
 * an access to one of them is a hit that at most reorders them, counted in mru_hits and
 * never seen here. cache_sim sees the others, each with the line that left the slot
 * (`left`: an address in it, 0 for none), and keeps the set's remaining ways ordered
 * most- to least-recently used; a tag holds (line number + 1), 0 meaning empty.
 *
 * A set's ways are a row of `row` words in `tags`: `held` rounded up to 8 (the row the
 * pass sizes the array for, passes/cachesim.py), so that a host with AVX2 compares and
 * reorders a row of up to 8 ways with one vector each (the ReHost dispatcher's fast path;
 * the words past `held` stay 0, which no key equals). */
#include "anvil_rt.h"
#if defined(ANVIL_HOST) && defined(__AVX2__)
#include <immintrin.h>
#define ROW_VECTOR 8
#define SHIFT_IN __attribute__((noinline))
/* Lane permutations for "the way at position p leaves, the ones before it move down one,
 * lane 0 is free for the new most recent line": lane j takes j - 1 up to p, else j. */
static const uint32_t leave_at[ROW_VECTOR][ROW_VECTOR] __attribute__((aligned(32))) = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 2, 3, 4, 5, 6, 7}, {0, 0, 1, 3, 4, 5, 6, 7}, {0, 0, 1, 2, 4, 5, 6, 7},
    {0, 0, 1, 2, 3, 5, 6, 7}, {0, 0, 1, 2, 3, 4, 6, 7}, {0, 0, 1, 2, 3, 4, 5, 7}, {0, 0, 1, 2, 3, 4, 5, 6}};
#else
#define SHIFT_IN inline
#endif

ANVIL_ARRAY(uint32_t, tags);
/* Hits on the lines the instrumented code keeps: [0] loads, [1] stores (passes/cachesim.py). */
ANVIL_ARRAY(uint64_t, mru_hits);

static uint32_t cache_size, ways, line_shift, set_mask, held, row;  /* held: ways kept here */
static uint64_t accesses_of[2], misses_of[2];  /* [0] loads, [1] stores */

void profile_start(uint32_t size, uint32_t assoc, uint32_t line, uint32_t depth)
{
    cache_size = size;
    ways = assoc;
    held = assoc - depth;
    row = held > 8 ? held : 8;
    line_shift = 0;
    while ((1u << line_shift) < line)
        line_shift++;
    set_mask = size / (assoc * line) - 1;
}

/* The ordered update of a set's row: the line found (or the least recently used one)
 * goes, the ways before it move down one, `out` becomes the most recent. Returns 1 for a
 * miss. Out of line on a host with the vector path (which then needs no stack frame),
 * inline on the target (a call and its return cost two jumps under an emulator). */
static SHIFT_IN uint32_t shift_in(uint32_t *set, uint32_t key, uint32_t out)
{
    if (set[0] == key) {  /* the most recent line kept here: half the calls */
        set[0] = out;
        return 0;
    }
    uint32_t i = 1;
    while (i < held && set[i] != key)
        i++;
    uint32_t miss = i == held;
    if (miss)
        i = held - 1;
    for (; i > 0; i--)
        set[i] = set[i - 1];
    set[0] = out;
    return miss;
}

void cache_sim(uint32_t addr, uint32_t is_store, uint32_t left)
{
    uint32_t line = addr >> line_shift;
    uint32_t *set = anvil_array_tags + (line & set_mask) * row;
    uint32_t key = line + 1;
    uint32_t kind = is_store != 0;
    accesses_of[kind]++;  /* indexed, not branched on: loads and stores interleave unpredictably */
    if (held == 0) {  /* direct-mapped: the program kept the only way */
        misses_of[kind]++;
        return;
    }
    /* The line found (or the least recently used one) goes; the line the instrumented
     * code let go becomes the most recent of those kept here. */
    uint32_t out = left ? (left >> line_shift) + 1 : 0;
#ifdef ROW_VECTOR
    if (held <= ROW_VECTOR) {
        /* The same update without a data-dependent branch: most calls are misses and a
         * hit may be on any way, which the host cannot predict. p: the way found, or the
         * last (least recently used) when none is. */
        __m256i ways_now = _mm256_loadu_si256((const __m256i *)set);
        __m256i found = _mm256_cmpeq_epi32(ways_now, _mm256_set1_epi32((int)key));
        uint32_t hit = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(found));
        uint32_t p = (uint32_t)__builtin_ctz(hit | 1u << (held - 1));
        misses_of[kind] += hit == 0;
        __m256i moved = _mm256_permutevar8x32_epi32(ways_now, _mm256_load_si256((const __m256i *)leave_at[p]));
        _mm256_storeu_si256((__m256i *)set, _mm256_blend_epi32(moved, _mm256_set1_epi32((int)out), 1));
        return;
    }
#endif
    misses_of[kind] += shift_in(set, key, out);
}

static void field(const char *name, uint64_t v, int json, int last)
{
    if (json) {
        anvil_putc('"');
        anvil_puts(name);
        anvil_puts("\": ");
        anvil_putu(v);
        if (!last)
            anvil_puts(", ");
    } else {
        anvil_puts("  ");
        anvil_put_padded(name, 17);
        anvil_putu(v);
        anvil_putc('\n');
    }
}

static void rate(const char *name, uint64_t misses, uint64_t total, int json)
{
    if (json) {
        anvil_putc('"');
        anvil_puts(name);
        anvil_puts("\": ");
    } else {
        anvil_puts("  ");
        anvil_put_padded(name, 17);
    }
    anvil_put_ratio(misses, total, 6);
    anvil_puts(json ? ", " : "\n");
}

void profile_end(const char *path, uint32_t json)
{
    if (anvil_out_open(path) < 0)
        return;
    uint64_t loads = accesses_of[0] + anvil_array_mru_hits[0], stores = accesses_of[1] + anvil_array_mru_hits[1];
    uint64_t load_misses = misses_of[0], store_misses = misses_of[1];
    uint64_t accesses = loads + stores, misses = load_misses + store_misses;
    if (json) {
        anvil_puts("{\"tool\": \"cachesim\", ");
        field("size", cache_size, 1, 0);
        field("assoc", ways, 1, 0);
        field("line", 1u << line_shift, 1, 0);
        rate("miss_rate", misses, accesses, 1);
        rate("load_miss_rate", load_misses, loads, 1);
        rate("store_miss_rate", store_misses, stores, 1);
        field("accesses", accesses, 1, 0);
        field("misses", misses, 1, 0);
        field("hits", accesses - misses, 1, 0);
        field("loads", loads, 1, 0);
        field("load_misses", load_misses, 1, 0);
        field("stores", stores, 1, 0);
        field("store_misses", store_misses, 1, 1);
        anvil_puts("}\n");
    } else {
        anvil_puts("cachesim: ");
        anvil_putu(cache_size);
        anvil_puts(" bytes, ");
        anvil_putu(ways);
        anvil_puts("-way, ");
        anvil_putu(1u << line_shift);
        anvil_puts("-byte lines, LRU, write-allocate\n\n");
        field("accesses", accesses, 0, 0);
        field("hits", accesses - misses, 0, 0);
        field("misses", misses, 0, 0);
        rate("miss rate", misses, accesses, 0);
        field("loads", loads, 0, 0);
        field("load misses", load_misses, 0, 0);
        rate("load miss rate", load_misses, loads, 0);
        field("stores", stores, 0, 0);
        field("store misses", store_misses, 0, 0);
        rate("store miss rate", store_misses, stores, 0);
    }
    anvil_out_close();
}
