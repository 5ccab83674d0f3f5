"""cachesim built for the host (ReHost's C dispatcher) against the reference cache.

A random access stream with locality (walks, reuse of a working set a little larger
than the cache, far addresses) goes through the program's repeat filter
(tests/oracles/repeat_filter.py) into records, the way an instrumented program sends
them; the host library runs them through ``anvil_dispatch`` and must report exactly the
hits and misses of the plain-Python reference cache fed the whole stream. The
geometries cover both update paths of cachesim.c's ``cache_sim``: the vector row update
for up to 8 ways the library keeps (when the host has AVX2) and the ordered shift for
more, and the one-deep filter of ``kept=1`` and of direct-mapped caches; each built three
ways: for this host (``-march=native``: AVX-512 where it has it), with AVX2 at most, and
portable (no AVX2: the ordered shift for every row). The records go in pieces that cut
records, as the bridge's chunks do, so cache_sim's run form stops and resumes mid-stream.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import random
import struct
from array import array
from pathlib import Path

import pytest

from rehost import host_build, sitetable
from rehost.dispatch_c import CDispatcher
from rewriter.passes.cachesim import tags_length
from tests.oracles.cache_model import simulate
from tests.oracles.repeat_filter import RepeatFilterModel

LOAD_SITE, STORE_SITE = 0, 1
# Host builds of cachesim.c: extra compiler flags after host_build.CFLAGS (-march=native).
BUILDS = {"native": (), "avx2": ("-mno-avx512f",), "portable": ("-mno-avx2",)}


def site_table(size: int, assoc: int, line: int, depth: int) -> sitetable.SiteTable:
    """A cachesim site table with one load site and one store site, as the pass writes it."""
    return sitetable.parse(json.dumps({
        "format": sitetable.FORMAT, "version": sitetable.VERSION, "tool": "cachesim",
        "routines": [{"name": "profile_start", "kinds": ["const"] * 4},
                     {"name": "cache_sim", "kinds": ["effaddr", "is_store", "filter_left"]},
                     {"name": "profile_end", "kinds": ["string", "const"]}],
        "sites": [[1, [None, 0, None]], [1, [None, 1, None]]],
        "start": [[0, [size, assoc, line, depth]]],
        "end": [[2, ["host-cachesim.out", 1]]],
        "arrays": [{"name": "tags", "ctype": "uint32_t", "length": tags_length(size, assoc, line, depth),
                    "from_target": False},
                   {"name": "mru_hits", "ctype": "uint64_t", "length": 2, "from_target": True}],
        "facts": {key: [] for key in sitetable.FACT_KEYS},
    }).encode(), tool="cachesim")


def access_stream(size: int, n: int, seed: int) -> tuple[array, array]:
    """``n`` accesses (site ids, addresses): strided walks, reuse of a working set of 1.5
    cache sizes and far random addresses, a third of them stores."""
    rng = random.Random(seed)
    ids, addrs = array("I"), array("I")
    base = 0x10000
    while len(addrs) < n:
        kind = rng.random()
        if kind < 0.3:  # a walk
            start, stride = base + rng.randrange(4 * size) & ~3, rng.choice((4, 8, 32, 64))
            run = [start + stride * k for k in range(rng.randrange(4, 40))]
        elif kind < 0.95:  # the working set
            run = [base + (rng.randrange(3 * size // 2) & ~3) for _ in range(rng.randrange(1, 8))]
        else:
            run = [rng.randrange(1 << 31) & ~3 for _ in range(rng.randrange(1, 4))]
        addrs.extend(run)
        ids.extend(STORE_SITE if rng.random() < 1 / 3 else LOAD_SITE for _ in run)
    return ids[:n], addrs[:n]


@pytest.mark.parametrize("size, assoc, line, kept", [
    (16384, 8, 64, 2),    # the default: 6 ways kept in the library
    (16384, 8, 64, 1),    # 7
    (32768, 4, 32, 2),    # 2
    (2048, 2, 32, 2),     # none: the program keeps both ways
    (8192, 16, 64, 2),    # 14: the ordered shift
    (2048, 64, 32, 1),    # one set of 63
    (1024, 1, 16, 2),     # direct-mapped: depth 1, nothing kept
])
@pytest.mark.parametrize("build", BUILDS)
def test_host_cachesim_matches_reference(size: int, assoc: int, line: int, kept: int, build: str) -> None:
    depth = min(kept, assoc)
    ids, addrs = access_stream(size, 60_000, seed=size + assoc + kept)
    stores = bytes([0, 1])
    model = RepeatFilterModel((size, assoc, line), stores, depth)
    model.feed(ids, addrs, 0, len(addrs))
    assert 0 < model.records < model.accesses  # the filter takes some, the library sees some
    records = model.take(model.records)

    table = site_table(size, assoc, line, depth)
    dispatcher = CDispatcher(host_build.build(host_build.tool_sources("cachesim"), BUILDS[build]), table)
    try:
        dispatcher.start(0)
        rng, at, pending = random.Random(kept), 0, b""
        while at < len(records):  # pieces of 1-4000 bytes; what a piece leaves goes before the next
            piece = records[at:at + rng.randrange(1, 4000)]
            at += len(piece)
            data = pending + piece
            used, ended = dispatcher.dispatch(data)
            assert not ended and len(data) - used < 4 * 3  # all but a cut record
            pending = data[used:]
        assert pending == b"" and dispatcher.records == model.records
        mru = next(i for i, a in enumerate(table.target_arrays) if a.name == "mru_hits")
        dispatcher.set_array(mru, struct.pack("<2Q", *model.hits))
        outputs = dispatcher.finish()
    finally:
        dispatcher.close()
    got = json.loads(b"".join(outputs.values()))
    expected = simulate(zip(addrs, (ids[i] == STORE_SITE for i in range(len(ids)))), size, assoc, line)
    assert {key: got[key] for key in expected} == expected


class _MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h), field for field."""

    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _heap_in_use() -> int:
    """Bytes malloc has handed out and not had back: from the heap and mmapped."""
    gc.collect()
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def test_sessions_unload_their_library_and_free_its_tables() -> None:
    """A server runs session after session, each with a private copy of the library:
    closing one unloads that copy (it leaves /proc/self/maps) and first frees what the
    library took from the process's heap, cache_sim's byte per site among it. With a
    million sites, three sessions that kept theirs would leave 3 MB behind."""
    nsites = 1_000_000
    table = site_table(16384, 8, 64, 2)
    table.sites = table.sites * (nsites // 2)
    library = host_build.build(host_build.tool_sources("cachesim"), ())

    def session() -> None:
        dispatcher = CDispatcher(library, table)
        private = os.path.join(dispatcher._tmp, "analysis.so")
        try:
            dispatcher.start(0)
            assert private in Path("/proc/self/maps").read_text()
            dispatcher.dispatch(struct.pack("<3I", STORE_SITE, 0x1000, 0))
            dispatcher.finish()
        finally:
            dispatcher.close()
        assert private not in Path("/proc/self/maps").read_text()

    session()  # the first one's one-time allocations (ctypes types, caches)
    before = _heap_in_use()
    for _ in range(3):
        session()
    assert _heap_in_use() - before < nsites


def test_results_over_a_sessions_limit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Results that cannot come back in one session's summary (rehost.stream.RESULTS_LIMIT,
    protobuf's 2 GiB) end the session with an error naming them, read or not (decision
    0092): ctypes read the C buffer with an ``int`` size, and a memtrace of 4.3 GB (XFOIL's)
    came back as its first 46 MB, the session complete. Here the limit is made smaller
    than cachesim's JSON, and the library's own length of it is the oracle."""
    from rehost import stream

    table = site_table(16384, 8, 64, 2)
    library = host_build.build(host_build.tool_sources("cachesim"), ())

    def session() -> dict[str, bytes]:
        dispatcher = CDispatcher(library, table)
        try:
            dispatcher.start(0)
            dispatcher.dispatch(struct.pack("<3I", STORE_SITE, 0x1000, 0))
            return dispatcher.finish()
        finally:
            dispatcher.close()

    (path, content), = session().items()
    monkeypatch.setattr(stream, "RESULTS_LIMIT", len(content) - 1)
    with pytest.raises(stream.ResultsTooLarge, match=f"{path} \\({len(content):,} bytes\\)"):
        session()
    monkeypatch.setattr(stream, "RESULTS_LIMIT", len(content))
    assert session() == {path: content}


def test_output_past_the_limit_is_counted_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library keeps no more of the tool's output than a session can send back: past
    rehost.stream.RESULTS_LIMIT the bytes are counted in the output's length, not stored.
    Before, the check at the end came after every byte was held: a ReHost memtrace of a
    run of 3.1 G instructions grew ``anvil run`` to 22.7 GB, and the kernel killed it.
    Written through the library's own sink (as a tool's fprintf is): 40 writes of 4 KiB
    under a limit of 10 KiB; the oracle is what was written."""
    from rehost import stream
    from rehost.dispatch_c import _Output

    monkeypatch.setattr(stream, "RESULTS_LIMIT", 10 * 1024)
    dispatcher = CDispatcher(host_build.build(host_build.tool_sources("cachesim"), ()), site_table(16384, 8, 64, 2))
    try:
        dispatcher.start(0)
        lib = dispatcher.lib
        chunk = bytes(range(256)) * 16
        lib.anvil_sink_open(b"big.out")
        for _ in range(40):
            lib.anvil_sink_write(chunk, len(chunk))
        lib.anvil_sink_close()
        outputs = (_Output * 64).in_dll(lib, "anvil_outputs")
        mine = next(outputs[i] for i in range(ctypes.c_uint32.in_dll(lib, "anvil_noutputs").value)
                    if outputs[i].path == b"big.out")
        assert mine.len == 40 * len(chunk)  # counted
        assert mine.cap <= 16 * 1024 and ctypes.string_at(mine.data, 2 * len(chunk)) == 2 * chunk  # kept: 8 KiB
        with pytest.raises(stream.ResultsTooLarge, match=r"big\.out \(163,840 bytes\)"):
            dispatcher.finish()
    finally:
        dispatcher.close()
