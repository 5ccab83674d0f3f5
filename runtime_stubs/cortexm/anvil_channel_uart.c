/* ReHost channel on Cortex-M boards: a UART (`anvil instrument --transport uart`).
 * The communicator's bytes are written one by one to the transmit register of an ARM
 * CMSDK APB UART (the UARTs of the MPS2 boards; ARM DDI0479C, QEMU's
 * hw/char/cmsdk-apb-uart.c) at ``anvil_rh_uart_base`` (generated from --uart-base,
 * since the image does not know its board). Polled, with no UART interrupt: the
 * program's vector table and NVIC stay untouched, and a flush takes as long as the
 * bytes take to leave. The communicator calls this with the program's interrupts masked
 * (anvil_comm.c: a record an interrupt handler made while a flush sends would overwrite
 * bytes not yet sent), so a send is never split, as a semihosting SYS_WRITE is not.
 * On QEMU `anvil run --board` connects the UART to its bridge; on a board it is
 * whatever the pins are wired to (the probe's virtual COM port). A UART nobody listens
 * to drops the bytes: the program runs on. */
#include "anvil_rt.h"

#define UART_DATA 0x00u     /* write: the byte to send */
#define UART_STATE 0x04u    /* bit 0: transmit buffer full */
#define UART_CTRL 0x08u     /* bit 0: transmitter enable */
#define UART_BAUDDIV 0x10u  /* baud rate = PCLK / BAUDDIV, BAUDDIV >= 16 */
#define STATE_TX_FULL 1u
#define CTRL_TX_ENABLE 1u
#define BAUDDIV 16u         /* the fastest rate: MPS2's 25 MHz PCLK gives 1.5625 Mbaud */

extern const uint32_t anvil_rh_uart_base;

static inline volatile uint32_t *reg(uint32_t offset)
{
    return (volatile uint32_t *)(anvil_rh_uart_base + offset);
}

void anvil_channel_open(void)
{
    *reg(UART_BAUDDIV) = BAUDDIV;  /* first: a transmitter enabled at a divider < 16 is invalid (QEMU logs it) */
    *reg(UART_CTRL) |= CTRL_TX_ENABLE;
}

void anvil_channel_send(const void *data, uint32_t len)
{
    const uint8_t *p = data;
    for (;; len--) {
        while (*reg(UART_STATE) & STATE_TX_FULL)
            ;  /* the byte before is still going out (on QEMU: the bridge has not taken it yet) */
        if (!len)
            break;  /* the last byte has left too: a program ending now (SYS_EXIT) loses nothing */
        *reg(UART_DATA) = *p++;
    }
}
