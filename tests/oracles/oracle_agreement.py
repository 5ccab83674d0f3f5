"""Do QEMU's two instruction oracles agree? The ``-d exec`` log and the pccount plugin
(tests/oracles/qemu_trace.py, decision 0155) run the same program; every field of the
two traces that does not name the oracle must be equal. Used by tests/test_trace_oracles.py
and scripts/trace_oracles_agree.py."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.oracles.qemu_trace import TraceResult, exe_pcs, trace_pcs


@dataclass
class Agreement:
    """The two traces of one program and how they differ."""

    log: TraceResult
    plugin: TraceResult
    log_seconds: float
    plugin_seconds: float
    #: Fields that differ (``pcs``, ``returncode``, ``stdout``, ...).
    differences: list[str] = field(default_factory=list)
    #: The PCs whose counts differ: pc -> (plugin's, log's), the first few.
    pcs: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        """Whether the plugin counted and its trace is the log's."""
        return not self.differences

    def describe(self) -> str:
        """One line, and a line per differing PC shown."""
        head = (f"{'same' if self.agree else 'DIFFERENT ' + ','.join(self.differences)}: "
                f"{self.log.total} instructions, exit {self.log.returncode}; "
                f"log {self.log_seconds:.2f} s, plugin {self.plugin_seconds:.2f} s")
        return "\n".join([head, *(f"  {pc:#x}: plugin {p}, log {q}" for pc, (p, q) in self.pcs.items())])


def compare(binary: str | os.PathLike[str], args: Sequence[str] = (), stdin: bytes = b"", *,
            executable_only: bool = False, **kwargs: object) -> Agreement:
    """Trace ``binary`` with each oracle (trace_pcs's keywords in ``kwargs``) and compare.

    ``executable_only``: compare the executable's own counts only (exe_pcs), for programs
    whose threads wait for each other in the C library: how often a lock or a join waits
    depends on how the host schedules the threads, in either oracle (the log's writes
    serialise the threads, the plugin's run does not)."""
    traces = {}
    seconds = {}
    for oracle in ("log", "plugin"):
        start = time.monotonic()
        traces[oracle] = trace_pcs(binary, args, stdin, oracle=oracle, **kwargs)  # type: ignore[arg-type]
        seconds[oracle] = time.monotonic() - start
    log, plugin = traces["log"], traces["plugin"]
    out = Agreement(log, plugin, seconds["log"], seconds["plugin"])
    if plugin.oracle != "plugin":
        out.differences.append("oracle")  # the plugin did not count: the log did, twice
    for name in ("returncode", "stdout", "stderr", "load_bias", "start_code", "end_code"):
        if getattr(log, name) != getattr(plugin, name):
            out.differences.append(name)
    ours, theirs = ((exe_pcs(plugin, binary), exe_pcs(log, binary)) if executable_only
                    else (plugin.pcs, log.pcs))
    if ours != theirs:
        out.differences.insert(0, "pcs")
    differing = sorted(pc for pc in ours.keys() | theirs.keys() if ours[pc] != theirs[pc])
    out.pcs = {pc: (ours[pc], theirs[pc]) for pc in differing[:12]}
    return out
