"""Do QEMU's two instruction oracles give the same traces on a wide set of programs?

The tests count executed instructions with the pccount plugin (tests/oracles/pccount.c)
where they used to read QEMU's ``-d exec`` log (decision 0155). This runs both on ARM
Thumb and A32 programs, static and dynamic, programs killed by signals, with signal
handlers, threads, forks and exec, x86-64 programs (``ls`` too) and Go, and prints for
each whether every count, the exit status, the output and the code's bounds agree::

    python3 scripts/trace_oracles_agree.py            # all
    python3 scripts/trace_oracles_agree.py fork go    # the cases whose names contain a word

A case that differs is traced again from the log: when the log does not repeat itself
either (threads the host schedules, a timer), the case is marked so, not as a failure; and
its executable's own counts are compared (exe_pcs: in a dynamic program, without the C
library's locks and joins, whose waits depend on the schedule).
Exit status: 1 when a repeatable case differs.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.oracles.oracle_agreement import compare  # noqa: E402
from tests.oracles.qemu_trace import trace_pcs  # noqa: E402
from tests.support import samples  # noqa: E402


@dataclass
class Case:
    """One program and its inputs."""

    name: str
    build: Callable[[Path], Path]
    args: list[str] = field(default_factory=list)
    stdin: bytes = b""


def _source(name: str, text: str, flags: list[str]) -> Callable[[Path], Path]:
    """A builder of an ARM program from C ``text`` (a test's own sample)."""
    def build(tmp: Path) -> Path:
        source = tmp / f"{name}.c"
        source.write_text(text)
        binary = tmp / name
        subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", *flags, str(source), "-o", str(binary), "-lpthread"],
                       check=True)
        return binary
    return build


def cases() -> list[Case]:
    """The programs compared."""
    from tests.test_fatal_signals import DIES_C
    from tests.test_threads import THREADS_C

    arm = samples.build
    x64 = samples.build_x86_64
    out = [Case(f"sort {variant}", lambda _, v=variant: arm("sort", v)) for variant in samples.VARIANTS]
    for flags, label in ((["-mthumb"], "thumb-dyn"), (["-marm", "-static"], "arm-static")):
        out += [Case(f"dies {label} {how}", _source("dies", DIES_C, flags), [how]) for how in ("abort", "segv")]
    for flags, label in ((["-mthumb"], "thumb-dyn"), (["-marm"], "arm-dyn"), (["-mthumb", "-static"], "static")):
        out.append(Case(f"threads {label}", _source("threads", THREADS_C, flags)))
    for sample, args in (("forks", []), ("raw_fork", []), ("execs", []), ("execs", ["fail"]),
                         ("thread_fork", ["4"]), ("handlers_leave_or_stay", ["jump"]), ("handler_read_back", []),
                         ("exclusive_windows", ["1"]), ("exclusive_windows", ["4"]), ("descriptors_walked", []),
                         ("exit_while_threads_work", []), ("library_threads", []), ("outlives_parent", [])):
        out.append(Case(f"{sample} {' '.join(args)} O2-thumb-dyn".replace("  ", " "),
                        lambda _, s=sample: arm(s, "O2-thumb-dyn"), args))
    out.append(Case("forks O2-arm-static", lambda _: arm("forks", "O2-arm-static")))
    out.append(Case("handler_read_back O2-arm-static", lambda _: arm("handler_read_back", "O2-arm-static")))
    for sample, variant, args in (("sort", "x64-gcc-O2", []), ("sort", "x64-gcc-O2-static", []),
                                  ("x64_threads", "x64-gcc-O2", []), ("forks", "x64-gcc-O2", []),
                                  ("execs", "x64-gcc-O2", []), ("handler_read_back", "x64-gcc-O2", []),
                                  ("thread_fork", "x64-gcc-O2", ["4"]), ("killed_by_alarm", "x64-gcc-O2", [])):
        out.append(Case(f"{sample} {variant} {' '.join(args)}".strip(), lambda _, s=sample, v=variant: x64(s, v),
                        args))
    out.append(Case("ls -la /usr/bin (x86-64)", lambda _: Path("/bin/ls"), ["-la", "/usr/bin"]))
    out.append(Case("go_faults go-arm", lambda _: samples.build_go("go_faults")))
    out.append(Case("go_work go-x64", lambda _: samples.build_go("go_work", "go-x64")))
    return out


def main(words: list[str]) -> int:
    """Compare the cases named (all without ``words``); print one line each."""
    failed = 0
    for case in cases():
        if words and not any(word in case.name for word in words):
            continue
        with tempfile.TemporaryDirectory(prefix="oracles.") as tmp:
            binary = case.build(Path(tmp))
            agreement = compare(binary, case.args, case.stdin, argv0="prog", cwd=tmp)
            note = ""
            if not agreement.agree:
                again = trace_pcs(binary, case.args, case.stdin, argv0="prog", cwd=tmp, oracle="log")
                repeats = again.pcs == agreement.log.pcs and again.stdout == agreement.log.stdout
                note = " (the log repeats itself)" if repeats else " (the log does not repeat itself either)"
                failed += repeats
                own = compare(binary, case.args, case.stdin, argv0="prog", cwd=tmp, executable_only=True)
                note += f"\n  the executable's own counts: {own.describe()}"
        print(f"{case.name}: {agreement.describe()}{note}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
