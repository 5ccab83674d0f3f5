"""A return site whose jump finds no room falls back on its own (decision 0042).

Debian's zstd names glibc's ``backtrace``, so it gets original return addresses by
default (decision 0013): every return site in relocated code gets a jump over the
original code. In ``main``, calls come so close together that some sites have only
the two bytes of a B.N, and no trampoline within its 2 KiB: the program used to be
refused whole. Now the calls returning there leave relocated return addresses, the
report says how many, and the program behaves as the original and is counted exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import SAMPLES_DIR, debian_packages

PACKAGES = ["zstd:armhf", "libzstd1:armhf", "liblz4-1:armhf", "liblzma5:armhf", "zlib1g:armhf",
            "libstdc++6:armhf", "libgcc-s1:armhf"]


def test_zstd_rewrites_by_default_with_relocated_returns_where_no_room(tmp_path: Path) -> None:
    root = debian_packages("zstd-armhf", PACKAGES, "usr/bin/zstd")
    program = root / "usr/bin/zstd"
    env = {"LD_LIBRARY_PATH": ":".join(str(root / d / "arm-linux-gnueabihf") for d in ("lib", "usr/lib"))}
    data = tmp_path / "input.txt"
    data.write_bytes(b"".join(p.read_bytes() for p in sorted(SAMPLES_DIR.glob("*.c")))[:8192])
    args = ["-c", "-3", str(data)]
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, args, env=env)
    assert original.returncode == 0 and original.stdout.startswith(b"\x28\xb5\x2f\xfd")  # a zstd frame
    trace = trace_pcs(placed, args, b"", argv0="prog", env=env)
    expected = sum(exe_pcs(trace, placed).values())

    image = instrument(program, "inscount", tmp_path)
    report = json.loads(Path(str(image) + ".anvil.json").read_text())
    assert report["return_addresses"] == "original"
    assert 0 < report["return_sites"]["relocated"] < report["return_sites"]["original"]
    run = run_prog(image, args, env=env, like_trace=True)  # the trace's descriptors: files
    assert_same_behaviour(original, run)
    assert results(run, "inscount")["total"] == expected
