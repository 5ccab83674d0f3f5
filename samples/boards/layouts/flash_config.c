/*
 * flash_config.c - the 16 bytes a Kinetis part reads from flash at 0x400 at reset
 * (backdoor key, protection, security and option bytes: unsecured, no protection), as
 * the MCUXpresso SDK's startup puts them in section .FlashConfig (layouts/kinetis.ld).
 */
#include <stdint.h>

__attribute__((section(".FlashConfig"), used))
const uint32_t FlashConfig[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFEu};
