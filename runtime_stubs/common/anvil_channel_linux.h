/* ReHost channel on Linux (ARM and x86-64 alike): how the communicator's (anvil_comm.c)
 * bytes leave the program. Included by each ISA's anvil_channel.c, which defines the system
 * call numbers (a .h: the compile cache hashes the headers).
 *
 * `anvil run` gives the program a SOCK_SEQPACKET connection to a socket it listens on, as
 * file descriptor ANVIL_REHOST_FD. The communicator learns that socket's path from it
 * (getpeername), maps the file beside it ("process") over a page of its own, and closes
 * the descriptor before the program's first instruction: from then on it holds no
 * descriptor while the program runs, and connects anew for each send (above the
 * program's descriptors, closed on exec, closed again when the bytes have gone). A
 * program that lists, counts or closes its descriptors finds what it finds without
 * instrumentation (docs/decisions/0126-a-channel-without-a-descriptor.md). The mapping is
 * how `anvil run` knows which processes may still send: every process the program forks
 * inherits it, an exec drops it, and the program cannot close it. Sends use MSG_NOSIGNAL,
 * so a vanished reader never kills the program.
 *
 * Any other inherited descriptor ANVIL_REHOST_FD (an unnamed socket, a file: a test's
 * capture, an older `anvil run`) is written for the whole run, closed on exec. When the
 * program did not inherit one and its environment has ANVIL_REHOST_CONNECT=a.b.c.d:port,
 * the communicator connects a TCP socket there (`anvil rehost-listen` on the host) and
 * moves it to ANVIL_REHOST_FD, so the program's own descriptors are numbered as without
 * instrumentation. Without a channel the program runs and the records are dropped (one
 * line on stderr when a connection was asked for and failed).
 *
 * A child the program forks has a stream of its own. Its first message is a fork hello
 * (FORK_MAGIC, the pid whose stream it was writing, its own pid, the bytes of that stream
 * sent by the fork); the host gives the child a session of its own that starts with those
 * bytes of its parent's stream, so its analysis goes on from its parent's state at the
 * fork, as an InHost child's counts do (docs/decisions/0031-forked-children-in-rehost.md).
 * The records in the ring at the fork go into both streams: both processes flush their
 * copy. `anvil run` learns each connection's (or on an inherited SOCK_SEQPACKET socket, each
 * message's) process from the kernel; on a TCP connection this program made
 * (ANVIL_REHOST_CONNECT) the child connects one of its own. On any other channel (an
 * inherited byte stream, a file) the child sends nothing: its bytes would break into its
 * parent's stream. */
#include "anvil_rt.h"

#define AF_UNIX 1
#define AF_INET 2
#define SOCK_STREAM 1
#define F_GETFD 1
#define F_SETFD 2
#define FD_CLOEXEC 1
#define SOL_SOCKET 1
#define SO_TYPE 3
#define SOCK_SEQPACKET 5
#define SOCK_CLOEXEC 02000000
#define O_CLOEXEC 02000000
#define F_DUPFD_CLOEXEC 1030
#define SO_SNDBUF 7
#define SHUT_WR 1
#define PROT_READ 1
#define MAP_PRIVATE 2
#define MAP_FIXED 0x10
#define PAGE 4096
#define MSG_NOSIGNAL 0x4000
#define EINTR 4
#define EAGAIN 11
#define EMFILE 24
#define RLIMIT_NOFILE 7
#define ENOTSOCK 88

#define ANVIL_REHOST_FD 1000
#define FORK_MAGIC 0x4B464E41u /* "ANFK" */
#define MAX_MESSAGE 65536u     /* a SOCK_SEQPACKET message must fit the socket's buffer whole */
#define SEND_BUFFER (4 << 20)  /* bytes a connection may hold unread: the program waits less often */
#define MARKER "process"       /* the file beside `anvil run`'s socket that every process maps */
static int channel_ok = 1;
static long channel_fd = ANVIL_REHOST_FD;
static int use_write;
static int messages;       /* the channel keeps messages apart: a forked child goes on on it */
static int reconnect;      /* the channel is a TCP connection made here: a forked child makes its own */
static uint8_t remote[16]; /* where that connection goes */
static long channel_pid;   /* the process whose stream this one writes */
static uint64_t sent;      /* bytes of that stream sent so far */
static int by_address;     /* connect to ``listener`` for each send; no descriptor held between */
static struct {
    uint16_t family;
    char path[108];
} listener;                /* `anvil run`'s socket (a struct sockaddr_un) */
static uint32_t listener_size;
/* Where the marker file is mapped: the page-aligned page inside this, the runtime's own,
 * so that the program's address space is laid out as before (no mapping of a new place).
 * (Not an aligned array: the region's size must not depend on where it is placed.) */
