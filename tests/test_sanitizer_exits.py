"""Programs that a sanitizer's run time ends (decision 0131): after a report (an ASan error,
LeakSanitizer's leaks at exit; under qemu-arm LeakSanitizer itself fails at every exit)
libasan ends the process by its own exit_group system call, past the exits the results wait
for, and the copies wrote none. The runtime gives __sanitizer_set_death_callback a function
that writes them: the copy behaves as the original (output, status, the report) and its
results file is there, InHost and ReHost."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.rehost import CLI

ASAN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) static char *make(int n) { char *p = malloc(n); memset(p, 1, n); return p; }
__attribute__((noinline)) static int peek(char *p, int i) { return p[i]; }
int main(int argc, char **argv) {
    char *p = make(16);
    printf("start\n");
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "overflow")) printf("%d\n", peek(p, 16 + argc * 2));
    if (argc > 1 && !strcmp(argv[1], "leak")) { p = make(100); p = 0; }
    printf("end\n");
    return 0;
}
"""


def _normal(text: bytes, program: Path) -> bytes:
    return re.sub(rb"==\d+==", b"==PID==", text).replace(str(program).encode(), b"PROGRAM")


def _build_and_copy(compiler: str, mode: str, tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "bug.c").write_text(ASAN_C)
    plain, copied = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    for path in (plain, copied):
        path.parent.mkdir(exist_ok=True)
    subprocess.run([compiler, "-O1", "-fsanitize=address", str(tmp_path / "bug.c"), "-o", str(plain)], check=True)
    done = subprocess.run(["anvil", "instrument", "--tool", "inscount", "--format", "json", "--mode", mode,
                           str(plain), "-o", str(copied)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return plain, copied


def _run(program: Path, args: list[str], **extra: str) -> tuple[bytes, bytes, int]:
    # (The program's environment: a PATH, ``extra``, and the interpreter's module path where one is set.)
    env = {"PATH": "/usr/bin:/bin", **extra, **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}
    done = subprocess.run(["setarch", "-R", *CLI, "run", "-q", "--argv0", "prog", f"./{program.name}", *args],
                          cwd=program.parent, capture_output=True, timeout=300, env=env)
    return done.stdout, _normal(done.stderr, program), done.returncode


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
@pytest.mark.parametrize("arg", ["overflow", "leak"])
def test_x86_64_sanitizer_reports_end_with_results(arg: str, mode: str, tmp_path: Path) -> None:
    plain, copied = _build_and_copy("gcc", mode, tmp_path)
    want = _run(plain, [arg])
    assert want[2] != 0 and b"SUMMARY: AddressSanitizer" in want[1], want
    assert _run(copied, [arg]) == want
    assert json.loads((copied.parent / "prog.inscount.out").read_text())["total"] > 0


def test_arm_asan_report_ends_with_results(tmp_path: Path) -> None:
    """(LeakSanitizer is off: under qemu-arm it fails at exit, when it may or may not have
    let the output be flushed.)"""
    plain, copied = _build_and_copy("arm-linux-gnueabihf-gcc", "inhost", tmp_path)
    want = _run(plain, ["overflow"], ASAN_OPTIONS="detect_leaks=0")
    assert want[0] == b"start\n" and want[2] != 0 and b"heap-buffer-overflow" in want[1], want
    got = _run(copied, ["overflow"], ASAN_OPTIONS="detect_leaks=0")
    assert (got[0], got[2]) == (want[0], want[2]) and b"heap-buffer-overflow" in got[1]
    assert json.loads((copied.parent / "prog.inscount.out").read_text())["total"] > 0
