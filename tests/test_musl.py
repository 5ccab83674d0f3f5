"""Programs linked against musl rather than glibc (decision 0084).

Embedded Linux (OpenWrt, Alpine) ships musl. Its dynamic linker ignores DT_PREINIT_ARRAY
and runs every initialiser from the program's start, so a dynamic program's loader stub
must find out at the entry that the preinit call it was prepared for never came, and map
the region then (before, every dynamic musl program died of SIGSEGV at its first patched
call). On ARM it never runs DT_INIT or DT_FINI either: a program with ``libc.so`` last
runs its own code in its first DT_FINI_ARRAY function, where its end is now observed
(before, no results were written). Debian's musl-gcc links ``libc.a`` into a PIE that has
musl's dynamic linker as its interpreter: such a program leaves through exit and
exit_group of its own, and its end is observed there, as in a static program (before,
at _fini: exit's stdio flush went uncounted). Each tool and mode must leave the
behaviour, the printed addresses of a global, the heap and the stack included,
unchanged, and inscount must count what qemu runs in the executable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rehost.server import Library, start_server
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build_musl, musl_root

LINKS = ["shared", "pie", "static"]


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("sample", ["addresses", "sort"])
def test_musl_program_counted_as_qemu(sample: str, link: str, tmp_path: Path) -> None:
    binary = build_musl(sample, link)
    root = str(musl_root())
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, lib_root=root)
    assert original.returncode == 0 and original.stdout, original.stderr
    counted = run_prog(instrument(binary, "inscount", tmp_path), lib_root=root)
    assert_same_behaviour(original, counted)
    qemu = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog", lib_root=root), placed).values())
    assert results(counted, "inscount")["total"] == qemu


@pytest.mark.parametrize("link", LINKS)
def test_musl_program_cachesim_both_modes(link: str, tmp_path: Path) -> None:
    binary = build_musl("addresses", link)
    root = str(musl_root())
    original = run_prog(place(binary, tmp_path, "orig"), lib_root=root)
    inhost = run_prog(instrument(binary, "cachesim", tmp_path), lib_root=root)
    assert_same_behaviour(original, inhost)
    srv, port = start_server(Library(None), log=None)
    try:
        image = instrument(binary, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
        rehosted, outcome = run_rehost(image, f"127.0.0.1:{port}", lib_root=root)
    finally:
        srv.stop(None)
    assert_same_behaviour(original, rehosted)
    assert outcome.summary.complete, outcome.error
    # The same accesses seen: ReHost's results are InHost's.
    assert results(rehosted, "cachesim") == results(inhost, "cachesim")


@pytest.mark.parametrize("link", ["pie", "static"])
def test_stripped_musl_threads_counted(link: str, tmp_path: Path) -> None:
    """samples/x64_thread_counts.c (four threads counting the same code), stripped: in
    musl-gcc's PIE, whose C library is inside though it has an interpreter, the clone that
    starts a thread was looked for only in static programs, so the copy did not know it
    started threads: plain counters and sums lost to each other, half to three quarters
    of qemu's count, different in every run (decision 0183). Counts vary a little with the
    threads' meetings (musl's locks spin): within 1 % of qemu's."""
    from tests.support.samples import stripped

    binary = stripped(build_musl("x64_thread_counts", link), tmp_path / "stripped")
    root = str(musl_root())
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, lib_root=root)
    assert original.returncode == 0, original.stderr
    counted = run_prog(instrument(binary, "inscount", tmp_path), lib_root=root)
    assert_same_behaviour(original, counted)
    qemu = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog", lib_root=root), placed).values())
    assert abs(results(counted, "inscount")["total"] - qemu) < qemu // 100
