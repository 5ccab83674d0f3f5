/* The end before an exec and the C library's symbol lookup, of the Linux runtimes
 * (arm/anvil_rt.c, x86_64/anvil_rt.c), included by each after it defines SYS_clone,
 * SYS_wait4, SYS_getpid, SYS_exit_group and its ``static long start_pid`` (a .h: the
 * compile cache hashes the headers). */

/* Before an exec (decisions 0101, 0123): the process becomes another program and no exit
 * runs, so the results are written now, as at the end. By a forked copy of the process,
 * which writes them and exits while this one waits: the end changes what it reads (derived
 * counts go into their slots, files are closed), and should the exec fail the program goes
 * on counting in the memory it had, and its own end writes the results again (the sink
 * cuts what the copy wrote: anvil_sink_copy_ended). The copy takes this process's place
 * for the results' names (start_pid). ReHost: the end itself (the stream is this
 * process's; records after a failed exec are dropped). Only in the process the program
 * started as: a forked child (a vfork child shares its parent's memory, the runtime's
 * state with it) keeps the children's rule, results at its exit. */
__attribute__((weak)) int anvil_records_to_host(void) { return 0; }
void anvil_sink_copy_ended(void);

static void end_before_exec(void)
{
    if (anvil_forked_child())
        return;
    if (anvil_records_to_host()) {
        anvil_program_end();
        return;
    }
    /* fork (SIGCHLD at its exit: qemu-user's fork needs it; a SIGCHLD handler of the
     * program finds the copy already reaped) */
    long pid = anvil_syscall(SYS_clone, 17 /* SIGCHLD */, 0, 0, 0, 0, 0);
    if (pid == 0) {
        start_pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
        anvil_program_end();
        anvil_syscall(SYS_exit_group, 0, 0, 0, 0, 0, 0);
    }
    if (pid > 0) {
        int status;
        while (anvil_syscall(SYS_wait4, pid, (long)&status, 0x40000000 /* __WALL */, 0, 0, 0) == -4 /* EINTR */)
            ;
        anvil_sink_copy_ended();
    } else {
        anvil_program_end();  /* no copy could be made: the end here (a failed exec loses the rest) */
    }
}

/* Whether ``path``'s last part starts "libc.so" (glibc's "libc.so.6", musl's "libc.so"). */
static inline int names_c_library(const char *path)
{
    const char *base = path;
    for (const char *c = path; c && *c; c++)
        if (*c == '/')
            base = c + 1;
    static const char want[] = "libc.so";
    for (uint32_t k = 0; k < sizeof want - 1; k++)
        if (!base || base[k] != want[k])
            return 0;
    return 1;
}

/* The symbol ``name`` in a library's dynamic symbol table (``symtab``, entries of
 * ``sym_size`` bytes, st_name first; ``strtab``), found through its GNU hash table
 * (``gnu``, bloom words of ``bloom_bytes``) or else its SysV one (``sysv``): the dynamic
 * linker's own way (the table does not say how many symbols there are). 0 if none. */
static const uint8_t *hashed_symbol(const uint32_t *gnu, const uint32_t *sysv, const uint8_t *symtab,
                                    const char *strtab, uint32_t sym_size, uint32_t bloom_bytes, const char *name)
{
    if (gnu) {
        uint32_t hash = 5381;
        for (const char *c = name; *c; c++)
            hash = hash * 33 + (uint8_t)*c;
        uint32_t nbuckets = gnu[0], first = gnu[1], bloom_words = gnu[2];
        const uint32_t *buckets = gnu + 4 + bloom_words * (bloom_bytes / 4), *chain = buckets + nbuckets;
        for (uint32_t i = nbuckets ? buckets[hash % nbuckets] : 0; i >= first && i; i++) {
            const uint8_t *sym = symtab + sym_size * i;
            if ((chain[i - first] | 1) == (hash | 1) && anvil_streq(strtab + *(const uint32_t *)sym, name))
                return sym;
            if (chain[i - first] & 1)
                break;
        }
    } else if (sysv) {
        uint32_t hash = 0;
        for (const char *c = name; *c; c++) {
            hash = (hash << 4) + (uint8_t)*c;
            hash = (hash ^ ((hash & 0xf0000000u) >> 24)) & 0x0fffffffu;
        }
        uint32_t nbucket = sysv[0];
        const uint32_t *bucket = sysv + 2, *chain = bucket + nbucket;
        for (uint32_t i = nbucket ? bucket[hash % nbucket] : 0; i; i = chain[i]) {
            const uint8_t *sym = symtab + sym_size * i;
            if (anvil_streq(strtab + *(const uint32_t *)sym, name))
                return sym;
        }
    }
    return 0;
}
