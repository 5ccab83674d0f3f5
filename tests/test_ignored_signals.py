"""A signal ignored when `anvil run` starts stays ignored for the program it runs.

`nohup` ignores SIGHUP, a non-interactive shell's background job SIGINT and SIGQUIT, and a
program started so inherits that across exec: it is how `nohup prog` survives a hang-up,
and why gcc, gpgv and others install their handlers only for signals not ignored. `anvil
run` forwards SIGTERM, SIGHUP and SIGINT to the program through handlers of its own; a
handler becomes the default at exec, so the program saw the default where it would have
seen "ignored" (decision 0123's gpgv ran 11 more instructions under `anvil run` than its
InHost copy run directly, when the corpus ran as a background job).

A small C program prints each signal's disposition; started with SIGHUP, SIGINT and
SIGTERM ignored, the x86-64 original and the InHost and ReHost copies under `anvil run`
(natively), and the ARM original under qemu-arm and its ReHost copy under `anvil run`
(qemu-arm), print the same.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.rehost import CLI_RUN
from tests.support.run import LIB_ROOT, instrument, place

DISPOSITIONS_C = r"""
#include <signal.h>
#include <stdio.h>
int main(void) {
    int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1};
    const char *names[] = {"HUP", "INT", "QUIT", "TERM", "USR1"};
    for (int i = 0; i < 5; i++) {
        struct sigaction sa;
        sigaction(sigs[i], 0, &sa);
        const char *how = sa.sa_handler == SIG_IGN ? "ignored" : sa.sa_handler == SIG_DFL ? "default" : "handled";
        printf("%s=%s ", names[i], how);
    }
    printf("\n");
    return 0;
}
"""

IGNORED = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)
ROOT = Path(__file__).resolve().parent.parent
ENV = {"PYTHONPATH": str(ROOT)}  # this tree's anvil, not the installed one


def _ignoring(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``cmd`` started with IGNORED ignored (as `nohup` and a background job start it), output captured."""
    def ignore() -> None:
        for signum in IGNORED:
            signal.signal(signum, signal.SIG_IGN)

    return subprocess.run(cmd, capture_output=True, cwd=cwd, env=ENV, timeout=300, preexec_fn=ignore)


@pytest.mark.parametrize("arch", ["x86-64", "arm"])
def test_ignored_signals_stay_ignored_under_anvil_run(arch: str, tmp_path: Path) -> None:
    source = tmp_path / "dispositions.c"
    source.write_text(DISPOSITIONS_C)
    binary = tmp_path / "dispositions"
    compiler = "gcc" if arch == "x86-64" else "arm-linux-gnueabihf-gcc"
    subprocess.run([compiler, "-O1", str(source), "-o", str(binary)], check=True)
    placed = place(binary, tmp_path, "orig")
    direct = [str(placed)] if arch == "x86-64" else ["qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(placed)]
    original = _ignoring(direct, placed.parent)
    assert original.returncode == 0 and original.stdout.count(b"=ignored") == len(IGNORED), original
    copies = [instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst")]
    if arch == "x86-64":  # (an ARM InHost copy runs under qemu-arm alone, not anvil run)
        copies.append(instrument(binary, "inscount", tmp_path, slot="inst"))
    for copy in copies:
        run = _ignoring(CLI_RUN + [str(copy)], copy.parent)
        assert (run.returncode, run.stdout, run.stderr) == (0, original.stdout, b""), (copy, run)
