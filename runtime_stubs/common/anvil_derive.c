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

static uint32_t next(const uint8_t **code)
{
    uint32_t value = 0, shift = 0, byte;
    do {
        byte = *(*code)++;
        value |= (byte & 0x7F) << shift;
        shift += 7;
    } while (byte & 0x80);
    return value;
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
            uint32_t at = next(&code);
            tmp[i] = at & 1 ? my_edges[at >> 1] : mine[at >> 1];
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

/* For an array read only as per-procedure sums (Tool.sum_per_procedure, decision 0025):
 * add each block's count times its instructions to its procedure's sum. The program,
 * varints as above: per procedure, its index, its first block's slot, its number of
 * blocks and their instruction counts. Runs after anvil_derive has filled the slots. */
void anvil_fold(const uint64_t *slots, uint64_t *sums, const uint8_t *code, uint32_t length)
{
    const uint8_t *end = code + length;
    while (code < end) {
        uint32_t proc = next(&code);
        const uint64_t *mine = slots + next(&code);
        uint32_t nblocks = next(&code);
        uint64_t sum = 0;
        for (uint32_t i = 0; i < nblocks; i++)
            sum += mine[i] * next(&code);
        sums[proc] += sum;
    }
}
