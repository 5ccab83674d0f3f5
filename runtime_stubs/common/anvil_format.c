/* Buffered, formatted output for analysis routines, shared by the target runtime
 * (InHost: the buffer goes to a file through system calls) and the host runtime
 * (ReHost: the buffer goes to memory that the server sends back to the client).
 * Each platform provides anvil_sink_open / anvil_sink_write / anvil_sink_close. */
#include "anvil_rt.h"

int anvil_sink_open(const char *path);
void anvil_sink_write(const char *buf, uint32_t len);
void anvil_sink_close(void);

/* Cortex-M images build it smaller (target_build.CORTEX_M): RAM is scarce there, and a
 * flush is one more semihosting call at the end of the run. */
#ifndef ANVIL_OUT_BUF_SIZE
#define ANVIL_OUT_BUF_SIZE 4096
#endif

static char out_buf[ANVIL_OUT_BUF_SIZE];
static uint32_t out_len;
static int out_open;

#if defined(ANVIL_HOST) || defined(ANVIL_BARE_METAL)
static void flush(void)
{
    anvil_sink_write(out_buf, out_len);
    out_len = 0;
}
#else
/* With the signals blocked: a handler that ends the program (a fatal signal's results, an
 * exit() in it) between the write and the buffer's restart wrote the buffer a second time. */
static void flush(void)
{
    uint32_t saved[2];
    anvil_block_signals(saved);
    anvil_sink_write(out_buf, out_len);
    out_len = 0;
    anvil_restore_signals(saved);
}
#endif

int anvil_out_open(const char *path)
{
    int handle = anvil_sink_open(path);
    out_len = 0;
    out_open = handle >= 0;
    return handle;
}

void anvil_out_close(void)
{
    if (!out_open)
        return;
    flush();
    anvil_sink_close();
    out_open = 0;
}

void anvil_out_room(uint32_t bytes)
{
    if (sizeof out_buf - out_len < bytes)
        flush();
}

uint32_t anvil_out_mark(void) { return out_len; }

void anvil_out_cut(uint32_t mark)
{
    if (mark < out_len)
        out_len = mark;
}

void anvil_putc(char c)
{
    if (out_len == sizeof out_buf)
        flush();
    out_buf[out_len++] = c;
}

void anvil_puts(const char *s)
{
    while (*s)
        anvil_putc(*s++);
}

void anvil_putu_width(uint64_t v, int width)
{
    char digits[20];
    int n = anvil_decimal(digits, v);
    while (width-- > n)
        anvil_putc(' ');
    for (int i = 0; i < n; i++)
        anvil_putc(digits[i]);
}

void anvil_putu(uint64_t v) { anvil_putu_width(v, 0); }

void anvil_puthex(uint32_t v)
{
    anvil_puts("0x");
    for (int shift = 28; shift >= 0; shift -= 4)
        anvil_putc("0123456789abcdef"[(v >> shift) & 15]);
}

#if defined(ANVIL_HOST) || defined(__x86_64__)
void anvil_putaddr(anvil_word v)
{
    int shift = 28;
    while (shift < 60 && v >> (shift + 4))
        shift += 4;
    anvil_puts("0x");
    for (; shift >= 0; shift -= 4)
        anvil_putc("0123456789abcdef"[(v >> shift) & 15]);
}
#endif

/* num/den printed with ``decimals`` digits after the point, rounded down. */
void anvil_put_ratio(uint64_t num, uint64_t den, int decimals)
{
    if (den == 0) {
        anvil_putc('0');
        return;
    }
    uint64_t scale = 1;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    uint64_t scaled = num * scale / den;
    anvil_putu(scaled / scale);
    if (decimals) {
        anvil_putc('.');
        uint64_t frac = scaled % scale;
        for (uint64_t digit = scale / 10; digit; digit /= 10) {
            anvil_putc((char)('0' + frac / digit));
            frac %= digit;
        }
    }
}

void anvil_put_json_string(const char *s)
{
    anvil_putc('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            anvil_putc('\\');
        anvil_putc(*s);
    }
    anvil_putc('"');
}

void anvil_put_padded(const char *s, int width)
{
    int n = 0;
    while (s[n])
        n++;
    anvil_puts(s);
    while (n++ < width)
        anvil_putc(' ');
}
