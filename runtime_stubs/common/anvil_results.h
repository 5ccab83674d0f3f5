/* The results files of the Linux runtimes (arm/anvil_rt.c, x86_64/anvil_rt.c), included by
 * each where these functions belong, after it defines: start_dir (the directory the
 * program started in), ANVIL_SYS_FCNTL (fcntl's number), ANVIL_O_EXTRA (the open flag each
 * platform adds) and ANVIL_PREAD(fd, buffer, length, offset) (pread64, as the platform's
 * system call takes a 64-bit offset). */
#define RESULTS_FD_MIN 1001

#define F_DUPFD_CLOEXEC 1030

/* A forked child writes its results beside its parent's, to ``path.<pid>`` (as
 * valgrind's %p): the parent's file stays the parent's whichever exits last. A relative
 * path names a file in the directory the program started in, wherever it has gone since
 * (a program that changes directory wrote its counts there, and ``anvil run`` found none). */
static int open_results_of(const char *path, long flags, long child)
{
    static char named[sizeof start_dir + 512];
    uint32_t n = 0;
    if (path[0] != '/' && start_dir[0]) {
        while (start_dir[n])
            named[n] = start_dir[n], n++;
        named[n++] = '/';
    }
    for (uint32_t k = 0; path[k] && n < sizeof named - 22; k++)
        named[n++] = path[k];
    if (child) {
        named[n++] = '.';
        n += (uint32_t)anvil_decimal(named + n, (uint64_t)child);
    }
    named[n] = 0;
    path = named;
    long fd = anvil_syscall(SYS_open, (long)path, flags, 0644, 0, 0, 0);
    if (fd < 0)
        return (int)fd;
    long high = anvil_syscall(ANVIL_SYS_FCNTL, fd, F_DUPFD_CLOEXEC, RESULTS_FD_MIN, 0, 0, 0);
    if (high < 0)  /* a table smaller than that (ulimit -n): where it was */
        return (int)fd;
    anvil_close((int)fd);
    return (int)high;
}

/* This process's results file (``path``, or ``path.<pid>`` in a forked child). */
static int open_results(const char *path, long flags) { return open_results_of(path, flags, anvil_forked_child()); }

/* O_RDWR: a child forked later reads what was written before the fork (below); O_CLOEXEC */
int anvil_open_write(const char *path) { return open_results(path, 02 | 0100 | 01000 | ANVIL_O_EXTRA); }

/* The same file again, to write on at its end: a program that closes every descriptor
 * (closefrom) closed the one it had. */
int anvil_reopen_write(const char *path) { return open_results(path, 02 | 02000 | ANVIL_O_EXTRA); }

/* The results file of process ``owner`` (anvil_forked_child's value there: 0 for the
 * process the program started as), to write on at its end: the sink holds no descriptor
 * between its writes (anvil_target.c), and a child forked since reads its parent's file
 * by its parent's name. */
int anvil_reopen_write_of(const char *path, long owner)
{
    return open_results_of(path, 02 | 02000 | ANVIL_O_EXTRA, owner);
}

/* A child forked after its parent opened a results file (a tool that writes as the program
 * runs: memtrace's trace) shares the file and the offset with it, and holds a copy of the
 * parent's buffer: both would write into the one file, the records made before the fork
 * twice. So on its first write the child opens a file of its own (path.<pid>, as the
 * results of a child's other tools) and copies into it what the parent had written at the
 * fork (``written``: the child's memory is the parent's as it was then, and the parent
 * only appends), then writes its buffer (the rest of the parent's records up to the fork)
 * and its own records: the parent's results up to the fork, then the child's, as a ReHost
 * session of a forked child begins with its parent's stream. */
int anvil_output_of_this_process(int fd, const char *path, long *owner, uint64_t written)
{
    static char copying[4096];
    long me = anvil_forked_child();
    if (me == *owner || fd < 0)
        return fd;
    int own = anvil_open_write(path);
    for (uint64_t at = 0; own >= 0 && at < written;) {
        uint32_t want = written - at < sizeof copying ? (uint32_t)(written - at) : sizeof copying;
        long got = ANVIL_PREAD(fd, copying, want, at);
        if (got <= 0)
            break;
        for (long done = 0; done < got;) {
            long n = anvil_write_fd(own, copying + done, (uint32_t)(got - done));
            if (n <= 0)
                break;
            done += n;
        }
        at += (uint64_t)got;
    }
    anvil_close(fd);
    *owner = me;
    return own;
}
