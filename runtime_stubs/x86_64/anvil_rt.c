/* The runtime of an instrumented x86-64 Linux program (InHost): system calls, the results
 * file, the program's start (anvil_start, called by the loader stub once the region is
 * mapped) and its end (anvil_program_end, generated with the site unit: from the exit
 * system calls of the copied code through anvil_exit_entry, and from the C library's
 * exit through the function the program was given to run last, anvil_fini). */
#include "anvil_rt.h"

#define SYS_write 1
#define SYS_open 2
#define SYS_close 3
#define SYS_lseek 8
#define SYS_pread64 17
#define SYS_getpid 39
#define SYS_exit 60
#define SYS_fcntl 72
#define SYS_ftruncate 77
#define SYS_getcwd 79
#define SYS_exit_group 231
#define SYS_rt_sigaction 13
#define SYS_rt_sigprocmask 14
#define SYS_gettid 186
#define SYS_tgkill 234
#define SYS_rt_tgsigqueueinfo 297
#define SIG_UNBLOCK 1
#define SA_RESETHAND 0x80000000ul
#define SA_RESTORER 0x04000000ul
/* x86-64's kernel returns from a handler only through the restorer it is given. */
#define ANVIL_SIGNAL_RESTORER anvil_signal_restorer

anvil_word anvil_bias __attribute__((section(".data"))) = 0;

void anvil_program_end(void);

#define ANVIL_WRAPS_HANDLERS
#include "anvil_fatal_signals.h"  /* (a .h: the compile cache hashes the headers) */

long anvil_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long result;
    __asm__ volatile("syscall" : "=a"(result) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return result;
}

void anvil_warn(const char *text)
{
    uint32_t n = 0;
    while (text[n])
        n++;
    anvil_syscall(SYS_write, 2, (long)text, n, 0, 0, 0);
}

static const char *const *environment __attribute__((section(".data")));
static long start_pid __attribute__((section(".data")));
static char start_dir[4096];
/* The function the program's start code registers to run at exit (the dynamic linker's
 * fini, in rdx at the entry; 0 in a static program): anvil_fini runs in its place. */
static void (*program_fini)(void) __attribute__((section(".data")));

const char *anvil_getenv(const char *name)
{
    for (const char *const *e = environment; e && *e; e++) {
        const char *v = *e;
        uint32_t k = 0;
        while (name[k] && v[k] == name[k])
            k++;
        if (!name[k] && v[k] == '=')
            return v + k + 1;
    }
    return 0;
}

long anvil_forked_child(void)
{
    long pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    return pid == start_pid ? 0 : pid;
}

/* At exit, after what the program registered (and, dynamic, after the dynamic linker's
 * fini, which runs the program's own destructors): the results, complete. */
void anvil_fini(void)
{
    if (program_fini)
        program_fini();
    anvil_program_end();
}

/* One jump written over the original code (link address, its bytes). ``length``'s top bit
 * (PATCH_IN_WRITABLE): the jump is in a segment the program may also write (a linker script
 * that puts .text after .data makes one), whose pages keep that right. */
struct anvil_patch {
    uint64_t address;
    uint8_t length;
    uint8_t bytes[7];
};
#define PATCH_IN_WRITABLE 0x80

#define SYS_mprotect 10
#define PAGE 4096ul

/* Make [low, high) writable, write the patches from ``first`` to before ``end`` into it,
 * and give it back the rights it had: read and execute (it is code), and write where its
 * segment is writable too (a run does not mix the two); whether mprotect allowed it. */
static int write_run(const struct anvil_patch *first, const struct anvil_patch *end, anvil_word bias,
                     anvil_word low, anvil_word high)
{
    if (anvil_syscall(SYS_mprotect, (long)low, (long)(high - low), 7, 0, 0, 0) < 0)
        return 0;
    for (const struct anvil_patch *p = first; p < end; p++) {
        uint8_t *at = (uint8_t *)(p->address + bias);
        for (uint32_t b = 0; b < (p->length & ~PATCH_IN_WRITABLE); b++)
            at[b] = p->bytes[b];
    }
    if (!(first->length & PATCH_IN_WRITABLE))
        anvil_syscall(SYS_mprotect, (long)low, (long)(high - low), 5, 0, 0, 0);
    return 1;
}

/* The jumps over the original code's entries, written now that the region they lead to is
 * mapped: until now the original code ran as it is (a library's initialiser may call into
 * the program before its entry). ``table``: a count, then the patches in address order.
 * They are written a run of pages at a time, a run ending where a page holds no patch: a
 * program's code may lie in several segments with unmapped pages or data between them
 * (node's .init/.plt, .text and a segment of its own, all at fixed addresses), and one
 * mprotect over all of them fails on the hole (or would make the data executable). */
static void write_patches(const uint64_t *table, anvil_word bias)
{
    uint64_t count = table[0];
    const struct anvil_patch *patches = (const struct anvil_patch *)(table + 1);
    const struct anvil_patch *first = patches;
    anvil_word low = 0, high = 0;
    for (uint64_t k = 0; k <= count; k++) {
        anvil_word start = 0, end = 0;
        if (k < count) {
            start = (patches[k].address + bias) & ~(PAGE - 1);
            end = (patches[k].address + bias + (patches[k].length & ~PATCH_IN_WRITABLE) + PAGE - 1) & ~(PAGE - 1);
            /* on the run's last page or the next, with the same rights: the same run */
            if (k > 0 && start <= high && ((patches[k].length ^ first->length) & PATCH_IN_WRITABLE) == 0) {
                if (end > high)
                    high = end;
                continue;
            }
        }
        if (k > 0 && !write_run(first, patches + k, bias, low, high)) {
            anvil_warn("anvil: cannot write the jumps into the instrumented code: part of it runs uninstrumented\n");
        }
        first = patches + k;
        low = start;
        high = end;
    }
}

#define AT_HWCAP2 26
#define HWCAP2_FSGSBASE 2
/* Whether the processor and the kernel let the program read its fs base (rdfsbase). */
static uint8_t fs_base_readable __attribute__((section(".data")));

#define SYS_mmap 9
#define SYS_arch_prctl 158
#define ARCH_SET_GS 0x1001

/* Each thread's own copy of the counters, in a Go program (decision 0121; 0: none): the
 * rewriter writes here the distance from this variable to the arrays' span, the span's
 * length and the distance to a table of the arrays in it (a count, then offset and length
 * in bytes of each). The copied code adds to gs:[offset]; gs points at the span for the
 * first thread, at a copy of its own for each thread that enters runtime.mstart. */
long anvil_thread_counters[3] __attribute__((section(".data")));
/* The threads' copies (each 16 bytes after a word naming the next one). */
static uint8_t *thread_copies __attribute__((section(".data")));

/* As a thread enters runtime.mstart (anvil_thread_counters_entry): a zeroed copy of the
 * counters of its own; where none can be had, it goes on adding to its parent's. */
