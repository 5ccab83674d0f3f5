/* ReHost channel on Cortex-M boards: ARM semihosting. The communicator's bytes are
 * written (SYS_WRITE) to the host file ``anvil_rh_channel_path`` (generated beside the
 * site table, relative to the debugger's or emulator's working directory), which
 * `anvil run --board` makes a named pipe its bridge reads. When the host cannot open
 * it, the program runs and the records are dropped (one line on the console). */
#include "anvil_rt.h"

extern const char anvil_rh_channel_path[];
static int handle = -1;

void anvil_channel_open(void)
{
    handle = anvil_open_write(anvil_rh_channel_path);
    if (handle < 0) {
        anvil_warn("anvil: rehost: the host cannot open ");
        anvil_warn(anvil_rh_channel_path);
        anvil_warn("; records dropped\n");
    }
}

void anvil_channel_send(const void *data, uint32_t len)
{
    if (handle < 0 || !len)
        return;
    if (anvil_write_fd(handle, data, len) != (long)len)
        handle = -1;  /* the reader went away: the program goes on, the host sees the stream cut */
}
