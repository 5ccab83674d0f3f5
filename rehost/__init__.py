"""ReHost: the host side of ReHost instrumentation.

A ReHost binary writes compact hook records to a channel; ``bridge`` turns that byte
stream into a gRPC stream; ``server`` (``anvil rehost-server``) checks each session's
site table and stream and runs the tool's analysis routines through a dispatcher
(``dispatch_c`` for a C shared library, ``dispatch_py`` for a Python class).
"""

import os as _os


def _started_environment() -> dict[str, str]:
    """The environment this process was started with. Not ``os.environ`` as it is: the
    interpreter changes that before any of our code runs (started in the C locale, Python
    coerces it: LC_CTYPE=C.UTF-8 is added, PEP 538), and a program run with it would see a
    variable the user never gave it (decision 0123). Linux keeps the environment the kernel
    gave in /proc/self/environ, which setenv does not touch; elsewhere ``os.environ``."""
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return dict(_os.environ)
    pairs = (entry.split(b"=", 1) for entry in entries if b"=" in entry)
    return {_os.fsdecode(name): _os.fsdecode(value) for name, value in pairs}


PROGRAM_ENVIRONMENT = _started_environment()  # what the instrumented program gets: the user's, unchanged

# gRPC's C core logs connection events (a server going away, GOAWAY) on stderr, which
# would mix with the program's own stderr under `anvil run`: keep only its errors.
_os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