void anvil_thread_counters_start(void)
{
    long span = anvil_thread_counters[1];
    if (!span)
        return;
    long at = anvil_syscall(SYS_mmap, 0, span + 16, 3 /* read, write */, 0x22 /* private, anonymous */, -1, 0);
    if ((unsigned long)at > -4096ul)
        return;
    uint8_t *copy = (uint8_t *)at + 16;
    uint8_t *head = __atomic_load_n(&thread_copies, __ATOMIC_RELAXED);
    do
        *(uint8_t **)at = head;
    while (!__atomic_compare_exchange_n(&thread_copies, &head, copy, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    anvil_syscall(SYS_arch_prctl, ARCH_SET_GS, (long)copy, 0, 0, 0, 0);
}

/* Before the counts are read (anvil_derive_counts): the threads' copies added into the
 * arrays, each once. */
void anvil_gather_counts(void)
{
    if (!anvil_thread_counters[1])
        return;
    uint8_t *arrays = (uint8_t *)anvil_thread_counters + anvil_thread_counters[0];
    const uint32_t *table = (const uint32_t *)((const uint8_t *)anvil_thread_counters + anvil_thread_counters[2]);
    for (uint8_t *copy = __atomic_exchange_n(&thread_copies, 0, __ATOMIC_ACQUIRE); copy;
         copy = *(uint8_t **)(copy - 16))
        for (uint32_t k = 0; k < table[0]; k++)
            for (uint32_t b = 0; b < table[2 + 2 * k]; b += 8)
                *(uint64_t *)(arrays + table[1 + 2 * k] + b) += *(const uint64_t *)(copy + table[1 + 2 * k] + b);
}
/* The C code's own stacks in a Go program (anvil_entry.S own_stack): 64 slices of 16 KiB,
 * mapped at the start, and which are in use (a bit each). 0: the program's stack. */
#define ANVIL_STACK_SLICE (1ul << 14)
anvil_word anvil_stacks __attribute__((section(".data")));
uint64_t anvil_stacks_busy __attribute__((section(".data")));
extern long anvil_pc_map[3];

#define SYS_clone 56
#define SYS_wait4 61
#include "anvil_exec_end.h"  /* end_before_exec, hashed_symbol */

/* ------------------------------------------------------------ the C library's _exit */

#define AT_PHDR 3
#define AT_PHNUM 5
#define AT_BASE 7
#define AT_ENTRY 9
/* The program's own entry (link address), which the rewriter writes here: the stub took
 * its place as the ELF entry, and the kernel's auxiliary vector names the stub's. */
anvil_word anvil_program_entry __attribute__((section(".data")));
#define PT_LOAD 1
#define PT_DYNAMIC 2
#define PT_GNU_RELRO 0x6474e552
#define DT_NULL 0
#define DT_HASH 4
#define DT_STRTAB 5
#define DT_SYMTAB 6
#define DT_DEBUG 21
#define DT_GNU_HASH 0x6ffffef5
#define STT_FUNC 2
#define STT_GNU_IFUNC 10

/* The C library's _exit (glibc's _Exit, the same function), whose entry
 * hook_c_library_exit made a jump here: a library that ends the process itself (LLVM's
 * lld through llvm::sys::Process::Exit, CHICKEN's runtime: decision 0123, as decision 0077
 * on ARM) passes by the executable's end points (the dynamic linker's fini, its own calls
 * of _exit); every exit ends here, after those. The end of the process the program started
 * as (a forked child's results come at its fini or its own exits; a vfork child shares its
 * parent's memory, and would end the parent's results). */
static void c_library_exit(int status)
{
    if (!anvil_forked_child())
        anvil_program_end();
    for (;;)
        anvil_syscall(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

struct link_map_head {  /* the public start of glibc's struct link_map (<link.h>) */
    anvil_word l_addr;
    const char *l_name;
    const long *l_ld;
    const struct link_map_head *l_next;
};

/* A dynamic entry's address as a run-time address: glibc adds the load bias to those
 * entries in place where the dynamic section is writable; a bias not yet added is added. */
static anvil_word dynamic_address(anvil_word value, anvil_word l_addr)
{
    return value < l_addr ? value + l_addr : value;
}

/* Elf64_Sym of the function ``name`` a library defines, through its GNU or SysV hash table
 * (the dynamic linker's own way: the table does not say how many symbols there are), or 0. */
static const uint8_t *defined_function(const long *ld, anvil_word l_addr, const char *name)
{
    anvil_word symtab = 0, strtab = 0;
    const uint32_t *gnu = 0, *sysv = 0;
    for (const long *d = ld; d[0] != DT_NULL; d += 2) {
        if (d[0] == DT_GNU_HASH)
            gnu = (const uint32_t *)dynamic_address((anvil_word)d[1], l_addr);
        else if (d[0] == DT_HASH)
            sysv = (const uint32_t *)dynamic_address((anvil_word)d[1], l_addr);
        else if (d[0] == DT_SYMTAB)
            symtab = dynamic_address((anvil_word)d[1], l_addr);
        else if (d[0] == DT_STRTAB)
            strtab = dynamic_address((anvil_word)d[1], l_addr);
    }
    if (!symtab || !strtab)
        return 0;
    const uint8_t *found = hashed_symbol(gnu, sysv, (const uint8_t *)symtab, (const char *)strtab, 24, 8, name);
    /* st_info's type (low nibble), st_shndx (defined), st_value */
    if (!found || (found[4] & 0xf) != STT_FUNC || *(const uint16_t *)(found + 6) == 0 || !*(const uint64_t *)(found + 8))
        return 0;
    return found;
}

/* The executable's program headers (the auxiliary vector's; its ELF header is not mapped at
 * its l_addr, which is 0 in a fixed-address program) and its entry in the list of loaded
 * objects (anvil_start). */
static const uint8_t *executable_phdr;
static long executable_phnum;
static const struct link_map_head *executable_map;

/* The page-aligned start and length of the segment of type ``type`` of the loaded object
 * ``map`` that holds [from, to) (a library's ELF header is mapped at its l_addr); 0 if none
 * does. A loaded segment's last page is whole; a RELRO segment's (``end_down``) only the
 * pages below its end, which are all the dynamic linker seals. */
static int segment_span(const struct link_map_head *map, uint32_t type, int end_down, anvil_word from, anvil_word to,
                        anvil_word *first, anvil_word *span)
{
    const uint8_t *headers = executable_phdr;
    uint32_t count = (uint32_t)executable_phnum, size = 56;
    if (map != executable_map) {
        const uint8_t *ehdr = (const uint8_t *)map->l_addr;
        if (!map->l_addr || ehdr[0] != 0x7f || ehdr[1] != 'E' || ehdr[2] != 'L' || ehdr[3] != 'F')
            return 0;
        headers = ehdr + *(const uint64_t *)(ehdr + 32);
        size = *(const uint16_t *)(ehdr + 54);
        count = *(const uint16_t *)(ehdr + 56);
    }
    for (uint32_t i = 0; headers && i < count; i++) {
        const uint8_t *ph = headers + i * size;
        anvil_word start = map->l_addr + *(const uint64_t *)(ph + 16), end = start + *(const uint64_t *)(ph + 40);
        if (*(const uint32_t *)ph == type && start <= from && to <= end) {
            *first = start & ~(PAGE - 1);
            *span = ((end_down ? end : end + PAGE - 1) & ~(PAGE - 1)) - *first;
            return 1;
        }
    }
    return 0;
}

/* The first of the loaded objects (the executable), found through the executable's DT_DEBUG
 * (the dynamic linker's list of them), or 0. */
static const struct link_map_head *loaded_objects(const long *phdr, long phnum, anvil_word bias)
{
    const long *dyn = 0;
    for (long i = 0; phdr && i < phnum; i++) {
        const uint32_t *ph = (const uint32_t *)((const uint8_t *)phdr + 56 * i);
        if (ph[0] == PT_DYNAMIC)
            dyn = (const long *)(*(const uint64_t *)(ph + 4) + bias);
    }
    const struct { int version; const struct link_map_head *map; } *debug = 0;
    for (; dyn && dyn[0] != DT_NULL; dyn += 2)
        if (dyn[0] == DT_DEBUG)
            debug = (const void *)dyn[1];
    return debug ? debug->map : 0;
}

/* The C library among the loaded objects from ``map`` on, or 0. */
static const struct link_map_head *c_library(const struct link_map_head *map)
{
    for (; map; map = map->l_next)
        if (names_c_library(map->l_name) && map->l_ld)
            return map;
    return 0;
}

/* Where the C library's thread-start functions are (the first object that defines each,
 * as the dynamic linker binds them): anvil_thread_create_entry and anvil_thrd_create_entry
 * (anvil_entry.S) go on there. */
anvil_word anvil_real_pthread_create __attribute__((section(".data")));
anvil_word anvil_real_thrd_create __attribute__((section(".data")));

#define DT_RELA 7
#define DT_RELASZ 8
#define DT_JMPREL 23
#define DT_PLTRELSZ 2
#define R_X86_64_GLOB_DAT 6
#define R_X86_64_JUMP_SLOT 7

/* The dynamic section's tables of a loaded object, as run-time addresses (0: none). */
struct dynamic_tables {
    anvil_word symtab, strtab, rela, relasz, jmprel, pltrelsz;
};

static int dynamic_tables(const struct link_map_head *map, struct dynamic_tables *t)
{
    t->symtab = t->strtab = t->rela = t->relasz = t->jmprel = t->pltrelsz = 0;
    for (const long *d = map->l_ld; d && d[0] != DT_NULL; d += 2) {
        anvil_word v = (anvil_word)d[1];
        if (d[0] == DT_SYMTAB) t->symtab = dynamic_address(v, map->l_addr);
        else if (d[0] == DT_STRTAB) t->strtab = dynamic_address(v, map->l_addr);
        else if (d[0] == DT_RELA) t->rela = dynamic_address(v, map->l_addr);
        else if (d[0] == DT_RELASZ) t->relasz = v;
        else if (d[0] == DT_JMPREL) t->jmprel = dynamic_address(v, map->l_addr);
        else if (d[0] == DT_PLTRELSZ) t->pltrelsz = v;
    }
    return t->symtab && t->strtab;
}

/* The symbol name of relocation ``rela`` (Elf64_Rela) in an object's tables. */
static const char *relocation_name(const struct dynamic_tables *t, const uint64_t *rela)
{
    return (const char *)t->strtab + *(const uint32_t *)(t->symtab + 24 * (rela[1] >> 32));
}

/* The GOT slots of ``name`` in the relocations [rela, rela + size) of the object ``map``
 * are made to hold ``entry``; where ``bound`` is not 0, only those that hold it (a slot
 * still leading to the lazy binder is left to it). */
static void wrap_slots(const struct link_map_head *map, const struct dynamic_tables *t, anvil_word rela,
                       anvil_word size, const char *name, anvil_word entry, anvil_word bound)
{
    for (const uint64_t *r = (const uint64_t *)rela; r < (const uint64_t *)(rela + size / 24 * 24); r += 3) {
        uint32_t type = (uint32_t)r[1];
        if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !anvil_streq(relocation_name(t, r), name))
            continue;
        anvil_word slot = map->l_addr + r[0], first, span;
        if (bound && *(volatile anvil_word *)slot != bound)
            continue;
        int sealed = segment_span(map, PT_GNU_RELRO, 1, slot, slot + 8, &first, &span);
        if (sealed && anvil_syscall(SYS_mprotect, (long)first, (long)span, 3, 0, 0, 0) != 0)
            continue;
        *(volatile anvil_word *)slot = entry;
        if (sealed)
            anvil_syscall(SYS_mprotect, (long)first, (long)span, 1, 0, 0, 0);
    }
}

/* The function ``name`` as the dynamic linker binds it: the first loaded object's that
 * defines it, from ``objects`` on; 0 if none does. */
static anvil_word first_definition(const struct link_map_head *objects, const char *name)
{
    for (const struct link_map_head *map = objects; map; map = map->l_next) {
        const uint8_t *sym = map->l_ld ? defined_function(map->l_ld, map->l_addr, name) : 0;
        if (sym)
            return map->l_addr + *(const uint64_t *)(sym + 8);
    }
    return 0;
}

/* Every loaded object's GOT slots of the C library's function ``name`` lead to ``entry``,
 * which goes on to the function (``*real``: first_definition). The executable's PLT slots
 * only where ``executable_bound`` and bound already: its PLT entries are hooked where it
 * is rewritten, and its lazy binding's stub and PLT0, which a count includes, run as they
 * did. */
static void wrap_function(const struct link_map_head *objects, const char *name, anvil_word *real,
                          anvil_word entry, int executable_bound)
{
    if (!*real)
        *real = first_definition(objects, name);
    if (!*real)
        return;
    for (const struct link_map_head *map = objects; map; map = map->l_next) {
        struct dynamic_tables t;
        if (!dynamic_tables(map, &t))
            continue;
        if (t.jmprel && map != executable_map)
            wrap_slots(map, &t, t.jmprel, t.pltrelsz, name, entry, 0);
        else if (t.jmprel && executable_bound)
            wrap_slots(map, &t, t.jmprel, t.pltrelsz, name, entry, *real);
        if (t.rela)
            wrap_slots(map, &t, t.rela, t.relasz, name, entry, 0);
    }
}

/* Whether the program's handlers are wrapped (decision 0143; not in a Go program), and the
 * slots that lead its signal-action calls to the runtime (below, with the wrapper). */
static uint8_t wrap_handlers __attribute__((section(".data")));
static void wrap_signal_functions(const struct link_map_head *objects);

/* Threads started where the copies' own PLT entries do not see them (decision 0128): every
 * loaded object's GOT slots of the C library's pthread_create and thrd_create (the
 * relocations that bind them: JUMP_SLOT for a call through the PLT, GLOB_DAT for a call
 * through the GOT, as -fno-plt code and Rust's standard library make, and for the
 * function's address; the executable's GLOB_DAT ones only) lead to an entry that calls
 * anvil_threads_start, then goes on to the function. A library that runs the program's
 * code on threads of its own (LLVM's parallelFor, a thread pool, libstdc++'s std::thread,
 * OpenMP) starts each through one of those, and the program's copies then count with
 * locked adds and call the analysis under the lock from before the first such thread
 * exists. (A program that compares the function's address it read from its GOT with one
 * it got elsewhere would see them differ.) */
static void wrap_thread_starts(const struct link_map_head *objects)
{
    extern void anvil_thread_create_entry(void), anvil_thrd_create_entry(void);
    wrap_function(objects, "pthread_create", &anvil_real_pthread_create, (anvil_word)anvil_thread_create_entry, 0);
    wrap_function(objects, "thrd_create", &anvil_real_thrd_create, (anvil_word)anvil_thrd_create_entry, 0);
}

/* The C library's _Exit (_exit) is made to jump to c_library_exit (``jmp [rip]`` and the
 * address, 14 bytes over its entry, which is never returned to), found through its symbol
 * hash; whether it was.
 * The segment's protection changes whole, not the page's: a part of a mapping given
 * other rights becomes a mapping of its own, and /proc/self/maps, which programs read,
 * would show the C library's text in three. */
static int hook_c_library_exit(const struct link_map_head *map)
{
    /* _Exit: glibc's other name of _exit; musl's own, whose _exit (9 bytes) calls it. */
    const uint8_t *sym = defined_function(map->l_ld, map->l_addr, "_Exit");
    if (!sym || *(const uint64_t *)(sym + 16) < 14)
        sym = defined_function(map->l_ld, map->l_addr, "_exit");
    if (!sym || *(const uint64_t *)(sym + 16) < 14)
        return 0;
    uint8_t *at = (uint8_t *)(map->l_addr + *(const uint64_t *)(sym + 8));
    anvil_word first, span;
    if (!segment_span(map, PT_LOAD, 0, (anvil_word)at, (anvil_word)at + 14, &first, &span))
        return 0;
    if (anvil_syscall(SYS_mprotect, (long)first, (long)span, 7, 0, 0, 0) != 0)
        return 0;
    static const uint8_t jump[6] = {0xff, 0x25, 0, 0, 0, 0};  /* jmp [rip + 0] */
    for (int k = 0; k < 6; k++)
        at[k] = jump[k];
    *(uint64_t *)(at + 6) = (uint64_t)c_library_exit;
    anvil_syscall(SYS_mprotect, (long)first, (long)span, 5, 0, 0, 0);
    return 1;
}

static void fork_prepare(void);
static void fork_done(void);

/* The analysis lock's fork handlers (decision 0127), registered with the C library:
 * glibc's __register_atfork (its pthread_atfork is a wrapper in libc_nonshared.a), musl's
 * pthread_atfork (which ignores the fourth argument). */
static void register_fork_handlers(const struct link_map_head *map)
{
    const uint8_t *sym = defined_function(map->l_ld, map->l_addr, "__register_atfork");
    if (!sym)
        sym = defined_function(map->l_ld, map->l_addr, "pthread_atfork");
    if (!sym)
        return;
    int (*register_atfork)(void (*)(void), void (*)(void), void (*)(void), void *) =
        (int (*)(void (*)(void), void (*)(void), void (*)(void), void *))(map->l_addr + *(const uint64_t *)(sym + 8));
    register_atfork(fork_prepare, fork_done, fork_done, 0);
}

/* A sanitizer's run time (ASan, LSan, UBSan...) ends the process by its own exit_group
 * system call after a report (an error, LeakSanitizer's leaks at exit), past the C library's
 * exit that the results wait for: it calls the function given to
 * __sanitizer_set_death_callback first, which writes them. */
static void sanitizer_death(void) { anvil_program_end(); }

static void on_sanitizer_death(const struct link_map_head *objects)
{
    for (const struct link_map_head *map = objects; map; map = map->l_next) {
        const uint8_t *sym = map->l_ld ? defined_function(map->l_ld, map->l_addr, "__sanitizer_set_death_callback") : 0;
        if (sym) {
            void (*set)(void (*)(void)) = (void (*)(void (*)(void)))(map->l_addr + *(const uint64_t *)(sym + 8));
            set(sanitizer_death);
            return;
        }
    }
}

/* Set by the rewriter where the program's entry is called as main(argc, argv, envp) by its
 * interpreter, not entered on the kernel's stack (klibc's shared library: a PT_INTERP and no
 * dynamic section). Its exit is the library's, which no hook sees: the program's end is
 * where main returns (anvil_main_return, anvil_entry.S), to the address kept here. */
uint8_t anvil_started_by __attribute__((section(".data")));
anvil_word anvil_main_caller __attribute__((section(".data")));

/* Where the program is started from DT_PREINIT_ARRAY (rewriter/emit/preinit.py, decision
 * 0176), the rewriter writes here: the link address of the slot whose word the stub's
 * preinit function stands in, that word's link-time value, flags (below), and the link
 * address of the stub's `ret` back into the dynamic linker. */
anvil_word anvil_preinit[4] __attribute__((section(".data")));
#define INIT_READ_ONLY 1      /* the slot's page is PT_GNU_RELRO: read-only once relocated */
#define INIT_CALLS_ORIGINAL 2 /* the slot is the program's first preinit function: go on to it */
/* Where the stub goes on when anvil_start returns (the stub with a preinit function). */
anvil_word anvil_go_on __attribute__((section(".data")));

/* The stub's stages (stub.S): started at the entry, the region mapped there; called from
 * the preinit array, before any library's initialiser; at the entry after that call. */
enum { STARTED_AT_ENTRY, STARTED_AT_PREINIT, ENTRY_AFTER_PREINIT };

/* The slot's word as the program's tables had it, now that the dynamic linker has read it
 * as the preinit array (or, musl's, has not: then before libc reads .init_array). */
static void give_init_slot_back(anvil_word bias)
{
    anvil_word *slot = (anvil_word *)(anvil_preinit[0] + bias), page = (anvil_word)slot & ~(PAGE - 1);
    if (anvil_preinit[2] & INIT_READ_ONLY)
        anvil_syscall(SYS_mprotect, (long)page, PAGE, 3 /* read, write */, 0, 0, 0);
    *slot = anvil_preinit[1] + bias;
    if (anvil_preinit[2] & INIT_READ_ONLY)
        anvil_syscall(SYS_mprotect, (long)page, PAGE, 1 /* read */, 0, 0, 0);
}

/* What the program's start does for a dynamic program at its entry: rdx is the dynamic
 * linker's fini, which anvil_fini runs in its place (the end is where it would run: a
 * dynamic program's exit ends in its C library, whose code is not copied). */
static void start_dynamic(anvil_word *fini)
{
    if (*fini) {
        program_fini = (void (*)(void))*fini;
        *fini = (anvil_word)anvil_fini;
    }
    const struct link_map_head *objects = executable_map;
    wrap_thread_starts(objects);
    wrap_signal_functions(objects);
    const struct link_map_head *library = c_library(objects);
    on_sanitizer_death(objects);
    /* The exit is hooked in the C library (glibc's libc.so.6; not a sanitizer's _exit
     * before it), else in the first library that has one: musl's dynamic linker, which is
     * its C library. Fork handlers only in glibc's: musl's pthread_atfork allocates, and
     * the program's first heap block would move. */
    if (library) {
        hook_c_library_exit(library);
        register_fork_handlers(library);
    } else {
        for (const struct link_map_head *map = objects ? objects->l_next : 0; map; map = map->l_next)
            if (map->l_ld && hook_c_library_exit(map))
                break;
    }
}

/* Called by the loader stub in ``stage`` (above): ``initial_sp`` is the stack the kernel
 * started the program with (argc, argv, envp; at the entry); ``fini`` the slot holding rdx
 * as the program's start code will see it (rsi's the slot below it, rdi's below that);
 * ``patches`` the link address of the jumps to write over the original code (0: the file
 * has them). Called from the preinit array, it does all but what waits for the entry (rdx,
 * the C library's functions wrapped, the fatal signals), so that what the libraries'
 * initialisers run of the program runs in the copies, counted. */
void anvil_start(anvil_word bias, const long *initial_sp, anvil_word *fini, anvil_word patches, long stage)
{
    if (stage == ENTRY_AFTER_PREINIT) {
        start_dynamic(fini);
        catch_fatal_signals();
        anvil_go_on = anvil_program_entry + bias;
        return;
    }
    anvil_bias = bias;
    if (anvil_started_by) {
        void anvil_main_return(void);
        anvil_main_caller = *(const anvil_word *)initial_sp;  /* main's return address */
        *(anvil_word *)initial_sp = (anvil_word)anvil_main_return;
        initial_sp = (const long *)fini[-1] - 1;  /* argv (rsi) is on the kernel's stack, after argc */
    }
    if (patches)
        write_patches((const uint64_t *)(patches + bias), bias);
    /* A Go program (the rewriter wrote its map of copied instructions): goroutine stacks
     * are small, so the analysis runs on stacks of its own. */
    if (anvil_pc_map[1]) {
        long stacks = anvil_syscall(SYS_mmap, 0, 64 * ANVIL_STACK_SLICE, 3 /* read, write */,
                                    0x22 /* private, anonymous */, -1, 0);
        if (stacks > 0)
            anvil_stacks = (anvil_word)stacks;
    }
    if (anvil_thread_counters[1]) /* the first thread counts into the arrays themselves */
        anvil_syscall(SYS_arch_prctl, ARCH_SET_GS, (long)anvil_thread_counters + anvil_thread_counters[0], 0, 0, 0, 0);
    /* (Called from the preinit array: envp is rdx, the slot itself.) */
    environment = stage == STARTED_AT_PREINIT ? (const char *const *)*fini
                                              : (const char *const *)(initial_sp + 1 + initial_sp[0] + 1);
    const char *const *after = environment;
    while (*after)
        after++;
    const long *phdr = 0;
    long phnum = 0;
    int interpreted = 0;  /* a dynamic linker loaded the program (AT_BASE) */
    for (const long *aux = (const long *)(after + 1); aux[0]; aux += 2) {  /* the auxiliary vector */
        if (aux[0] == AT_HWCAP2)
            fs_base_readable = (aux[1] & HWCAP2_FSGSBASE) != 0;
        else if (aux[0] == AT_PHDR)
            phdr = (const long *)aux[1];
        else if (aux[0] == AT_PHNUM)
            phnum = aux[1];
        else if (aux[0] == AT_BASE)
            interpreted = aux[1] != 0;
        else if (aux[0] == AT_ENTRY && anvil_program_entry)  /* getauxval(AT_ENTRY): the program's, not the stub's */
            ((long *)aux)[1] = (long)(anvil_program_entry + bias);
    }
    start_pid = anvil_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    if (anvil_syscall(SYS_getcwd, (long)start_dir, sizeof start_dir, 0, 0, 0, 0) <= 0)
        start_dir[0] = 0;
    wrap_handlers = !anvil_pc_map[1];  /* (not a Go program's: decision 0143) */
    /* A static program's start code gets 0 in rdx and registers nothing (registering
     * anvil_fini would change what it does): its end is the exit system call in its own,
     * copied code. (rdx is main's envp where the interpreter calls it.) */
    /* (glibc's dynamic linker gives its fini in rdx; musl's, which the program's start code
     * does not read, whatever rdx held.) */
    int dynamic = stage == STARTED_AT_PREINIT || ((*fini || interpreted) && !anvil_started_by);
    if (dynamic) {
        executable_phdr = (const uint8_t *)phdr;
        executable_phnum = phnum;
        executable_map = loaded_objects(phdr, phnum, bias);
    }
    if (anvil_preinit[0])  /* the slot's word given back (if the preinit call was never made: musl's) */
        give_init_slot_back(bias);
    if (stage == STARTED_AT_PREINIT) {
        /* The C library's functions are wrapped at the entry, as without the preinit call: a
         * sanitizer's run time, whose preinit function follows, has its own sigaction, which
         * works once that function has run (clang's UBSan). */
        anvil_go_on = anvil_preinit[2] & INIT_CALLS_ORIGINAL ? anvil_preinit[1] + bias : anvil_preinit[3] + bias;
    } else {
        if (dynamic)
            start_dynamic(fini);
        catch_fatal_signals();
        anvil_go_on = anvil_program_entry + bias;
    }
    void anvil_program_start(void);
    anvil_program_start();
}

/* The counters of a program that may start threads are written ``ds add`` (a prefix that
 * does nothing) until it starts one: then each becomes ``lock add``, so that two threads
 * counting one block at once lose no count. A locked add costs about twenty times a plain
 * one, and most such programs (an interpreter, a library that can use threads) never start
 * one. The rewriter writes here the table's distance from this variable (0: none): a count,
 * then each prefix byte's distance from the table. The region is writable; only the
 * thread that is about to start the first other one runs. */
long anvil_lock_table __attribute__((section(".data"))) = 0;
/* Set as the program first enters a function that starts a thread. Until then one thread
 * runs the copied code: the call sites test their repeat filters inline and call without
 * the lock (arch/x86_64/calls.py reads this byte), as the counters add without it. */
uint8_t anvil_threads_started __attribute__((section(".data")));

/* Called (anvil_threads_entry) as the program enters a function that starts a thread. */
void anvil_threads_start(void)
{
    if (anvil_threads_started)
        return;
    anvil_threads_started = 1;
    if (!anvil_lock_table)
        return;
    const int *table = (const int *)((const char *)&anvil_lock_table + anvil_lock_table);
    for (int k = 1; k <= table[0]; k++)
        *((uint8_t *)table + table[k]) = 0xF0;
}

#define SYS_execve 59
#define SYS_execveat 322

/* Before an exec: anvil_exec_entry, anvil_on_syscall, anvil_exec_jump. */
void anvil_before_exec(void) { end_before_exec(); }

/* An exec function's PLT entry, as it is entered (anvil_exec_jump_entry): ``slot`` is the
 * link address of the GOT slot it jumps through, ``lazy`` what the file holds there (the
 * entry's lazy-binding stub; 0: none). While the slot still holds that (plus the bias: the
 * dynamic linker relocates it so), the jump goes to the stub and on through PLT0 to the
 * binder, whose instructions in the program run first: then the results wait for PLT0's
 * jump (anvil_binder_jump), so that they count them. */
static uint8_t exec_through_binder;

void anvil_exec_jump(anvil_word slot, anvil_word lazy)
{
    if (lazy && *(const anvil_word *)(slot + anvil_bias) == lazy + anvil_bias)
        exec_through_binder = 1;
    else
        anvil_before_exec();
}

/* PLT0, as it is entered (anvil_binder_entry): the results, where an exec function is being bound. */
void anvil_binder_jump(void)
{
    if (exec_through_binder) {
        exec_through_binder = 0;
        anvil_before_exec();
    }
}

/* Before a system call the copied code makes with a number not known where it was
 * rewritten (anvil_syscall_entry; ``first``: its first argument, rdi): the results, if it
 * ends the program or makes it another (an exec); a signal's action as the program would
 * see it, if it reads or sets one. */
void anvil_on_syscall(long nr, anvil_word first)
{
    anvil_signal_action((anvil_word)nr, first, 0, 0);
    /* exit ends a thread: the program's end only where it started none (a static program's
     * threads end so, and the first to end wrote the results with the others' counts
     * missing). */
    if (nr == SYS_exit_group || (nr == SYS_exit && !anvil_threads_started && !anvil_forked_child()))
        anvil_program_end();
    else if (nr == SYS_execve || nr == SYS_execveat)
        anvil_before_exec();
}

void anvil_site(anvil_word value, uint32_t site);

/* The thread in the analysis (thread_self; 0: none). */
static anvil_word site_owner __attribute__((section(".data")));


/* Who the calling thread is, for the lock: its thread pointer (fs:0 in the x86-64 TLS ABI,
 * which glibc's and musl's threads point at themselves), else, where that word is 0, its fs
 * base (even) or the kernel's thread id * 2 + 1. Go's threads, which its runtime starts by
 * the clone system call itself, each point fs at a block of their own whose word at fs:0
 * is 0 in every one (decision 0121): as one thread, two of them would run the analysis at
 * once. */
static anvil_word thread_self(void)
{
    anvil_word self;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(self));
    if (self)
        return self;
    if (fs_base_readable) {
        __asm__ volatile("rdfsbase %0" : "=r"(self));
        if (self)
            return self;
    }
    return (anvil_word)anvil_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0) * 2 + 1;
}

/* Wait for the lock and take it (``self``: thread_self's). */
static void take_site_lock(anvil_word self)
{
    anvil_word none = 0;
    while (!__atomic_compare_exchange_n(&site_owner, &none, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        none = 0;
        __builtin_ia32_pause();
    }
}

/* A call site of a program that starts threads (anvil_site_locked_entry): the tool's
 * routines and the results file's buffer see one call at a time, once a thread has started
 * (before, the one thread goes straight in: a static program sets its thread pointer only
 * after its first instructions ran, and fs:0 cannot be read until it does). A signal
 * handler that interrupts its thread inside the analysis goes on without the lock (waiting
 * for it would wait for ever). */
void anvil_site_locked(anvil_word value, uint32_t site)
{
    if (!__atomic_load_n(&anvil_threads_started, __ATOMIC_RELAXED)) {
        anvil_site(value, site);
        return;
    }
    anvil_word self = thread_self();
    if (__atomic_load_n(&site_owner, __ATOMIC_RELAXED) == self) {
        anvil_site(value, site);
        return;
    }
    take_site_lock(self);
    anvil_site(value, site);
    __atomic_store_n(&site_owner, 0, __ATOMIC_RELEASE);
}

anvil_word anvil_analysis_take(void)
{
    if (!__atomic_load_n(&anvil_threads_started, __ATOMIC_ACQUIRE))
        return 0;
    anvil_word self = thread_self();
    if (__atomic_load_n(&site_owner, __ATOMIC_RELAXED) == self)
        return 0;  /* inside a call site, or a handler that interrupted one */
    anvil_word none = 0;
    for (uint32_t round = 0;
         !__atomic_compare_exchange_n(&site_owner, &none, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED); round++) {
        none = 0;
        if (!anvil_lock_wait_round(round))
            return 0;  /* waited ANVIL_LOCK_WAIT_MS: on without it */
    }
    return 1;
}

void anvil_analysis_give(anvil_word taken)
{
    if (taken)
        __atomic_store_n(&site_owner, 0, __ATOMIC_RELEASE);
}

/* Whether fork_prepare took the lock (read and written by its holder only). */
static uint8_t fork_holds_lock;

/* Before the C library's fork (decision 0127): the forking thread waits for the lock and
 * holds it through the fork, so that the child's copy of the analysis, the ring and the
 * results buffer is whole and its lock is held by a thread it has (a lock another thread
 * held at the fork would be held for ever there: the child hung at its first call). */
static void fork_prepare(void)
{
    if (!__atomic_load_n(&anvil_threads_started, __ATOMIC_ACQUIRE))
        return;
    anvil_word self = thread_self();
    if (__atomic_load_n(&site_owner, __ATOMIC_RELAXED) == self)
        return;  /* a fork made inside the analysis (a signal handler's): it is this thread's */
    take_site_lock(self);
    fork_holds_lock = 1;
}

/* After the fork, in the parent and in the child alike: the lock given back. */
static void fork_done(void)
{
    if (!fork_holds_lock)
        return;
    fork_holds_lock = 0;
    __atomic_store_n(&site_owner, 0, __ATOMIC_RELEASE);
}

#define SYS_clone 56
#define SYS_clone3 435
#define CLONE_VM 0x100

/* Before a system call of the copied code that may fork (anvil_fork_entry; ``nr``: clone,
 * fork or clone3, ``arg``: clone's flags, clone3's struct clone_args, whose first word is
 * the flags): a static program's fork, its C library copied with it, whose fork handlers
 * this runtime cannot register. A clone that makes a thread (CLONE_VM) shares the memory
 * and its lock: nothing to hold. */
void anvil_before_fork(long nr, long arg)
{
    if ((nr == SYS_clone && (arg & CLONE_VM)) || (nr == SYS_clone3 && arg && (*(const uint64_t *)arg & CLONE_VM)))
        return;
    fork_prepare();
}

/* After it (anvil_forked_entry), in each process, and in a thread a clone started: the lock
 * given back where this thread took it for the fork (a new thread has a thread pointer of
 * its own, and another thread's clone passes by a fork under way in this one). */
void anvil_after_fork(void)
{
    if (fork_holds_lock && __atomic_load_n(&site_owner, __ATOMIC_RELAXED) == thread_self())
        fork_done();
}

/* ---------------------------------------------------------------- wrapped handlers */

/* Analysis calls under way (anvil_entry.S preserving), counted until the program starts a
 * thread: the one thread's calls are then all there are. (The call that starts the first
 * thread is counted in and not out: the count is not read after.) */
long anvil_analysis_depth __attribute__((section(".data")));

#define UC_SIGMASK 296
/* Each wrapper entry (anvil_entry.S): mov $k, %r11d; jmp anvil_signal_wrapper, 16 bytes.
 * The kernel gives every handler the siginfo and the ucontext (rsi, rdx), which the
 * common part saves with rdi, rcx and r11 first. */
#define WRAPPER_BYTES 16
#define WRAPPER_THUMB 0
#define WRAPPER_INFO(saved, siginfo) ((const int32_t *)(saved)[1])
#define WRAPPER_CONTEXT(saved, siginfo) ((uint8_t *)(saved)[2])
#define WRAPPER_TO_ORIGINAL(saved, context, siginfo, fault) to_original((saved), (context), (fault))

/* ucontext: uc_flags, uc_link, uc_stack (24 bytes), then the registers r8-r15, rdi, rsi,
 * rbp, rbx, rdx, rax, rcx, rsp, rip, eflags, csgsfs, err, trapno, oldmask and cr2. */
#define UC_RIP (40 + 16 * 8)

/* The copies of the program's system calls (decision 0203): the rewriter writes here the
 * distance from this variable to a table of (the copy's distance from the table, int32;
 * the original's link address, uint32), sorted by the copy, and its length (0: none). */
long anvil_system_call_map[2] __attribute__((section(".data")));

/* How far past the system call a handler may move the PC and still be taken to mean past it. */
#define SIGNAL_SKIP_REACH 2u
#define SIGNAL_PC(context) (*(anvil_word *)((context) + UC_RIP))
#include "anvil_signal_slots.h"  /* (a .h: the compile cache hashes the headers) */

/* The restorer a handler whose signal was given an original PC returns to (anvil_entry.S):
 * anvil_signal_resume, then the restorer the kernel gave. */
extern const char anvil_resume_restorer[] __attribute__((visibility("hidden")));

/* The copy of a system call at run-time address ``copy``: the original's run-time address,
 * 0 if ``copy`` is no system call's copy. */
static anvil_word system_call_original(anvil_word copy)
{
    long count = anvil_system_call_map[1];
    const uint8_t *table = (const uint8_t *)anvil_system_call_map + anvil_system_call_map[0];
    long low = 0, high = count;
    while (low < high) {
        long middle = low + (high - low) / 2;
        const int32_t *pair = (const int32_t *)(table + 8 * middle);
        anvil_word at = (anvil_word)(table + pair[0]);
        if (at == copy)
            return (uint32_t)pair[1] + anvil_bias;
        if (at < copy)
            low = middle + 1;
        else
            high = middle;
    }
    return 0;
}

/* A signal that interrupted a system call of the copy (the PC at its `syscall`, where the
 * kernel stepped back to restart it after the handler, or just past it) is given the
 * original's PC, which musl's and glibc's (2.41) thread cancellation compare with labels
 * around their cancellable calls; its handler returns to anvil_resume_restorer, which puts
 * the copy's PC back where the handler left the original's. A fault keeps the copy's PC
 * (an unwinder recognises the C library's restorer by its bytes, not Anvil's). */
static void to_original(anvil_word *saved, uint8_t *context, int fault)
{
    if (fault || anvil_system_call_map[1] == 0 || !saved[9])
        return;
    anvil_word copy = SIGNAL_PC(context), original = system_call_original(copy);
    if (!original && (original = system_call_original(copy - 2)) != 0)
        copy -= 2;  /* (a call that ended, or was cut short: the PC past its 2 bytes) */
    if (!original)
        return;
    signal_slot_keep(context, copy, original, saved[9]);
    saved[9] = (anvil_word)anvil_resume_restorer;  /* the handler's return address (anvil_entry.S) */
}

/* Called by anvil_resume_restorer as the handler returns, ``context`` the kernel's ucontext:
 * the copy's PC back where the handler left the original's (or as far past it as the handler
 * moved it); returns the restorer to go on to (0: the slot was taken by later signals). */
anvil_word anvil_signal_resume(uint8_t *context)
{
    return signal_slot_resume(context, SIGNAL_SKIP_REACH);
}

#define anvil_thread_identity thread_self

/* Whether the context a signal interrupted is inside the analysis: a call under way, or,
 * once threads have started, the lock held by this thread (the calls run on the program's
 * own stack, which says nothing). */
static int anvil_analysis_interrupted(const uint8_t *context)
{
    (void)context;
    if (__atomic_load_n(&anvil_threads_started, __ATOMIC_RELAXED))
        return __atomic_load_n(&site_owner, __ATOMIC_RELAXED) == thread_self();
    return anvil_analysis_depth > 0;
}

/* Whether a call that ends (anvil_entry.S: after its count and the lock are given back)
 * ends inside another of its thread. */
static int anvil_call_nested(anvil_word sp)
{
    (void)sp;
    return anvil_analysis_interrupted(0);
}

#include "anvil_signal_wrap.h"  /* (a .h: the compile cache hashes the headers) */

/* Every loaded object's GOT slots of the C library's signal-action functions lead to the
 * runtime's (wrapped_function), the executable's where they are bound already (its lazy
 * ones: anvil_signal_plt). */
static void wrap_signal_functions(const struct link_map_head *objects)
{
    static const char names[] = "sigaction\0signal\0bsd_signal\0sysv_signal\0__sysv_signal\0sigset\0";
    if (!wrap_handlers)
        return;
    for (const char *name = names; *name;) {
        anvil_word *real, to = wrapped_function(name, &real);
        if (to)
            wrap_function(objects, name, real, to, 1);
        while (*name++)
            ;
    }
}

/* A signal-action function's PLT entry in the executable, before its jump out through GOT
 * slot ``slot`` (link address), the signal ``sig`` and the action or handler ``arg``
 * (anvil_signal_call_entry; decisions 0131, 0143). First, as at every such call, the
 * default goes back where the action is the results handler (anvil_signal_action); then
 * the slot, left to the lazy binder, is led to the runtime's function once bound
 * (wrap_through_slot). */
void anvil_signal_plt(anvil_word slot, anvil_word sig, anvil_word arg)
{
    anvil_signal_action(SYS_rt_sigaction, sig, 0, 0);
    struct dynamic_tables t;
    if (!wrap_handlers || sig == 0 || sig > 64 || !executable_map || !dynamic_tables(executable_map, &t)
        || !t.jmprel)
        return;
    slot += anvil_bias;
    const char *name = 0;
    for (const uint64_t *r = (const uint64_t *)t.jmprel; r < (const uint64_t *)(t.jmprel + t.pltrelsz / 24 * 24)
         && !name; r += 3)
        if (executable_map->l_addr + r[0] == slot)
            name = relocation_name(&t, r);
    wrap_through_slot(slot, name, sig, arg);
}

/* The C library's function ``name`` as the dynamic linker binds it (anvil_signal_wrap.h). */
static anvil_word library_function(const char *name)
{
    return first_definition(executable_map, name);
}

#define ANVIL_SYS_FCNTL SYS_fcntl
#define ANVIL_O_EXTRA 02000000  /* O_CLOEXEC */
#define ANVIL_PREAD(fd, buffer, length, offset) anvil_syscall(SYS_pread64, fd, (long)buffer, length, (long)(offset), 0, 0)
#include "anvil_results.h"  /* (a .h: the compile cache hashes the headers) */

void anvil_close(int fd) { anvil_syscall(SYS_close, fd, 0, 0, 0, 0, 0); }

void anvil_cut_at(int fd, uint64_t length)
{
    anvil_syscall(SYS_ftruncate, fd, (long)length, 0, 0, 0, 0);
    anvil_syscall(SYS_lseek, fd, (long)length, 0 /* SEEK_SET */, 0, 0, 0);
}

long anvil_write_fd(int fd, const char *buf, uint32_t len)
{
    return anvil_syscall(SYS_write, fd, (long)buf, len, 0, 0, 0);
}

/* A Go program's copy (decision 0121): the rewriter writes here the distance from this
 * variable to a table of (copy's distance from the table, int32; original's link address,
 * uint32) for every copied instruction in the copies' order, its length (0: none) and
 * the number of procedures. After the pairs: how many instructions follow each in its
 * block (uint16), then, 4-aligned, each procedure's link address (uint32). */
long anvil_pc_map[3] __attribute__((section(".data")));

/* Per procedure, the instructions its block counters counted that a recovered fault
 * skipped (generated with the fold of the sums, elf64_inhost._fold_source). */
extern uint64_t anvil_fault_cut[];
extern const uint32_t anvil_fault_cut_count;

/* The last of ``count`` ascending keys (every ``stride``-th word of ``words``) at or before
 * ``key``; the first's index where none is. */
static long last_at_or_before(const uint32_t *words, long count, long stride, uint32_t key)
{
    long low = 0, high = count;
    while (high - low > 1) {
        long middle = low + (high - low) / 2;
        if (words[stride * middle] <= key)
            low = middle;
        else
            high = middle;
    }
    return low;
}

/* The instructions after the one at ``index`` of the map in its block, counted as the
 * block started but skipped by its fault: off its procedure's sums. */
static void cut_after_fault(const uint8_t *table, long count, long index)
{
    const uint16_t *after = (const uint16_t *)(table + 8 * count);
    const uint32_t *starts = (const uint32_t *)(table + ((10 * count + 3) & ~3l));
    uint32_t original = ((const uint32_t *)table)[2 * index + 1];
    if (anvil_pc_map[2] == 0 || original < starts[0])
        return;
    long low = last_at_or_before(starts, anvil_pc_map[2], 1, original); /* its procedure */
    if ((uint32_t)low < anvil_fault_cut_count)
        __atomic_add_fetch(&anvil_fault_cut[low], after[index], __ATOMIC_RELAXED);
}

#define SIGNAL_PREEMPT 23 /* SIGURG: Go's preemption signal */
/* A mark the handler's entry leaves in a preempted context's trapno (which returning from
 * the handler does not read), with the copy's PC in its cr2, for the return. */
#define PREEMPT_MARK 0x616e766cL
#define UC_TRAPNO (40 + 20 * 8)
#define UC_CR2 (40 + 22 * 8)
/* The kernel's signal frame at the handler's entry: the return address, then the ucontext. */
#define FRAME_UCONTEXT 8
/* The registers of the ucontext (UC_RIP's list) by their index there. */
#define UC_REGS 40
enum { REG_R11 = 3, REG_RDI = 8, REG_RSI = 9, REG_RDX = 12, REG_RAX = 13, REG_RCX = 14, REG_RSP = 15,
       REG_EFL = 17 };
/* A loop head's poll (hooks.py _go_poll): the bytes after its call that put the flags
 * (popfq, where they are live) and RSP back, and the words anvil_go_poll_entry pushed:
 * r11, rcx, rdx, rsi, rdi, rax, then the call's return address and the flags, then the
 * red zone. */
#define POLL_RESTORE_BYTES 8
#define POLL_PUSHED 7
#define RED_ZONE 128
/* Where the preemption signal the entries raise is delivered (anvil_entry.S). */
extern const char anvil_go_poll_landed[] __attribute__((visibility("hidden")));
extern const char anvil_go_poll_flagless_landed[] __attribute__((visibility("hidden")));


/* The map of a Go program's copy (anvil_pc_map), or 0 where there is none. */
static const uint8_t *pc_table(void)
{
    return anvil_pc_map[1] ? (const uint8_t *)anvil_pc_map + anvil_pc_map[0] : 0;
}

/* The index of the pair of the copy at or before the run-time address `at`, or -1 where
 * `at` is not in the copies. */
static long copy_pair(const uint8_t *table, anvil_word at)
{
    long count = anvil_pc_map[1];
    const int32_t *pairs = (const int32_t *)table;
    long distance = (long)(at - (anvil_word)table);
    if (distance < pairs[0] || distance >= (long)pairs[2 * (count - 1)] + 64)
        return -1;
    /* Every copy lies before the table: the distances are negative, in the same order as
     * unsigned words. */
    return last_at_or_before((const uint32_t *)pairs, count, 2, (uint32_t)distance);
}

/* The preemption signal a loop head's poll raised, at its landing: the context gets the
 * registers and flags the loop head had and its original PC; the copy's PC to go back to,
 * if the handler does not preempt, is the poll's end, where they are the loop head's
 * again. */
static void go_poll_landed(const uint8_t *table, uint8_t *context, int flags)
{
    anvil_word *regs = (anvil_word *)(context + UC_REGS);
    const anvil_word *pushed = (const anvil_word *)regs[REG_RSP];
    anvil_word after = pushed[6] + POLL_RESTORE_BYTES + flags;
    long low = copy_pair(table, after);
    if (low < 0)
        return;
    regs[REG_R11] = pushed[0];
    regs[REG_RCX] = pushed[1];
    regs[REG_RDX] = pushed[2];
    regs[REG_RSI] = pushed[3];
    regs[REG_RDI] = pushed[4];
    regs[REG_RAX] = pushed[5];
    if (flags)
        regs[REG_EFL] = pushed[7];
    regs[REG_RSP] += 8 * (POLL_PUSHED + flags) + RED_ZONE;
    *(long *)(context + UC_TRAPNO) = PREEMPT_MARK;
    *(anvil_word *)(context + UC_CR2) = after;
    *(anvil_word *)(context + UC_RIP) = (uint32_t)((const int32_t *)table)[2 * low + 1] + anvil_bias;
}

/* At the entry of Go's signal handler (runtime.sigtramp, anvil_go_fault_entry: the signal,
 * its siginfo and the ucontext). A fault the kernel raised (si_code > 0) at an instruction
 * of the copy gets the original instruction's address as its PC, which the handler looks
 * up in the program's PC table to turn the fault into a panic (a nil dereference); the
 * handler then makes the faulting instruction seem to call sigpanic, whose original entry
 * jumps to its copy.
 * A preemption signal that stopped the copy at the start of an instruction's copy, where
 * the registers are the original's, gets the original's PC too (decision 0134): the
 * handler finds a function there and may preempt the goroutine (making it call
 * asyncPreempt, which returns to that PC: anvil_go_resume); where it does not, the
 * handler's return puts the copy's PC back (anvil_go_signal_return). Elsewhere in the
 * copy (inside a hook) the goroutine is not preempted by this signal; the runtime sends
 * another. */
void anvil_go_fault_pc(long sig, const int *info, uint8_t *context)
{
    const uint8_t *table = pc_table();
    int fault = (sig == 4 || sig == 7 || sig == 8 || sig == 11) && info[2] > 0;
    if (!table || !(fault || sig == SIGNAL_PREEMPT))
        return;
    anvil_word *pc = (anvil_word *)(context + UC_RIP);
    if (!fault && (*pc == (anvil_word)anvil_go_poll_landed || *pc == (anvil_word)anvil_go_poll_flagless_landed)) {
        go_poll_landed(table, context, *pc == (anvil_word)anvil_go_poll_landed);
        return;
    }
    long low = copy_pair(table, *pc);
    if (low < 0)
        return;
    const int32_t *pair = (const int32_t *)table + 2 * low;
    if (!fault) {
        if ((anvil_word)table + pair[0] != *pc)
            return;
        *(long *)(context + UC_TRAPNO) = PREEMPT_MARK;
        *(anvil_word *)(context + UC_CR2) = *pc;
    }
    *pc = (uint32_t)pair[1] + anvil_bias;
    if (fault)
        cut_after_fault(table, anvil_pc_map[1], low);
}

/* Before Go's signal handler returns, SP at `sp`: the kernel's frame. A preemption the
 * handler's entry gave the original PC and the handler left alone resumes in the copy,
 * where it stopped. */
void anvil_go_signal_return(anvil_word sp)
{
    uint8_t *context = (uint8_t *)sp + FRAME_UCONTEXT;
    const uint8_t *table = pc_table();
    long *mark = (long *)(context + UC_TRAPNO);
    if (!table || *mark != PREEMPT_MARK)
        return;
    anvil_word *pc = (anvil_word *)(context + UC_RIP), *copy = (anvil_word *)(context + UC_CR2);
    long low = copy_pair(table, *copy);
    if (low >= 0 && *pc == (uint32_t)((const int32_t *)table)[2 * low + 1] + anvil_bias)
        *pc = *copy;
    *mark = 0;
    *copy = 0;
}

/* Before asyncPreempt returns to the PC the preempting handler gave it (the word at `sp`):
 * an original instruction with a copy is resumed in its copy. The pairs sorted by the
 * original follow the map's procedure starts. */
void anvil_go_resume(anvil_word sp)
{
    const uint8_t *table = pc_table();
    if (!table)
        return;
    long count = anvil_pc_map[1];
    anvil_word *slot = (anvil_word *)sp;
    const uint32_t *by_original = (const uint32_t *)(table + ((10 * count + 3) & ~3l) + 4 * anvil_pc_map[2]);
    anvil_word at = *slot - anvil_bias;
    if (at >> 32 || (uint32_t)at < by_original[1])
        return;
    long low = last_at_or_before(by_original + 1, count, 2, (uint32_t)at);
    if (by_original[2 * low + 1] == (uint32_t)at)
        *slot = (anvil_word)table + (int32_t)by_original[2 * low];
}
