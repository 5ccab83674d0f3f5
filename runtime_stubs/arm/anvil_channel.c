/* ReHost channel on ARM Linux: the system call numbers of EABI; the channel itself is
 * common/anvil_channel_linux.h. */
#define SYS_write 4
#define SYS_close 6
#define SYS_dup2 63
#define SYS_fcntl 221  /* fcntl64 */
#define SYS_socket 281
#define SYS_connect 283
#define SYS_sendto 290
#define SYS_getsockopt 295
#define SYS_getpid 20
#define SYS_open 5
#define SYS_mmap 192  /* mmap2: its offset in pages (0 here) */
#define SYS_getpeername 287
#define SYS_setsockopt 294
#define SYS_shutdown 293
#define SYS_prlimit64 369
#include "anvil_channel_linux.h"
