/* Block counts the program did not count itself, derived at program end from the ones
 * it did (rewriter/emit/counter_placement.py writes the program this runs).
 *
 * The program is a stream of LEB128 varints (7 bits a byte, low first, top bit = more).
 * Per procedure: base (its first block's slot), edge base (its first edge counter),
 * ncounted, nderived, nwrites; then ncounted measured values, each a block position << 1
 * or an edge counter number << 1 | 1; then per derived value its operand count and
 * operands (a value index << 1, | 1 to subtract); then nwrites pairs (block position,
 * value index) for the blocks whose slot does not already hold their count. Values
 * live in ``tmp``; arithmetic is modulo 2^64. */
#include "anvil_rt.h"

static uint64_t next64(const uint8_t **code)
{
    uint64_t value = 0, byte;
    uint32_t shift = 0;
    do {
        byte = *(*code)++;
        value |= (byte & 0x7F) << shift;
        shift += 7;
    } while (byte & 0x80);
    return value;
}

static uint32_t next(const uint8_t **code)
{
    return (uint32_t)next64(code);
}

/* A counted value as the programs name it: a block position << 1, or an edge counter << 1 | 1. */
static uint64_t counted(uint32_t at, const uint64_t *mine, const uint64_t *my_edges)
{
    return at & 1 ? my_edges[at >> 1] : mine[at >> 1];
}

void anvil_derive(uint64_t *slots, const uint64_t *edges, const uint8_t *code, uint32_t length,
                  uint64_t *tmp)
{
    const uint8_t *end = code + length;
    while (code < end) {
        uint64_t *mine = slots + next(&code);
        const uint64_t *my_edges = edges + next(&code);
        uint32_t ncounted = next(&code), nderived = next(&code), nwrites = next(&code);
        for (uint32_t i = 0; i < ncounted; i++) {
            tmp[i] = counted(next(&code), mine, my_edges);
        }
        for (uint32_t j = 0; j < nderived; j++) {
            uint32_t n = next(&code);
            uint64_t value = 0;
            while (n--) {
                uint32_t op = next(&code);
                if (op & 1)
                    value -= tmp[op >> 1];
                else
                    value += tmp[op >> 1];
            }
            tmp[ncounted + j] = value;
        }
        while (nwrites--) {
            uint32_t position = next(&code);
            mine[position] = tmp[next(&code)];
        }
    }
}

/* For an array read only as per-procedure sums (Tool.sum_per_procedure, decisions 0025,
 * 0030): add each procedure's blocks' counts times their instructions to its sum,
 * straight from the values counted (the derived counts are signed sums of those, so the
 * procedure's sum is too). The program, varints as above: per procedure, its index, its
 * first slot, its first edge counter, its number of terms; per term the value (a slot
 * counted from the first << 1, or edge counter << 1 | 1: only counting blocks have slots
 * in such an array, decision 0034) and its coefficient, zigzag-coded
 * (an odd one is negative) in up to 64 bits. Arithmetic is modulo 2^64, so the sums are exact. */
void anvil_fold(const uint64_t *slots, const uint64_t *edges, uint64_t *sums, const uint8_t *code,
                uint32_t length)
{
    const uint8_t *end = code + length;
    while (code < end) {
        uint32_t proc = next(&code);
        const uint64_t *mine = slots + next(&code);
        const uint64_t *my_edges = edges + next(&code);
        uint32_t nterms = next(&code);
        uint64_t sum = 0;
        while (nterms--) {
            uint64_t value = counted(next(&code), mine, my_edges);
            uint64_t zigzag = next64(&code);
            uint64_t coefficient = zigzag & 1 ? ~(zigzag >> 1) : zigzag >> 1;
            sum += value * coefficient;
        }
        sums[proc] += sum;
    }
}
