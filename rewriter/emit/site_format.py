"""Identity of a ReHost site table file: its format name, version and digest.

Shared by the emitter that writes the table (emit/rehost.py) and the server that reads
it (rehost/sitetable.py). Kept apart from the rehost package so that instrumenting or
running InHost binaries never imports gRPC (whose set-up touches the environment
programs inherit).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

FORMAT = "anvil-rehost-sites"
# 2: the filter_left kind, and cachesim's cache_sim taking it (decision 0015). A table of
# version 1 would have its records run through a routine expecting another argument.
# 3: "sums", the arrays the host folds into per-procedure sums before the end routines run
# (decision 0025); a version 2 table's inscount would report without its block counters.
# 4: no "sums": the image folds them itself (decision 0030); a host reading a version 3
# table the old way would add them twice.
VERSION = 4
TRANSPORTS = ("semihosting", "uart")  # how a firmware image's records leave the board


@dataclass(frozen=True)
class Channel:
    """How a firmware image's records leave the board: the table's ``channel`` entry
    (written by emit/rehost.py firmware_channel, read by rehost/sitetable.py)."""

    transport: str                # "semihosting" (a host file) or "uart"
    uart_base: int | None = None  # uart: the MMIO base of the UART the image writes

    def document(self) -> dict:
        """The entry as the site table file holds it."""
        return {"transport": self.transport, **({"uart_base": self.uart_base} if self.transport == "uart" else {})}


def digest(document: bytes) -> bytes:
    """The 8 bytes of a site table file's SHA-256 that its binary carries in the stream header."""
    return hashlib.sha256(document).digest()[:8]
