/* The parts of the target runtime every platform shares: jump translation, the results
 * sink and the helpers compiled code may call. The platform (arm/anvil_rt.c for Linux,
 * cortexm/anvil_rt.c for bare-metal Cortex-M) provides anvil_open_write, anvil_close
 * and anvil_write_fd. */
#include "anvil_rt.h"

/* Translate an original code address to its relocated copy using the per-procedure
 * table {start (link-time), size, shift, entries...}, an entry being the relocated
 * address minus the original one (0 where no instruction starts); addresses outside
 * go unchanged. */
uint32_t anvil_xlate(uint32_t target, const uint32_t *table)
{
    uint32_t link = (target & ~1u) - anvil_bias;
    uint32_t off = link - table[0];
    if (off < table[1])
        return target + table[3 + (off >> table[2])];
    return target;
}

/* ---------------------------------------------------------------- output sink */

static int out_fd = -1;

static const char *out_path;  /* the tool's results path (a string of the image) */
static long out_owner;        /* the process that opened out_fd (anvil_forked_child) */
static uint64_t out_written;  /* what that process wrote to it */

/* On Linux the sink holds no descriptor while the program runs: it opens its file for each
 * write and closes it after (decision 0119). A descriptor held from the program's start
 * (memtrace's trace) was one more in the program's table, which a program that walks its
 * descriptors (/proc/self/fd, fcntl up to the limit: findutils, closefrom's emulations)
 * sees and acts on. On bare metal (semihosting handles) the file stays open. */
#ifdef ANVIL_BARE_METAL
#define SINK_HELD 1
#else
#define SINK_HELD 0
#endif
static int out_active;  /* a file is open for the tool (out_fd may be closed between writes) */

int anvil_sink_open(const char *path)
{
    out_path = path;
    out_owner = anvil_forked_child();
    out_written = 0;
    out_fd = anvil_open_write(path);
    out_active = out_fd >= 0;
    int handle = out_fd;
    if (!SINK_HELD && out_fd >= 0) {
        anvil_close(out_fd);
        out_fd = -1;
    }
    return handle;
}

/* The descriptor to write this process's results to: the file opened again where the sink
 * does not hold it (the file of the process that wrote it last: ``out_owner``), then, in a
 * child forked since, a file of the child's own (anvil_output_of_this_process). */
static int sink_fd(void)
{
    if (out_fd < 0 && out_active)
        out_fd = anvil_reopen_write_of(out_path, out_owner);
    return anvil_output_of_this_process(out_fd, out_path, &out_owner, out_written);
}

static void sink_release(void)
{
    if (!SINK_HELD && out_fd >= 0) {
        anvil_close(out_fd);
        out_fd = -1;
    }
}

static int out_ended_by_copy;  /* a copy of the process wrote the end to out_fd (before_exec) */

/* Before an exec a copy of the process wrote the results' end into the file this one still
 * writes (anvil_rt.c's before_exec): if this one writes again, the exec failed, and what
 * the copy added goes (it is written again, later and whole). */
void anvil_sink_copy_ended(void)
{
    out_ended_by_copy = out_active;
}

void anvil_sink_write(const char *buf, uint32_t len)
{
    if (!out_active)
        return;
    /* A tool that writes as the program runs (memtrace) opened its file before the program
     * forked: the child goes on in a file of its own (sink_fd). */
    out_fd = sink_fd();
    if (out_fd < 0)
        return;
    if (out_ended_by_copy) {
        out_ended_by_copy = 0;
        anvil_cut_at(out_fd, out_written);
    }
    uint32_t done = 0;
    int reopened = 0;
    while (done < len) {
        long n = anvil_write_fd(out_fd, buf + done, len - done);
        if (n == -9 && !reopened) {  /* EBADF: the program closed it (closefrom): open it again */
            reopened = 1;
            out_fd = anvil_reopen_write(out_path);
            continue;
        }
        if (n <= 0)
            break;
        done += (uint32_t)n;
    }
    out_written += done;
    sink_release();
}

void anvil_sink_close(void)
{
    if (!out_active)
        return;
    out_fd = sink_fd();
    if (out_fd >= 0)
        anvil_close(out_fd);
    out_fd = -1;
    out_active = 0;
}

/* The compiler may emit calls to these for struct copies and zeroing. */
void *memset(void *p, int c, size_t n) { anvil_memset(p, c, n); return p; }
void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *dd = d;
    const unsigned char *ss = s;
    while (n--)
        *dd++ = *ss++;
    return d;
}

/* libgcc's division helpers call these on division by zero; the default ones need
 * libc's raise(). Analysis code never divides by zero on purpose: return 0. */
int __aeabi_idiv0(int r) { return r; }
long long __aeabi_ldiv0(long long r) { return r; }
