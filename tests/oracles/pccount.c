/*
 * pccount.c - a QEMU TCG plugin that counts the executions of every guest instruction
 * address, for the tests' instruction oracle (tests/oracles/qemu_trace.py, decision 0155).
 *
 * It gives the counts `qemu-arm -singlestep -d exec,nochain` gives (one per instruction
 * entered), without QEMU's log: QEMU writes that log one write() per executed
 * instruction, which costs a hundred times the program's own run.
 *
 * The counts live in a file the plugin maps shared (argument "out=PATH"), not in the
 * plugin's memory written out at exit, because QEMU 7.2 calls no plugin at exit in every
 * case the log covers:
 *   - a program killed by a signal (SIGSEGV, abort, an unhandled SIGUSR1) ends in QEMU's
 *     dump_core_and_abort, which runs no plugin exit callback (decision 0119);
 *   - a process that calls execve is replaced without exiting;
 *   - the child of a fork inherits the parent's memory: counts kept in the plugin's own
 *     memory would count the parent's instructions before the fork twice, once in each.
 * A MAP_SHARED mapping is shared across fork and outlives every way a process ends: each
 * count is in the file the moment it is made. The descriptor is closed once the file is
 * mapped, so the program does not find it in /proc/self/fd (QEMU's -D log is found there,
 * decision 0119).
 *
 * Layout (host-endian 64-bit words): a header of 8 words (magic, capacity in slots, slots
 * used, overflow flag, start_code, end_code, two spare), then slots of two words each:
 * the instruction's guest address and its executions. Each translation of an instruction
 * takes a slot of its own (a block translated again, in one process or in a forked child,
 * takes new slots), so the reader sums the slots of each address. A full table sets the
 * overflow flag and counts no more: the reader then traces with the log instead.
 *
 * Each instruction gets a callback that adds one atomically before it runs: an
 * instruction that faults is counted, and counted again when it runs again after a
 * signal handler, as the log counts it (the log shows a block when it is entered). The
 * add is atomic because in qemu-user every guest thread is a vCPU of its own and a
 * forked child shares the table, and QEMU 7.2's inline adds are plain adds that lose
 * updates under concurrency (per-vCPU scoreboards came in QEMU 9.0). Per instruction, not
 * per block times the block's instructions: a block that faults in its middle has run its
 * first instructions only.
 *
 * Built by tests/oracles/qemu_trace.py through benchmarks/qemu_plugins.py against the
 * qemu-plugin.h of the installed qemu's Debian source.
 */
#include <fcntl.h>
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* "ANVILPC1" read as a little-endian word: the reader checks it. */
#define MAGIC 0x3143504c49564e41ULL
/* 16 M slots (256 MiB, a sparse file: only the pages used take space). The largest
 * programs the tests trace translate a few hundred thousand instructions. */
#define DEFAULT_CAPACITY (1ULL << 24)

typedef struct {
    uint64_t magic;
    uint64_t capacity;
    uint64_t used;      /* slots taken: atomic, a forked child takes slots too */
    uint64_t overflow;  /* set when a translation found no free slot */
    uint64_t start_code;
    uint64_t end_code;
    uint64_t spare[2];
} Header;

typedef struct {
    uint64_t address;
    uint64_t executions;
} Slot;

static Header *header;
static Slot *slots;

static void on_execution(unsigned int vcpu_index, void *counter)
{
    __atomic_fetch_add((uint64_t *)counter, 1, __ATOMIC_RELAXED);
}

static void on_translation(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    if (header->start_code == 0) {
        /* Known once the executable is loaded, which is after the plugin is installed:
         * the first translation is the first time it can be read. */
        header->end_code = qemu_plugin_end_code();
        header->start_code = qemu_plugin_start_code();
    }
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t first = __atomic_fetch_add(&header->used, n, __ATOMIC_RELAXED);
    if (first + n > header->capacity) {
        __atomic_store_n(&header->overflow, 1, __ATOMIC_RELAXED);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        Slot *slot = &slots[first + i];
        slot->address = qemu_plugin_insn_vaddr(insn);
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_execution, QEMU_PLUGIN_CB_NO_REGS, &slot->executions);
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    const char *path = NULL;
    uint64_t capacity = DEFAULT_CAPACITY;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0)
            path = argv[i] + 4;
        else if (strncmp(argv[i], "slots=", 6) == 0)
            capacity = g_ascii_strtoull(argv[i] + 6, NULL, 10);
        else {
            fprintf(stderr, "pccount: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (path == NULL || capacity == 0) {
        fprintf(stderr, "pccount: needs out=PATH (and slots=N > 0 if given)\n");
        return -1;
    }
    size_t size = sizeof(Header) + capacity * sizeof(Slot);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror("pccount: out");
        return -1;
    }
    void *table = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (table == MAP_FAILED) {
        perror("pccount: mmap");
        return -1;
    }
    header = table;
    slots = (Slot *)(header + 1);
    header->capacity = capacity;
    header->magic = MAGIC;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translation);
    return 0;
}
