/*
 * rtld_next.c - functions of the C library found with dlsym(RTLD_NEXT, ...).
 *
 * glibc's dlsym finds the calling object by its return address and looks for the symbol in
 * the objects loaded after it; called from code in no loaded object it fails ("RTLD_NEXT
 * used in code not dynamically loaded"). Programs that interpose a library function (and
 * clang's sanitizer run times, linked into the program) find the real one so. One lookup
 * is called directly, one through a function that tail-calls dlsym (its caller's return
 * address is the one dlsym sees), one of a versioned symbol. Prints what each found and
 * uses them; exits 0 when all were found.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* memcpy's version: the one its symbol has on each ISA. */
#ifdef __x86_64__
#define MEMCPY_VERSION "GLIBC_2.14"
#else
#define MEMCPY_VERSION "GLIBC_2.4"
#endif

typedef size_t (*length_fn)(const char *);
typedef int (*puts_fn)(const char *);

__attribute__((noinline)) void *lookup(const char *name)
{
    return dlsym(RTLD_NEXT, name);  /* a tail call at -O2 */
}

int main(int argc, char **argv)
{
    (void)argv;
    puts_fn say = (puts_fn)dlsym(RTLD_NEXT, "puts");
    length_fn length = (length_fn)lookup(argc > 5 ? "strnlen" : "strlen");
    void *versioned = dlvsym(RTLD_NEXT, "memcpy", MEMCPY_VERSION);
    printf("puts %s, strlen %s, memcpy %s\n", say ? "found" : "missing", length ? "found" : "missing",
           versioned ? "found" : "missing");
    if (!say || !length || !versioned)
        return 1;
    say("said through the pointer");
    printf("length %zu\n", length("seventeen letters"));
    return 0;
}
