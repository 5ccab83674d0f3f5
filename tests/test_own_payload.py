"""A payload appended to the program's file stays at its end (decision 0102).

Programs that carry data after their ELF image (PyInstaller's one-file programs, self-
extracting archives) find it from the end of their own file. The rewrite appended the
added region after everything in the file, so the payload was no longer at the end: the
copy read the region's last bytes instead. Bytes after all that the ELF headers describe
now stay the file's last.

samples/own_payload.c reads a payload and a marker from the end of /proc/self/exe; the
test appends them to the built program. Checked: inscount's InHost and ReHost copies
print what the original prints and exit 0; inscount's total equals qemu's count.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost_alone
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build

PAYLOAD = b"a payload the program finds from its end"


def test_appended_payload_stays_at_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "with-payload"
    shutil.copy2(build("own_payload", "O2-thumb-dyn"), binary)
    with open(binary, "ab") as f:
        f.write(PAYLOAD + struct.pack("<I", len(PAYLOAD)) + b"APPENDED-PAYLOAD")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 0 and PAYLOAD in original.stdout, original.stdout
    copy = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, copy)
    trace = place(binary, tmp_path, "trce")
    monkeypatch.chdir(trace.parent)
    assert results(copy, "inscount")["total"] == sum(exe_pcs(trace_pcs(trace, [], b"", argv0="prog"), trace).values())
    rehost, outcome = run_rehost_alone(instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst"))
    assert_same_behaviour(original, rehost)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error
