/*
 * hash.c - a string hash table (FNV-1a, separate chaining, malloc/free).
 *
 * A little "command interpreter" drives the table: a deterministic stream of
 * opcodes is dispatched through a dense switch (0..11), which compilers turn into
 * a jump table (TBB/TBH in Thumb, `ldr pc, [pc, rN, lsl #2]` or `add pc, ...` in
 * ARM mode).  Every operation keeps a running count of live entries, which is
 * cross-checked against a full scan at the end.  Exit status 0 when consistent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_BUCKETS 257
#define N_KEYS 400
#define N_OPS 4000

struct entry {
    char *key;
    int value;
    struct entry *next;
};

struct table {
    struct entry *buckets[N_BUCKETS];
    int live;
};

struct stats {
    int inserts, updates, hits, misses, deletes, delete_misses, scans, swaps;
    unsigned int value_sum;
    int longest_chain;
};

static unsigned int lcg_state = 2024u;

static unsigned int lcg(void)
{
    lcg_state = lcg_state * 1103515245u + 12345u;
    return (lcg_state >> 8) & 0xffffffu;
}

static unsigned int fnv1a(const char *s)
{
    unsigned int h = 2166136261u;
    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 16777619u;
    }
    return h;
}

/* Writes "k<n>" (plus an optional suffix character) into buf; no printf needed. */
static void make_key(char *buf, unsigned int n, char suffix)
{
    char digits[12];
    int len = 0;
    do {
        digits[len++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    *buf++ = 'k';
    while (len)
        *buf++ = digits[--len];
    if (suffix)
        *buf++ = suffix;
    *buf = '\0';
}

static struct entry *find(struct table *t, const char *key)
{
    struct entry *e = t->buckets[fnv1a(key) % N_BUCKETS];
    while (e && strcmp(e->key, key) != 0)
        e = e->next;
    return e;
}

/* Inserts or updates; returns 1 when a new entry was created. */
static int put(struct table *t, const char *key, int value)
{
    struct entry *e = find(t, key);
    if (e) {
        e->value = value;
        return 0;
    }
    unsigned int b = fnv1a(key) % N_BUCKETS;
    e = malloc(sizeof *e);
    e->key = malloc(strlen(key) + 1);
    strcpy(e->key, key);
    e->value = value;
    e->next = t->buckets[b];
    t->buckets[b] = e;
    t->live++;
    return 1;
}

/* Removes key; returns 1 when it was present. */
static int removekey(struct table *t, const char *key)
{
    struct entry **link = &t->buckets[fnv1a(key) % N_BUCKETS];
    while (*link) {
        struct entry *e = *link;
        if (strcmp(e->key, key) == 0) {
            *link = e->next;
            free(e->key);
            free(e);
            t->live--;
            return 1;
        }
        link = &e->next;
    }
    return 0;
}

static int chain_length(const struct table *t, unsigned int b)
{
    int n = 0;
    for (const struct entry *e = t->buckets[b]; e; e = e->next)
        n++;
    return n;
}

static int count_all(const struct table *t)
{
    int n = 0;
    for (unsigned int b = 0; b < N_BUCKETS; b++)
        n += chain_length(t, b);
    return n;
}

static void clear(struct table *t)
{
    for (unsigned int b = 0; b < N_BUCKETS; b++) {
        struct entry *e = t->buckets[b];
        while (e) {
            struct entry *next = e->next;
            free(e->key);
            free(e);
            e = next;
        }
        t->buckets[b] = NULL;
    }
    t->live = 0;
}

/* One interpreted operation.  The dense switch is the point of this function. */
static void step(struct table *t, struct stats *st, unsigned int op, unsigned int k, unsigned int k2)
{
    char key[16], key2[16];
    struct entry *e, *f;

    make_key(key, k, 0);
    switch (op) {
    case 0: /* insert or update */
        if (put(t, key, (int)k * 3))
            st->inserts++;
        else
            st->updates++;
        break;
    case 1: /* lookup */
        if (find(t, key))
            st->hits++;
        else
            st->misses++;
        break;
    case 2: /* delete */
        if (removekey(t, key))
            st->deletes++;
        else
            st->delete_misses++;
        break;
    case 3: /* increment when present */
        e = find(t, key);
        if (e)
            e->value++;
        else
            st->misses++;
        break;
    case 4: /* insert a suffixed variant */
        make_key(key2, k, 'x');
        st->inserts += put(t, key2, (int)k);
        break;
    case 5: /* look up the suffixed variant */
        make_key(key2, k, 'x');
        if (find(t, key2))
            st->hits++;
        else
            st->misses++;
        break;
    case 6: /* longest chain seen so far */
        {
            int len = chain_length(t, fnv1a(key) % N_BUCKETS);
            if (len > st->longest_chain)
                st->longest_chain = len;
        }
        break;
    case 7: /* accumulate a value */
        e = find(t, key);
        st->value_sum += e ? (unsigned int)e->value : 1u;
        break;
    case 8: /* delete the suffixed variant */
        make_key(key2, k, 'x');
        st->deletes += removekey(t, key2);
        break;
    case 9: /* swap two values */
        make_key(key2, k2, 0);
        e = find(t, key);
        f = find(t, key2);
        if (e && f) {
            int v = e->value;
            e->value = f->value;
            f->value = v;
            st->swaps++;
        }
        break;
    case 10: /* insert only if absent */
        if (!find(t, key)) {
            put(t, key, -(int)k);
            st->inserts++;
        }
        break;
    case 11: /* full consistency scan */
        st->scans++;
        if (count_all(t) != t->live)
            st->scans += 1000000;
        break;
    default:
        break;
    }
}

int main(void)
{
    static struct table t;
    struct stats st;

    memset(&st, 0, sizeof st);
    for (int i = 0; i < N_OPS; i++) {
        unsigned int op = lcg() % 12;
        unsigned int k = lcg() % N_KEYS;
        unsigned int k2 = lcg() % N_KEYS;
        step(&t, &st, op, k, k2);
    }

    int counted = count_all(&t);
    printf("live=%d counted=%d\n", t.live, counted);
    printf("inserts=%d updates=%d deletes=%d delete_misses=%d\n", st.inserts, st.updates,
           st.deletes, st.delete_misses);
    printf("hits=%d misses=%d swaps=%d scans=%d longest_chain=%d\n", st.hits, st.misses,
           st.swaps, st.scans, st.longest_chain);
    printf("value_sum=%u fnv(\"hello\")=%08x\n", st.value_sum, fnv1a("hello"));

    int ok = counted == t.live && st.scans < 1000000 &&
             st.inserts - st.deletes == t.live && fnv1a("hello") == 0x4f9f2cabu;
    clear(&t);
    printf("%s\n", ok ? "OK" : "FAIL");
    return ok ? 0 : 1;
}
