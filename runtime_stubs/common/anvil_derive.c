/* Block counts the program did not count itself, derived at program end from the ones
 * it did (rewriter/emit/counter_placement.py writes the program this runs).
 *
 * Per procedure: base_lo, base_hi, edge_lo, edge_hi, nblocks, ncounted, nderived; then
 * ncounted measured counts: a block position (its slot) or, with bit 15 set, an edge
 * counter numbered from the procedure's first one; then per derived value its operand count
 * and operands (a value index, bit 15 set to subtract); then per block the index of the
 * value that is its count. Values live in ``tmp``; arithmetic is modulo 2^64. */
#include "anvil_rt.h"

void anvil_derive(uint64_t *slots, const uint64_t *edges, const uint16_t *code, uint32_t length,
                  uint64_t *tmp)
{
    const uint16_t *end = code + length;
    while (code < end) {
        uint64_t *mine = slots + (code[0] | (uint32_t)code[1] << 16);
        const uint64_t *my_edges = edges + (code[2] | (uint32_t)code[3] << 16);
        uint32_t nblocks = code[4], ncounted = code[5], nderived = code[6];
        code += 7;
        for (uint32_t i = 0; i < ncounted; i++) {
            uint32_t at = *code++;
            tmp[i] = at & 0x8000 ? my_edges[at & 0x7FFF] : mine[at];
        }
        for (uint32_t j = 0; j < nderived; j++) {
            uint32_t n = *code++;
            uint64_t value = 0;
            while (n--) {
                uint32_t op = *code++;
                if (op & 0x8000)
                    value -= tmp[op & 0x7FFF];
                else
                    value += tmp[op];
            }
            tmp[ncounted + j] = value;
        }
        for (uint32_t i = 0; i < nblocks; i++)
            mine[i] = tmp[*code++];
    }
}
