"""A ReHost program that uses every descriptor it may have still sends its records.

Since decision 0126 the runtime holds no descriptor while the program runs and makes a
socket for each send. A program that opens files up to RLIMIT_NOFILE and makes records
before it frees some (a server at its connection limit, a test of EMFILE) left no number
for that socket: the first send failed, and every record after it was lost (the held
descriptor of before survived this). The send now raises the soft limit by one for its
socket and lowers it straight back (runtime_stubs/common/anvil_channel_linux.h).

The program below, started with a soft limit under the hard one, fills its descriptors,
works (several ring flushes), frees ten, works, and says what it saw. Under `anvil run`
its ReHost copy prints what the original prints and nothing else, and its cachesim
results are its InHost copy's, on x86-64 (natively, the same addresses: setarch -R) and
on ARM (qemu-arm).
"""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest

from tests.support.rehost import CLI, CLI_RUN
from tests.support.run import LIB_ROOT

FILLS_C = r"""
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
static volatile uint32_t sink;
static uint32_t buf[4096];
static void work(int n) {
    uint32_t x = 12345;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        buf[x & 4095] += x;
        sink += buf[(x >> 7) & 4095];
    }
}
int main(void) {
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    static int fds[1 << 16];
    int n = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0)
            break;
        fds[n++] = fd;
    }
    work(400000);  /* records while no descriptor is free: ring flushes */
    for (int i = 0; i < 10; i++)
        close(fds[--n]);
    work(400000);
    printf("opened %d of %ld, the limit still %ld\n", n + 10, (long)r.rlim_cur,
           (getrlimit(RLIMIT_NOFILE, &r), (long)r.rlim_cur));
    return 0;
}
"""

ROOT = Path(__file__).resolve().parent.parent
ENV = {"PYTHONPATH": str(ROOT)}  # this tree's anvil, not the installed one
SOFT = 1100  # (over 1000: `anvil run` itself needs descriptor 1000 for the program)


def _limited() -> None:
    """A soft descriptor limit under the hard one (as a login session's 1024 under 512K)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert hard == resource.RLIM_INFINITY or hard > SOFT
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT, hard))


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["setarch", "-R", *cmd], capture_output=True, cwd=cwd, env=ENV, timeout=300,
                          preexec_fn=_limited)


@pytest.mark.parametrize("arch", ["x86-64", "arm"])
def test_records_made_while_every_descriptor_is_in_use_arrive(arch: str, tmp_path: Path) -> None:
    source = tmp_path / "fills.c"
    source.write_text(FILLS_C)
    binary = tmp_path / "fills"
    subprocess.run(["gcc" if arch == "x86-64" else "arm-linux-gnueabihf-gcc", "-O1", str(source), "-o", str(binary)],
                   check=True)
    direct = [] if arch == "x86-64" else ["qemu-arm", "-L", LIB_ROOT, "-0", "prog"]
    original = _run([*direct, str(binary)], tmp_path)
    assert original.returncode == 0 and original.stdout.startswith(b"opened "), original
    results = {}
    for mode in ("inhost", "rehost"):
        copy = tmp_path / mode / "prog"
        copy.parent.mkdir()
        done = subprocess.run([*CLI, "instrument", "--tool", "cachesim", "--mode", mode, str(binary), "-o", str(copy)],
                              capture_output=True, text=True, env=ENV)
        assert done.returncode == 0, done.stderr
        # (argv[0] 'prog' in every copy: its stack, so its cache lines, the same)
        run = _run([*direct, str(copy)] if mode == "inhost" and direct else [*CLI_RUN, str(copy)], copy.parent)
        assert (run.returncode, run.stdout, run.stderr) == (0, original.stdout, b""), (mode, run)
        results[mode] = (copy.parent / "prog.cachesim.out").read_bytes()
    assert results["rehost"] == results["inhost"]
