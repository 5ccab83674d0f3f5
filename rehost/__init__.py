"""ReHost: the host side of ReHost instrumentation.

A ReHost binary writes compact hook records to a channel; ``bridge`` turns that byte
stream into a gRPC stream; ``server`` (``anvil rehost-server``) checks each session's
site table and stream and runs the tool's analysis routines through a dispatcher
(``dispatch_c`` for a C shared library, ``dispatch_py`` for a Python class).
"""

import os as _os

PROGRAM_ENVIRONMENT = dict(_os.environ)  # what the instrumented program gets: the user's, unchanged

# gRPC's C core logs connection events (a server going away, GOAWAY) on stderr, which
# would mix with the program's own stderr under `anvil run`: keep only its errors.
_os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
