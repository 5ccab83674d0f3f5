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
 * the words past `held` stay 0, which no key equals). On the host, cache_sim also has a
 * run form (cache_sim_run, see anvil_rt.h) that the dispatcher hands runs of records. */
#include "anvil_rt.h"
#ifdef ANVIL_HOST
#include <stdlib.h>
#endif
/* The vector row is 8 ways of 32-bit tags: an ARM program's (an x86-64 program's are 64-bit). */
#if defined(ANVIL_HOST) && defined(__AVX2__) && !defined(ANVIL_TARGET_X86_64)
#include <immintrin.h>
#define ROW_VECTOR 8
#define SHIFT_IN __attribute__((noinline))
#if defined(__AVX512VL__) && defined(__AVX512DQ__)
#define ROW_MASKS  /* row_hit with AVX-512's mask registers and masked moves */
#else
/* Lane permutations for "the way at position p leaves, the ones before it move down one,
 * lane 0 is free for the new most recent line": lane j takes j - 1 up to p, else j. */
static const uint32_t leave_at[ROW_VECTOR][ROW_VECTOR] __attribute__((aligned(32))) = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 2, 3, 4, 5, 6, 7}, {0, 0, 1, 3, 4, 5, 6, 7}, {0, 0, 1, 2, 4, 5, 6, 7},
    {0, 0, 1, 2, 3, 5, 6, 7}, {0, 0, 1, 2, 3, 4, 6, 7}, {0, 0, 1, 2, 3, 4, 5, 7}, {0, 0, 1, 2, 3, 4, 5, 6}};
#endif
#else
#define SHIFT_IN inline
#endif

ANVIL_ARRAY(anvil_addr, tags);  /* 64-bit keys in an x86-64 program (anvil_rt.h) */
/* Hits on the lines the instrumented code keeps: [0] loads, [1] stores (passes/cachesim.py). */
ANVIL_ARRAY(uint64_t, mru_hits);

static uint32_t cache_size, ways, line_shift, set_mask, held, row;  /* held: ways kept here */
static uint64_t accesses_of[2], misses_of[2];  /* [0] loads, [1] stores */
#ifdef ANVIL_TARGET_X86_64
/* An x86-64 program runs its records through cache_sim in a loop (its buffer of
 * misses, anvil_records_flush): an element of an array indexed by the kind is a load and
 * a store each record, a chain through memory from one record to the next. Scalars of a
 * type no tag has (unsigned long long; an x86-64 anvil_addr is unsigned long) stay in
 * registers across the loop instead; profile_end adds them to the arrays. */
static unsigned long long calls, store_calls, missed, store_missed;
static inline void count_call(uint32_t kind) { calls++; store_calls += kind; }
static inline void count_miss(uint32_t kind, uint32_t miss) { missed += miss; store_missed += miss & kind; }
#else
static inline void count_call(uint32_t kind) { accesses_of[kind]++; }
static inline void count_miss(uint32_t kind, uint32_t miss) { misses_of[kind] += miss; }
#endif

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
static SHIFT_IN uint32_t shift_in(anvil_addr *set, anvil_addr key, anvil_addr out)
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

#ifdef ROW_VECTOR
/* shift_in for a row of up to 8 ways (held <= ROW_VECTOR), without a data-dependent
 * branch: most calls are misses and a hit may be on any way, which the host cannot
 * predict. `last` is held - 1, the least recently used way. Returns 1 for a hit, 0 for
 * a miss. */
