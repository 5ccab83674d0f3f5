/* Faults in the program's own code, handled: a SIGSEGV handler (SA_SIGINFO) that counts
 * the frames glibc's backtrace() unwinds through the signal frame into the faulting
 * function and its callers, says where in that function the fault was (the PC in its
 * ucontext), then makes the page readable and returns, so that the load runs again; then a
 * handler set by signal() (its frame has no siginfo) that counts the frames of a store's
 * fault and makes the page writable. Prints what each saw and what the loads computed. */
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static char *page;
static long page_size;
static int frames[4], faults;
static uintptr_t fault_pc[4];

__attribute__((noinline)) int read_words(const int *words, int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += words[i] * (i + 1);
    return sum;
}

__attribute__((noinline)) int deeper(const int *words, int n, int depth)
{
    if (depth == 0)
        return read_words(words, n);
    return deeper(words, n, depth - 1) + 1;
}

static void on_segv_plain(int sig)
{
    void *trace[64];
    (void)sig;
    frames[faults] = backtrace(trace, 64);
    fault_pc[faults++] = 0;
    mprotect(page, page_size, PROT_READ | PROT_WRITE);
}

static void on_segv(int sig, siginfo_t *info, void *context)
{
    void *trace[64];
    ucontext_t *uc = context;
    (void)sig;
    (void)info;
    frames[faults] = backtrace(trace, 64);
    fault_pc[faults++] = uc->uc_mcontext.arm_pc;
    mprotect(page, page_size, PROT_READ | PROT_WRITE);
}

int main(void)
{
    void *warm[4];
    backtrace(warm, 4);  /* (loads the unwinder before any handler needs it) */
    page_size = sysconf(_SC_PAGESIZE);
    page = mmap(0, page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction action;
    sigaction(SIGSEGV, 0, &action);  /* (what it was: a first call binds the function) */
    signal(SIGUSR1, SIG_DFL);
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &action, 0);
    int first = deeper((const int *)page, 64, 5);
    mprotect(page, page_size, PROT_READ);
    signal(SIGSEGV, on_segv_plain);
    ((int *)page)[3] = 7;  /* (done once the handler has made the page writable) */
    int second = deeper((const int *)page, 64, 2);
    uintptr_t start = (uintptr_t)read_words & ~(uintptr_t)1;
    for (int k = 0; k < faults; k++) {
        printf("fault %d: %d frames", k, frames[k]);
        if (fault_pc[k] >= start && fault_pc[k] - start < 4096)
            printf(", at read_words+%#lx", (unsigned long)(fault_pc[k] - start));
        else if (fault_pc[k])
            printf(", not in read_words");
        printf("\n");
    }
    printf("sums %d %d\n", first, second);
    return 0;
}