static char marker_area[2 * PAGE];

/* ``len`` bytes, whole; 0 when the channel has failed. */
static int send_all(const char *p, uint32_t len)
{
    while (len && channel_ok) {
        uint32_t piece = messages && len > MAX_MESSAGE ? MAX_MESSAGE : len;
        long n;
        if (use_write)
            n = anvil_syscall(SYS_write, channel_fd, (long)p, piece, 0, 0, 0);
        else
            n = anvil_syscall(SYS_sendto, channel_fd, (long)p, piece, MSG_NOSIGNAL, 0, 0);
        if (n == -ENOTSOCK && !use_write) {
            use_write = 1;
            continue;
        }
        if (n == -EINTR || n == -EAGAIN)
            continue;
        if (n <= 0) {
            channel_ok = 0;  /* no reader: the program goes on; the host sees a stream without its end */
            return 0;
        }
        p += n;
        len -= (uint32_t)n;
        sent += (uint64_t)n;
    }
    return channel_ok;
}

/* A TCP connection to ``remote`` on ANVIL_REHOST_FD (in place of the one there, if any);
 * 0 if none could be made. */
static int connect_channel(void)
{
    long fd = anvil_syscall(SYS_socket, AF_INET, SOCK_STREAM, 0, 0, 0, 0);
    long got = fd < 0 ? fd : -EINTR;
    while (fd >= 0 && got == -EINTR)
        got = anvil_syscall(SYS_connect, fd, (long)remote, sizeof remote, 0, 0, 0);
    if (got >= 0 && fd != ANVIL_REHOST_FD)
        anvil_syscall(SYS_dup2, fd, ANVIL_REHOST_FD, 0, 0, 0, 0);
    if (fd >= 0 && fd != ANVIL_REHOST_FD)
        anvil_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
    if (got >= 0)
        anvil_syscall(SYS_fcntl, ANVIL_REHOST_FD, F_SETFD, FD_CLOEXEC, 0, 0, 0);
    return got >= 0;
}

/* In a forked child, before its first bytes: its own channel, or none. */
static void start_child_stream(long pid)
{
    if (!messages && !(reconnect && connect_channel())) {
        channel_ok = 0;
        return;
    }
    uint32_t hello[5] = {FORK_MAGIC, (uint32_t)channel_pid, (uint32_t)pid, (uint32_t)sent, (uint32_t)(sent >> 32)};
    channel_pid = pid;
    if (send_all((const char *)hello, sizeof hello))
        sent = 0;  /* the hello is not part of the stream */
}

/* A socket for a send while every descriptor the program may have is in use (it opened
 * up to RLIMIT_NOFILE and has not yet freed any): the held channel survived that, so a
 * send must too. The limit goes up by one for the socket and straight back (a descriptor
 * above the limit stays valid): another of the program's threads could see the room in
 * that instant, nothing else. The hard limit too where it is the soft one, which only a
 * privileged process may raise; elsewhere none: < 0. */
static long socket_past_limit(void)
{
    struct {
        uint64_t cur, max;
    } old, more;
    if (anvil_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&old, 0, 0) < 0 || old.cur == (uint64_t)-1)
        return -EMFILE;
    more.cur = old.cur + 1;
    more.max = old.max > old.cur ? old.max : more.cur;
    if (anvil_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&more, 0, 0, 0) < 0)
        return -EMFILE;
    long fd = anvil_syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, 0, 0, 0);
    anvil_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&old, 0, 0, 0);
    return fd;
}

