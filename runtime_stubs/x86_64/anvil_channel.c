/* ReHost channel on x86-64 Linux: the system call numbers; the channel itself is
 * common/anvil_channel_linux.h. */
#define SYS_write 1
#define SYS_close 3
#define SYS_dup2 33
#define SYS_fcntl 72
#define SYS_socket 41
#define SYS_connect 42
#define SYS_sendto 44
#define SYS_getsockopt 55
#define SYS_getpid 39
#define SYS_open 2
#define SYS_mmap 9
#define SYS_getpeername 52
#define SYS_setsockopt 54
#define SYS_shutdown 48
#define SYS_prlimit64 302
#include "anvil_channel_linux.h"