static inline __attribute__((always_inline)) uint32_t row_hit(uint32_t *set, uint32_t key, uint32_t out,
                                                              uint32_t last)
{
    /* p: the way found, or the last when none is; it goes, the ways before it move down
     * one, and `out` takes way 0. */
    __m256i ways_now = _mm256_loadu_si256((const __m256i *)set);
#ifdef ROW_MASKS
    /* Ways 0..p take the row moved up one lane with `out` in front (valignd of the row
     * after a vector of `out`), the others stay: one masked instruction, no table. The
     * mask of ways 0..p is the lowest set bit of (found | last way) and all bits below
     * it: x ^ (x - 1), with x - 1 as x + 0xFF in the 8-bit mask registers, so the chain
     * from one record's row to the next (when both are on one set) stays in them. */
    __mmask8 found = _mm256_cmpeq_epi32_mask(ways_now, _mm256_set1_epi32((int)key));
    __mmask8 leaving = _kor_mask8(found, _cvtu32_mask8(1u << last));
    __mmask8 up_to_p = _kxor_mask8(leaving, _kadd_mask8(leaving, _cvtu32_mask8(0xFF)));
    _mm256_storeu_si256((__m256i *)set,
                        _mm256_mask_alignr_epi32(ways_now, up_to_p, ways_now, _mm256_set1_epi32((int)out), 7));
    uint32_t hit = found;
#else
    /* A permutation from the table, then `out` blended into way 0. */
    __m256i found = _mm256_cmpeq_epi32(ways_now, _mm256_set1_epi32((int)key));
    uint32_t hit = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(found));
    uint32_t p = (uint32_t)__builtin_ctz(hit | 1u << last);
    __m256i moved = _mm256_permutevar8x32_epi32(ways_now, _mm256_load_si256((const __m256i *)leave_at[p]));
    _mm256_storeu_si256((__m256i *)set, _mm256_blend_epi32(moved, _mm256_set1_epi32((int)out), 1));
#endif
    return hit != 0;
}
#endif

void cache_sim(anvil_addr addr, uint32_t is_store, anvil_addr left)
{
    anvil_addr line = addr >> line_shift;
    anvil_addr *set = anvil_array_tags + (line & set_mask) * row;
    anvil_addr key = line + 1;
    uint32_t kind = is_store != 0;
    count_call(kind);  /* indexed or added, not branched on: loads and stores interleave unpredictably */
    if (held == 0) {  /* direct-mapped: the program kept the only way */
        count_miss(kind, 1u);
        return;
    }
    /* The line found (or the least recently used one) goes; the line the instrumented
     * code let go becomes the most recent of those kept here. */
    anvil_addr out = left ? (left >> line_shift) + 1 : 0;
#ifdef ROW_VECTOR
    if (held <= ROW_VECTOR) {
        count_miss(kind, 1 - row_hit(set, key, out, held - 1));
        return;
    }
#endif
    count_miss(kind, shift_in(set, key, out));
}

#ifdef ANVIL_HOST
/* Per site id, for cache_sim's run form: is_store (0 or 1) of the sites it runs, OTHER
 * for the rest. One byte a site instead of its 48-byte entry: the sites a stream uses
 * (a few thousand in Lua's) stay in the host's L1 cache. */
static uint8_t *site_kind;
static uint32_t nkinds;
#define OTHER 2

/* The run form's prepare (anvil_rt.h): site_kind from the sites, once a session. */
static int cache_sim_prepare(const struct anvil_site *sites, uint32_t nsites, uint32_t shape)
{
    free(site_kind);
    nkinds = 0;
    site_kind = malloc(nsites ? nsites : 1);
    if (!site_kind)
        return -1;
    for (uint32_t i = 0; i < nsites; i++)
        site_kind[i] = sites[i].shape != shape ? OTHER : sites[i].args[1] != 0;  /* args[1]: is_store */
    nkinds = nsites;
    return 0;
}

/* The run form's release (anvil_rt.h): the session is over. */
static void cache_sim_release(void)
{
    free(site_kind);
    site_kind = 0;
    nkinds = 0;
}

/* How run_records updates a set: held == 0 (nothing kept here, every record a miss),
 * row_hit, or shift_in. */
enum update { DIRECT, VECTOR, SHIFT };