/* A connection to ``listener`` above the program's descriptors; < 0 when none could be made. */
static long connect_listener(void)
{
    long fd = anvil_syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, 0, 0, 0);
    if (fd == -EMFILE)
        fd = socket_past_limit();
    if (fd < 0)
        return fd;
    /* The lowest free number is the program's next: another of its threads opening a file
     * meanwhile would get another one. */
    long high = anvil_syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, ANVIL_REHOST_FD, 0, 0, 0);
    if (high >= 0) {
        anvil_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
        fd = high;
    }
    int size = SEND_BUFFER;
    anvil_syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_SNDBUF, (long)&size, sizeof size, 0);
    long got;
    do  /* (a flush runs with signals blocked; the end's sends may not) */
        got = anvil_syscall(SYS_connect, fd, (long)&listener, listener_size, 0, 0, 0);
    while (got == -EINTR);
    if (got < 0) {
        anvil_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
        return got;
    }
    return fd;
}

void anvil_channel_send(const void *data, uint32_t len)
{
    if (!channel_ok)
        return;
    if (by_address) {
        channel_fd = connect_listener();
        if (channel_fd < 0) {
            channel_ok = 0;  /* `anvil run` has gone (or the program may no longer connect): records dropped */
            return;
        }
    }
    long pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    if (pid != channel_pid)
        start_child_stream(pid);
    send_all(data, len);
    if (by_address) {
        /* The end of the connection for every copy: a child another thread forks meanwhile
         * holds one until it ends, and `anvil run` reads a connection to its end. */
        anvil_syscall(SYS_shutdown, channel_fd, SHUT_WR, 0, 0, 0, 0);
        anvil_syscall(SYS_close, channel_fd, 0, 0, 0, 0, 0);
    }
}

/* Whether the inherited channel is a connection to a socket with a path beside which the
 * marker file can be mapped; if so, from now on each send connects there (``by_address``). */
static int learn_address(void)
{
    listener_size = sizeof listener;
    if (anvil_syscall(SYS_getpeername, ANVIL_REHOST_FD, (long)&listener, (long)&listener_size, 0, 0, 0) < 0 ||
        listener.family != AF_UNIX || listener_size <= 2 || listener_size > sizeof listener || !listener.path[0])
        return 0;  /* unnamed (a socket pair) or abstract: written as it is */
    char marker[sizeof listener.path + sizeof MARKER];
    uint32_t n = listener_size - 2, slash = 0;
    for (uint32_t i = 0; i < n && listener.path[i]; i++)
        if (listener.path[i] == '/')
            slash = i + 1;
    for (uint32_t i = 0; i < slash; i++)
        marker[i] = listener.path[i];
    for (uint32_t i = 0; i < sizeof MARKER; i++)
        marker[slash + i] = MARKER[i];
    long fd = anvil_syscall(SYS_open, (long)marker, O_CLOEXEC, 0, 0, 0, 0);  /* (read only) */
    if (fd < 0)
        return 0;
    long page = ((long)marker_area + PAGE - 1) & -PAGE;
    long at = anvil_syscall(SYS_mmap, page, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    anvil_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
    return at == page;
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
    channel_pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    if (anvil_syscall(SYS_fcntl, ANVIL_REHOST_FD, F_GETFD, 0, 0, 0, 0) >= 0) {  /* inherited */
        /* Not passed on to the programs it runs: a command it leaves running in the
         * background (`system("daemon &")`, gpg's agent) would hold the channel open, and
         * `anvil run` would wait for it to end. Its forked children keep it. */
        anvil_syscall(SYS_fcntl, ANVIL_REHOST_FD, F_SETFD, FD_CLOEXEC, 0, 0, 0);
        int type = 0;
        uint32_t size = sizeof type;
        messages = anvil_syscall(SYS_getsockopt, ANVIL_REHOST_FD, SOL_SOCKET, SO_TYPE, (long)&type, (long)&size,
                                 0) == 0 && type == SOCK_SEQPACKET;
        if (messages && learn_address()) {
            anvil_syscall(SYS_close, ANVIL_REHOST_FD, 0, 0, 0, 0, 0);
            by_address = 1;
        }
        return;
    }
    const char *where = anvil_getenv("ANVIL_REHOST_CONNECT");
    if (!where)
        return;
    if (!parse_address(where, remote)) {
        warn("anvil: rehost: ANVIL_REHOST_CONNECT=", where, " is not ADDRESS:PORT (IPv4); records dropped\n");
        return;
    }
    reconnect = connect_channel();
    if (!reconnect)
        warn("anvil: rehost: cannot connect to ", where, "; records dropped\n");
}
