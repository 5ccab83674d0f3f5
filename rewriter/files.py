"""Files Anvil writes, written whole or not at all: an output, a cache entry, a moved
results file never exists half-written, whatever stops the writing (an error, a full
disk, a signal)."""

from __future__ import annotations

import errno
import os
import tempfile


def atomic_write(path: str, data: bytes | bytearray | list[bytes | bytearray], mode: int = 0o755) -> None:
    """Write ``data`` (or its parts, one after the other) to ``path`` through a temporary
    file, so a failure leaves no partial output."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".anvil-")
    except OSError as e:  # said of the file asked for, not of a temporary name
        raise OSError(e.errno, e.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, list):
                f.writelines(data)
            else:
                f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.strerror is not None:  # a full disk's ENOSPC names no file
            raise OSError(e.errno, e.strerror, path) from None
        raise


def move_whole(source: str, destination: str) -> str:
    """Move the file ``source`` to ``destination``: renamed on one file system, else
    copied through atomic_write (a move across file systems copies, and a copy cut short
    by a full disk would be left as the file) and then removed. Returns ``destination``."""
    try:
        os.replace(source, destination)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        with open(source, "rb") as f:
            atomic_write(destination, f.read(), mode=os.stat(source).st_mode & 0o7777)
        os.unlink(source)
    return destination