/* cache_sim on each record from words[0] on (site id, addr, left) while its site is one
 * of the run form's; returns how many. An inline template: each caller passes a constant
 * `how`. The counts are kept in registers as records, stores, hits and store hits (a hit
 * is 0 or 1, and so is a kind) and added to accesses_of / misses_of at the end. The
 * update of each set is cache_sim's, in the same order, so the rows end the same. */
static inline __attribute__((always_inline)) size_t run_records(const anvil_addr *words, size_t nwords,
                                                                enum update how)
{
    anvil_addr *tags = anvil_array_tags;
    const uint8_t *kinds = site_kind;
    const uint32_t nsites = nkinds, shift = line_shift, mask = set_mask, width = how == VECTOR ? 8 : row;
#ifdef ROW_VECTOR
    const uint32_t last = held - 1;
#endif
    const anvil_addr *record = words, *end = words + nwords / 3 * 3;
    size_t stores = 0, hits = 0, store_hits = 0;
    for (; record != end; record += 3) {
        anvil_addr id = record[0];
        if (id >= nsites)
            break;
        uint32_t kind = kinds[id];
        if (kind == OTHER)
            break;
        uint32_t hit = 0;
        if (how != DIRECT) {
            anvil_addr line = record[1] >> shift, left = record[2];
            anvil_addr *set = tags + (line & mask) * width;
            anvil_addr out = (left >> shift) + (left != 0);  /* left ? its line + 1 : 0 */
#ifdef ROW_VECTOR
            if (how == VECTOR)
                hit = row_hit(set, line + 1, out, last);
            else
#endif
                hit = 1 - shift_in(set, line + 1, out);  /* hosts without AVX2, more than 8 ways */
        }
        stores += kind;
        hits += hit;
        store_hits += hit & kind;
    }
    size_t n = (size_t)(record - words) / 3;
    accesses_of[0] += n - stores;
    accesses_of[1] += stores;
    misses_of[0] += n - stores - (hits - store_hits);
    misses_of[1] += stores - store_hits;
    return n;
}

/* One function per update, so that each loop has the registers to itself (the shift
 * loop's calls would otherwise push the vector loop's values onto the stack). */
#define RUN_RECORDS(name, how) \
    static __attribute__((noinline)) size_t name(const anvil_addr *words, size_t nwords) \
    { return run_records(words, nwords, how); }
RUN_RECORDS(run_direct, DIRECT)
RUN_RECORDS(run_shift, SHIFT)
#ifdef ROW_VECTOR
RUN_RECORDS(run_vector, VECTOR)
#endif

/* cache_sim's run form (anvil_rt.h) for its sites' one shape: records of (site id, addr,
 * left), is_store a static argument. The same updates as a call of cache_sim per record,
 * but the geometry and the tags pointer stay in registers and the counts are summed in
 * registers and added once per run: in cache_sim each record's counts are a load and a
 * store of the words the record before of its kind stored, chains through memory. The
 * sites are those cache_sim_prepare marked (the same as sites[id].shape == shape). */
static size_t cache_sim_run(const struct anvil_site *sites, uint32_t nsites, uint32_t shape, const anvil_addr *words,
                            size_t nwords)
{
    (void)sites, (void)nsites, (void)shape;
    if (held == 0)
        return run_direct(words, nwords);
#ifdef ROW_VECTOR
    if (held <= ROW_VECTOR)
        return run_vector(words, nwords);
#endif
    return run_shift(words, nwords);
}

const struct anvil_run_form anvil_run_forms[] = {
    {(anvil_routine)cache_sim, ANVIL_TWO_WORDS_TO(0, 2), cache_sim_prepare, cache_sim_run, cache_sim_release},
    {0, 0, 0, 0, 0},
};
#endif

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
#ifdef ANVIL_TARGET_X86_64
    accesses_of[0] += calls - store_calls;
    accesses_of[1] += store_calls;
    misses_of[0] += missed - store_missed;
    misses_of[1] += store_missed;
    calls = store_calls = missed = store_missed = 0;
#endif
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
