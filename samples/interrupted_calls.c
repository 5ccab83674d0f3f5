/* Signal handlers that look at where they interrupted a system call, as C libraries'
 * thread cancellation does (musl's, glibc's from 2.41): `cp_read` is a read() system call
 * between two labels; a handler that finds the interrupted PC between them moves it to a
 * third label, which makes the call return CANCELLED. With SA_RESTART the kernel stepped
 * the PC back to the SVC (inside the labels); without it the call ended with EINTR and the
 * PC is just past the SVC (at `cp_end`). Each case is printed as the handler saw it.
 * ARM (A32 or Thumb) and x86-64. */
#define _GNU_SOURCE  /* (REG_RIP) */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define CANCELLED 77

long cp_read(long fd, void *buf, long n);
extern const char cp_begin[], cp_end[], cp_cancel[];

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".global cp_read\n"
    ".type cp_read, @function\n"
    "cp_read:\n"
    ".global cp_begin\n"
    "cp_begin:\n"
    "    mov $0, %eax\n"  /* read */
    "    syscall\n"
    ".global cp_end\n"
    "cp_end:\n"
    "    ret\n"
    ".global cp_cancel\n"
    "cp_cancel:\n"
    "    mov $77, %eax\n"
    "    ret\n"
    ".size cp_read, . - cp_read\n");
#define INTERRUPTED_PC(uc) ((unsigned long)(uc)->uc_mcontext.gregs[REG_RIP])
#define SET_PC(uc, pc) ((uc)->uc_mcontext.gregs[REG_RIP] = (long)(pc))
#define THUMB_BIT 0ul
#else
__asm__(
    ".syntax unified\n"
    ".text\n"
    ".global cp_read\n"
    ".type cp_read, %function\n"
    "cp_read:\n"
    "    push {r7, lr}\n"
    ".global cp_begin\n"
    "cp_begin:\n"
    "    mov r7, #3\n"  /* read */
    "    svc #0\n"
    ".global cp_end\n"
    "cp_end:\n"
    "    pop {r7, pc}\n"
    ".global cp_cancel\n"
    "cp_cancel:\n"
    "    mov r0, #77\n"
    "    pop {r7, pc}\n"
    ".size cp_read, . - cp_read\n");
#define INTERRUPTED_PC(uc) ((unsigned long)(uc)->uc_mcontext.arm_pc)
#define SET_PC(uc, pc) ((uc)->uc_mcontext.arm_pc = (unsigned long)(pc))
#define THUMB_BIT 1ul  /* (the labels' addresses have it in Thumb code, PCs never) */
#endif

static volatile int inside, at_end, elsewhere;

static void handler(int sig, siginfo_t *info, void *context)
{
    ucontext_t *uc = context;
    unsigned long pc = INTERRUPTED_PC(uc), begin = (unsigned long)cp_begin & ~THUMB_BIT;
    unsigned long end = (unsigned long)cp_end & ~THUMB_BIT;
    (void)sig, (void)info;
    if (pc >= begin && pc < end) {
        inside++;
        SET_PC(uc, (unsigned long)cp_cancel & ~THUMB_BIT);
    } else if (pc == end) {
        at_end++;
    } else {
        elsewhere++;
    }
}

static void arm_timer(void)
{
    struct itimerval t = {{0, 0}, {0, 20000}};
    setitimer(ITIMER_REAL, &t, 0);
}

int main(void)
{
    int fds[2];
    char c;
    if (pipe(fds) != 0)
        return 1;
    for (int restart = 1; restart >= 0; restart--) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = handler;
        sa.sa_flags = SA_SIGINFO | (restart ? SA_RESTART : 0);
        sigaction(SIGALRM, &sa, 0);
        for (int round = 0; round < 4; round++) {
            arm_timer();
            long got = cp_read(fds[0], &c, 1);  /* nobody writes: blocks until the signal */
            printf("%s %d: read gave %ld; inside %d, at its end %d, elsewhere %d\n",
                   restart ? "restarted" : "interrupted", round, got, inside, at_end, elsewhere);
        }
    }
    /* A signal that does not interrupt the call: the handler finds the PC elsewhere. */
    raise(SIGALRM);
    printf("raised: inside %d, at its end %d, elsewhere %d\n", inside, at_end, elsewhere);
    return inside == 4 && at_end == 4 ? 0 : 3;
}
