/* ReHost communicator: hook records go to a ring buffer in the target's memory and
 * are flushed through the platform's channel when it fills and at program end.
 * Stream format (little-endian 32-bit words, see rehost/stream.py):
 *   header  MAGIC VERSION hash0 hash1 bias
 *   record  site-id dynamic-arg...        (as many args as the site's routine has)
 *   end     END narrays {index bytes data padded to 4}...
 * The program never waits for the analysis, only for the channel when it is full. */
#include "anvil_rt.h"

#define STREAM_MAGIC 0x48524E41u /* "ANRH" */
#define STREAM_VERSION 1u
#define END_MARK 0xFFFFFFFFu
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
#define RING_WORDS 4096u     /* 16 KiB between flushes: microcontrollers have little RAM */
#else
#define RING_WORDS 65536u    /* 256 KiB between flushes */
#endif
#define RING_SLACK 8u        /* a record started below the limit may end past it */

extern const uint32_t anvil_rh_table_hash[2];
extern const uint32_t anvil_rh_narrays;
void anvil_rh_send_arrays(void);
/* The platform's channel (arm/anvil_channel.c: Linux; cortexm/anvil_channel.c: semihosting). */
void anvil_channel_open(void);
void anvil_channel_send(const void *data, uint32_t len);

static uint32_t ring[RING_WORDS + RING_SLACK];
/* Read and written by inline record code (rewriter/emit/hooks.py, _emit_record): the
 * next free word, and the word past which the ring must be flushed. */
uint32_t *anvil_rh_state[2];
#define anvil_rh_cursor anvil_rh_state[0]
#define anvil_rh_limit anvil_rh_state[1]
void anvil_rh_flush(void)
{
    uint32_t bytes = (uint32_t)((char *)anvil_rh_cursor - (char *)ring);
    anvil_rh_cursor = ring;
    anvil_channel_send(ring, bytes);
}

static inline void put(uint32_t word)
{
    *anvil_rh_cursor++ = word;
}

static inline void done(void)
{
    if (anvil_rh_cursor > anvil_rh_limit)
        anvil_rh_flush();
}

/* Program start (called before the program's first instruction). */
void anvil_rh_start(void)
{
    anvil_channel_open();
    anvil_rh_cursor = ring;
    anvil_rh_limit = ring + RING_WORDS;
    put(STREAM_MAGIC);
    put(STREAM_VERSION);
    put(anvil_rh_table_hash[0]);
    put(anvil_rh_table_hash[1]);
    put(anvil_bias);
}

void anvil_rh_record0(uint32_t site) { put(site); done(); }
void anvil_rh_record1(uint32_t site, uint32_t a) { put(site); put(a); done(); }
void anvil_rh_record2(uint32_t site, uint32_t a, uint32_t b) { put(site); put(a); put(b); done(); }
void anvil_rh_record3(uint32_t site, uint32_t a, uint32_t b, uint32_t c)
{
    put(site);
    put(a);
    put(b);
    put(c);
    done();
}

void anvil_rh_send_array(uint32_t index, const void *data, uint32_t bytes)
{
    put(index);
    put(bytes);
    anvil_rh_flush();
    anvil_channel_send(data, bytes);
    static const uint32_t zero;
    if (bytes & 3)
        anvil_channel_send(&zero, 4 - (bytes & 3));
}

/* Program end: the end marker, the arrays the program filled inline, and the last flush.
 * Called from anvil_program_end, which has already derived the counts not made inline. */
void anvil_rh_end(void)
{
    put(END_MARK);
    put(anvil_rh_narrays);
    anvil_rh_send_arrays();
    anvil_rh_flush();
}
