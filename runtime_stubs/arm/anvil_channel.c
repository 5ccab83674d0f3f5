/* ReHost channel on ARM Linux: how the communicator's (anvil_comm.c) bytes leave the
 * program. The channel is file descriptor ANVIL_REHOST_FD, inherited from `anvil run` (a
 * socket: send() with MSG_NOSIGNAL, so a vanished reader never kills the program;
 * any other file: write()). When the program did not inherit it and its environment
 * has ANVIL_REHOST_CONNECT=a.b.c.d:port, the communicator connects a TCP socket there
 * (`anvil rehost-listen` on the host) and moves it to ANVIL_REHOST_FD, so the
 * program's own descriptors are numbered as without instrumentation. Without a
 * channel the program runs and the records are dropped (one line on stderr when a
 * connection was asked for and failed). A child the program forks inherits the channel
 * but sends nothing: its records would break into its parent's stream, so the session
 * holds the parent's alone (InHost gives the child a results file of its own). */
#include "anvil_rt.h"

#define SYS_write 4
#define SYS_close 6
#define SYS_dup2 63
#define SYS_fcntl64 221
#define SYS_socket 281
#define SYS_connect 283
#define SYS_sendto 290
#define AF_INET 2
#define SOCK_STREAM 1
#define F_GETFD 1
#define MSG_NOSIGNAL 0x4000
#define EINTR 4
#define EAGAIN 11
#define ENOTSOCK 88

#define ANVIL_REHOST_FD 1000
static int channel_ok = 1;
static int use_write;

void anvil_channel_send(const void *data, uint32_t len)
{
    const char *p = data;
    if (channel_ok && anvil_forked_child())
        channel_ok = 0;
    while (len && channel_ok) {
        long n;
        if (use_write)
            n = anvil_syscall(SYS_write, ANVIL_REHOST_FD, (long)p, len, 0, 0, 0);
        else
            n = anvil_syscall(SYS_sendto, ANVIL_REHOST_FD, (long)p, len, MSG_NOSIGNAL, 0, 0);
        if (n == -ENOTSOCK && !use_write) {
            use_write = 1;
            continue;
        }
        if (n == -EINTR || n == -EAGAIN)
            continue;
        if (n <= 0) {
            channel_ok = 0;  /* no reader: the program goes on; the host sees a stream without its end */
            return;
        }
        p += n;
        len -= (uint32_t)n;
    }
}

/* "a.b.c.d:port" -> sockaddr_in (network byte order); 0 when it is not one. */
static int parse_address(const char *text, uint8_t sockaddr[16])
{
    uint32_t part[5] = {0, 0, 0, 0, 0};
    int n = 0, digits = 0;
    for (const char *p = text;; p++) {
        char c = *p;
        if (c >= '0' && c <= '9') {
            part[n] = part[n] * 10 + (uint32_t)(c - '0');
            if (++digits > 5)
                return 0;
            continue;
        }
        if (!digits || part[n] > (n == 4 ? 65535u : 255u))
            return 0;
        if (c == (n < 3 ? '.' : ':') && n < 4) {
            n++;
            digits = 0;
            continue;
        }
        if (c == 0 && n == 4)
            break;
        return 0;
    }
    anvil_memset(sockaddr, 0, 16);
    sockaddr[0] = AF_INET;
    sockaddr[2] = (uint8_t)(part[4] >> 8);
    sockaddr[3] = (uint8_t)part[4];
    for (int i = 0; i < 4; i++)
        sockaddr[4 + i] = (uint8_t)part[i];
    return 1;
}

static void warn(const char *a, const char *b, const char *c)
{
    anvil_warn(a);
    anvil_warn(b);
    anvil_warn(c);
}

/* No inherited channel: connect to ANVIL_REHOST_CONNECT if the environment names it. */
void anvil_channel_open(void)
{
    if (anvil_syscall(SYS_fcntl64, ANVIL_REHOST_FD, F_GETFD, 0, 0, 0, 0) >= 0)
        return;  /* inherited from `anvil run` */
    const char *where = anvil_getenv("ANVIL_REHOST_CONNECT");
    if (!where)
        return;
    uint8_t sockaddr[16];
    if (!parse_address(where, sockaddr)) {
        warn("anvil: rehost: ANVIL_REHOST_CONNECT=", where, " is not ADDRESS:PORT (IPv4); records dropped\n");
        return;
    }
    long fd = anvil_syscall(SYS_socket, AF_INET, SOCK_STREAM, 0, 0, 0, 0);
    long got = fd < 0 ? fd : -EINTR;
    while (fd >= 0 && got == -EINTR)
        got = anvil_syscall(SYS_connect, fd, (long)sockaddr, sizeof sockaddr, 0, 0, 0);
    if (got < 0) {
        warn("anvil: rehost: cannot connect to ", where, "; records dropped\n");
    } else if (fd != ANVIL_REHOST_FD) {
        anvil_syscall(SYS_dup2, fd, ANVIL_REHOST_FD, 0, 0, 0, 0);
    }
    if (fd >= 0 && fd != ANVIL_REHOST_FD)
        anvil_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
}

