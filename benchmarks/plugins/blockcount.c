/*
 * blockcount.c - a QEMU TCG plugin that counts the executions of every translation block:
 * at exit it writes where the executable's code was loaded ("start_code 0x..." and
 * "end_code 0x...", as -d page says it) and one line per block that ran, "<guest address,
 * hex> <instructions> <executions>", to the file its argument "out=PATH" names (default
 * blockcount.txt).
 *
 * The code's bounds come from the plugin, not from -d page: that log is a file QEMU keeps
 * open while the program runs, a descriptor the program sees in /proc/self/fd (findutils'
 * xargs walks its descriptors at start, and ran 169 instructions more under -D: decision
 * 0119).
 *
 * One inline add per block, no callback: a run costs about what QEMU's own inline
 * instruction-count plugin costs, so whole corpus workloads are counted exactly, per
 * address, which benchmarks/corpus.py --qemu-counts compares with inscount's results
 * (the executable's blocks are those between -d page's start_code and end_code).
 * Built by benchmarks/qemu_plugins.py against the qemu-plugin.h of the installed qemu.
 */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

typedef struct {
    uint64_t address;
    uint64_t instructions;
    uint64_t executions;  /* added to inline by the translated code */
} Block;

static GPtrArray *blocks;
static GMutex lock;
static char out_path[4096] = "blockcount.txt";

static void on_translation(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    Block *block = g_new0(Block, 1);
    block->address = qemu_plugin_tb_vaddr(tb);
    block->instructions = qemu_plugin_tb_n_insns(tb);
    g_mutex_lock(&lock);
    g_ptr_array_add(blocks, block);  /* a block translated again gets an entry of its own */
    g_mutex_unlock(&lock);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &block->executions, 1);
}

static void write_counts(qemu_plugin_id_t id, void *unused)
{
    FILE *out = fopen(out_path, "w");
    if (out == NULL)
        return;
    fprintf(out, "start_code 0x%llx\nend_code 0x%llx\n", (unsigned long long)qemu_plugin_start_code(),
            (unsigned long long)qemu_plugin_end_code());
    for (guint i = 0; i < blocks->len; i++) {
        const Block *block = g_ptr_array_index(blocks, i);
        if (block->executions)
            fprintf(out, "%llx %llu %llu\n", (unsigned long long)block->address,
                    (unsigned long long)block->instructions, (unsigned long long)block->executions);
    }
    fclose(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], "out=", 4) == 0)
            g_strlcpy(out_path, argv[i] + 4, sizeof out_path);
    blocks = g_ptr_array_new();
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translation);
    qemu_plugin_register_atexit_cb(id, write_counts, NULL);
    return 0;
}
