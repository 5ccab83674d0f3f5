"""Identity of a ReHost site table file: its format name, version and digest.

Shared by the emitter that writes the table (emit/rehost.py) and the server that reads
it (rehost/sitetable.py). Kept apart from the rehost package so that instrumenting or
running InHost binaries never imports gRPC (whose set-up touches the environment
programs inherit).
"""

from __future__ import annotations

import hashlib

FORMAT = "anvil-rehost-sites"
VERSION = 1


def digest(document: bytes) -> bytes:
    """The 8 bytes of a site table file's SHA-256 that its binary carries in the stream header."""
    return hashlib.sha256(document).digest()[:8]
