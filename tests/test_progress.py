"""The progress bar of a long rewrite (rewriter/progress.py): drawn on a terminal, never in
captured output; and the peak memory the report gives.

The oracle is the terminal itself: the rewrite runs on a pseudo-terminal (what a user
sees) and through a pipe (what a test, a script or CI captures). The rewrite of a small
sample takes less than the bar's delay, so the terminal run sets the delay to 0.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import resource
import struct
import subprocess
import sys
import termios
from pathlib import Path

from tests.support.samples import build

REPO = Path(__file__).resolve().parents[1]
# `anvil instrument ...` with the bar's delay at 0 (the phases are shown however short).
MAIN = "import sys, rewriter.progress as p; p.SHOW_AFTER = 0; from rewriter.cli import main; sys.exit(main())"


def _rewrite(args: list[str], terminal: bool) -> tuple[int, str]:
    """Exit status and stderr of ``anvil`` with ``args``; stderr a terminal or a pipe."""
    cmd = [sys.executable, "-c", MAIN.replace("main()", f"main({args!r})")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if not terminal:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stderr
    leader, follower = pty.openpty()
    # A terminal 120 columns wide (a new pseudo-terminal has 0: tqdm would draw nothing).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.wait(timeout=600), seen.decode(errors="replace")


def test_bar_on_a_terminal_only(tmp_path: Path) -> None:
    exe = build("hash", "Os-thumb-static")
    args = ["instrument", "--tool", "inscount", str(exe)]
    status, shown = _rewrite([*args, "-o", str(tmp_path / "term.inst")], terminal=True)
    assert status == 0, shown
    for phase in ("anvil: decoding", "anvil: placing counters", "anvil: relocating"):
        assert phase in shown
    # Counted in the program's procedures (how far it gets depends on the bar's refresh rate).
    procedures = json.loads((tmp_path / "term.inst.anvil.json").read_text())["procedures"]
    assert f"/{procedures} [" in shown and "\r" in shown
    status, captured = _rewrite([*args, "-o", str(tmp_path / "pipe.inst")], terminal=False)
    assert status == 0, captured
    assert "%" not in captured and "\r" not in captured and captured.startswith("anvil: wrote")
    # The report's peak memory is the rewriter's own: at most what the kernel says of the
    # largest child this test waited for.
    peak = json.loads((tmp_path / "pipe.inst.anvil.json").read_text())["peak_memory_mb"]
    assert 20 < peak <= resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 + 1
    # The bar changes nothing else.
    assert (tmp_path / "term.inst").read_bytes().replace(b"term.inst", b"pipe.inst") == \
        (tmp_path / "pipe.inst").read_bytes()
