"""Measure how many cachesim records per second the ReHost dispatchers sustain on one core.

This measures the host side of ReHost alone, without qemu, gRPC or a program: a record
generator builds a ``cache_sim`` record stream in memory (site id word, effective
address word and ``left`` word per record, the format of rehost/stream.py), and the
benchmark feeds it in chunks of whole records just under 1 MiB to
``CDispatcher.dispatch`` (rehost/dispatch_c.py: the tool's C built for the host by
rehost/host_build.py, ``anvil_dispatch`` in runtime_stubs/host/anvil_host.c). Only the
dispatch loop is timed (``time.perf_counter``); loading the library, the start and end
routines and generating the stream are not.

The site table is a real one: the Lua interpreter (``tests.support.samples.build_lua``)
instrumented with ``anvil instrument --tool cachesim --mode rehost``; ``--sites FILE``
takes another ``*.sites.json`` and ``--synthetic`` a made-up table of 4096 ``cache_sim``
sites. Its start call (``profile_start(size, assoc, line, depth)``) and ``tags`` array
are rewritten for each cache geometry.

The generated stream imitates a program (class RecordGenerator): the sites are cut into
basic blocks of consecutive ids and those into loops, each block with a fixed way of
addressing (a stack slot, a strided walk over a heap region of 1-256 KiB, a field of
the loop's current heap object, or a random address in 64 MiB); hot loops are entered
with Zipf-like weights and run 1-64 iterations. That gives the program's accesses; as
in the instrumented program, they then pass a depth-2 repeat filter with one slot per
cache set (class RepeatFilterModel, api.RepeatFilter; depth 1 when direct-mapped), for
each row's geometry: an access to either of the two lines its set's slot holds is a
hit the program only counts (``mru_hits``, handed to the library before its end
routine as the program's end record would), every other access is a record (site id,
address, ``left``: the last address of the line that left the slot, 0 for none). With
the Lua table about 8.5 % (16 KiB) and 10 % (32 KiB, 32-byte lines) of the accesses
become records, most of them misses; the hit rate (over all accesses, the filtered
ones included) is about 93 % and 91 %, and the site working set is like the Lua
interpreter's own (a few thousand sites cover 99 % of the accesses, about 1300 of the
records). ``--records`` counts records: the generator runs until each geometry has
that many (10-12 accesses per record: generating takes far longer than measuring).
Rows:

- ``mix`` with the default geometry (16 KiB, 8-way, 64-byte lines) and 32 KiB, 4-way,
  32-byte lines;
- ``way-2 hits``: the site ids of the 16 KiB mix, the addresses cycling over three lines
  of one set (also through the filter: no access is filtered, as each line left the
  slot two accesses before). Every record after the first three hits the most recent
  of the ways ``cache_sim`` keeps (way 2 of the set, the slot holding ways 0 and 1), and
  every record updates the same set: each waits for the one before it (the set's row is
  loaded, compared, reordered and stored back). This was the upper bound of the C
  dispatcher while ``cache_sim`` had a shortcut for that way; with the row update (the
  same work for every record, cachesim.c) it is the bound of a stream on one set.
  Accesses to one line, the bound of the depth-1 filter, would give no records at all;
- ``replay`` with ``--stream FILE``: a stream a ReHost program wrote (its channel,
  file descriptor 1000, redirected to a file, e.g.
  ``qemu-arm -L /usr/arm-linux-gnueabihf ./lua.inst bench.lua 1000>lua.stream``), with
  ``--sites`` naming the table it was instrumented with (its end record's arrays are
  handed to the library, so the hit rate counts the filtered hits);
- the Python dispatcher (rehost/dispatch_py.py with analysis_libs/cachesim/cachesim.py,
  when that file exists) on the first ``--py-records`` records of the 16 KiB mix.

Every row is run ``--repeat`` times, each time with a fresh copy of the library (empty
cache); the table gives the median rate, the best, and the median by the dispatching
thread's CPU time (which a busy machine does not lower). Progress goes to stderr, the
table with a header line (date, commit, CPU, command) to stdout::

    python3 benchmarks/dispatch_rate.py                      # 20 M records, 3 repeats
    python3 benchmarks/dispatch_rate.py --records 50000000 --repeat 5
    python3 benchmarks/dispatch_rate.py --synthetic --records 5000000
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import re
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import cycle, islice
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for _path in (REPO_ROOT, REPO_ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from run import anvil_command, anvil_revision, cpu_model  # noqa: E402  (benchmarks/run.py, on sys.path above)

from rehost import host_build, sitetable, stream  # noqa: E402  (needs the repo root on sys.path)
from rehost.dispatch_c import CDispatcher  # noqa: E402
from rehost.dispatch_py import PyDispatcher, load_class  # noqa: E402
from rewriter.passes.cachesim import tags_length  # noqa: E402
from tests.oracles.repeat_filter import RepeatFilterModel  # noqa: E402

CHUNK = 1 << 20                       # bytes per dispatch call, as the bridge sends them (whole records here)
RECORD_WORDS = 3                      # cache_sim: site id + effective address + the line that left the filter slot
RECORD_KINDS = ["effaddr", "filter_left"]  # cache_sim's dynamic arguments, in record order
BATCH = 1 << 20                       # accesses the generator makes at a time
DEFAULT_GEOMETRY = (16 << 10, 8, 64)  # the cachesim tool's defaults
OTHER_GEOMETRY = (32 << 10, 4, 32)
TARGET = 100e6                        # records per second on one core (the target)
PY_ANALYSIS = REPO_ROOT / "analysis_libs" / "cachesim" / "cachesim.py"

# Address model of the generator (a 32-bit ARM Linux process under qemu-arm).
STACK_TOP = 0x407FF000
STACK_DEPTH = 16 << 10                # the stack pointer wanders in this window
HEAP = 0x00200000
RANDOM_SPAN = 64 << 20
STREAM_SIZES = (1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10)
STREAM_STRIDES = (4, 4, 4, 8, 16)
OBJECTS, HOT_OBJECTS = 4096, 256      # heap objects; most iterations use one of the first HOT_OBJECTS
HOT_LOOPS, ZIPF = 300, 1.2            # loops entered with weights 1/rank**ZIPF ...
COLD_SHARE = 0.02                     # ... and this share uniformly from all loops
ITERATIONS = (1, 1, 2, 3, 4, 8, 16, 32, 64)
BLOCK_LENGTHS = (1, 1, 2, 2, 3, 4, 5, 6, 8)
P_STACK, P_STREAM, P_OBJECT = 0.50, 0.75, 0.99  # block kinds, cumulative; the rest: random addresses
STACK, STREAM, OBJECT, RANDOM = range(4)


def progress(message: str) -> None:
    """Print a timestamped progress line to stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ site tables


def filter_depth(geometry: tuple[int, int, int]) -> int:
    """Lines per set the instrumented program keeps in its repeat filter slot (passes/cachesim.py)."""
    return min(2, geometry[1])


def synthetic_table(nsites: int = 4096, seed: int = 1) -> dict:
    """A valid cachesim site table of ``nsites`` cache_sim sites (two thirds loads)."""
    rng = random.Random(seed)
    return {
        "format": sitetable.FORMAT, "version": sitetable.VERSION, "tool": "cachesim",
        "routines": [{"name": "profile_start", "kinds": ["const", "const", "const", "const"]},
                     {"name": "cache_sim", "kinds": ["effaddr", "is_store", "filter_left"]},
                     {"name": "profile_end", "kinds": ["string", "const"]}],
        "sites": [[1, [None, int(rng.random() < 1 / 3), None]] for _ in range(nsites)],
        "start": [[0, [*DEFAULT_GEOMETRY, filter_depth(DEFAULT_GEOMETRY)]]],
        "end": [[2, ["dispatch_rate.cachesim.out", 0]]],
        "arrays": [{"name": "tags", "ctype": "uint32_t",
                    "length": tags_length(*DEFAULT_GEOMETRY, filter_depth(DEFAULT_GEOMETRY)),
                    "from_target": False},
                   {"name": "mru_hits", "ctype": "uint64_t", "length": 2, "from_target": True}],
        "facts": {key: [] for key in sitetable.FACT_KEYS},
    }


def instrumented_lua_table(work: Path) -> tuple[dict, str]:
    """The site table of the Lua interpreter instrumented for cachesim in ReHost mode."""
    from tests.support import samples

    binary = samples.build_lua()
    out = work / "lua.inst"
    progress(f"instrumenting {binary.name} for cachesim (rehost) ...")
    proc = subprocess.run([*anvil_command(), "instrument", "--tool", "cachesim", "--mode", "rehost", str(binary),
                           "-o", str(out)], capture_output=True, text=True, cwd=REPO_ROOT)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "anvil failed")
    return json.loads(Path(f"{out}.sites.json").read_bytes()), f"{binary.name} instrumented"


def with_geometry(document: dict, geometry: tuple[int, int, int]) -> sitetable.SiteTable:
    """``document`` with profile_start's arguments (size, assoc, line, depth) and the tags array
    set for ``geometry``, parsed."""
    size, assoc, line = geometry
    doc = json.loads(json.dumps(document))
    names = [r["name"] for r in doc["routines"]]
    for r in doc["routines"]:
        if r["name"] == "profile_start" and len(r["kinds"]) != 4:
            raise ValueError(f"the site table's profile_start takes {len(r['kinds'])} arguments, not 4 "
                             "(size, assoc, line, depth): written by an older cachesim")
    doc["start"] = [[index, [*geometry, filter_depth(geometry)] if names[index] == "profile_start" else args]
                    for index, args in doc["start"]]
    for entry in doc["arrays"]:
        if entry["name"] == "tags":
            entry["length"] = tags_length(size, assoc, line, filter_depth(geometry))
    table = sitetable.parse(json.dumps(doc).encode(), tool="cachesim")
    if assoc * line > size:
        raise ValueError(f"geometry {geometry}: size smaller than assoc*line")
    return table


def record_sites(table: sitetable.SiteTable) -> list[int]:
    """The ids of the table's cache_sim sites whose records are three words (site id, effective
    address, filter_left)."""
    wanted = [i for i, r in enumerate(table.routines)
              if r.name == "cache_sim" and [r.kinds[k] for k in r.dynamic_slots] == RECORD_KINDS]
    ids = [i for i, (routine, _) in enumerate(table.sites) if routine in wanted]
    if not ids:
        raise ValueError("the site table has no cache_sim sites with records of "
                         f"{RECORD_WORDS} words (site id, {', '.join(RECORD_KINDS)})")
    return ids


def store_flags(table: sitetable.SiteTable) -> bytes:
    """Per site id: 1 when the site is a store (its is_store argument is not 0), else 0."""
    flags = bytearray(len(table.sites))
    for i, (routine, args) in enumerate(table.sites):
        kinds = table.routines[routine].kinds
        if "is_store" in kinds and args[kinds.index("is_store")]:
            flags[i] = 1
    return bytes(flags)


# ------------------------------------------------------------------ record generator


class RecordGenerator:
    """Site ids and effective addresses of a made-up but program-like run of memory accesses:
    the program's calls of cache_sim, before its repeat filter (RepeatFilterModel) drops most.

    The sites (in table order, i.e. program order) are cut into blocks of 1-8
    consecutive ids and the blocks into loops of 1-8 blocks. Every block has a fixed
    way of addressing, as an instruction has: a stack slot (relative to a stack pointer
    that moves when a loop is entered), a strided walk over a heap region of its own,
    a field of the object the loop iteration works on, or a random address (hash
    tables, cold data). Loops are entered with Zipf-like weights over a hot set, with a
    cold tail, and run 1-64 iterations.
    """

    def __init__(self, site_ids: list[int], seed: int = 12345) -> None:
        self.rng = rng = random.Random(seed)
        blocks: list[tuple[int, ...]] = []
        i = 0
        while i < len(site_ids):  # runs of consecutive ids, as a block's accesses are numbered
            k = rng.choice(BLOCK_LENGTHS)
            run = [site_ids[i]]
            while len(run) < k and i + len(run) < len(site_ids) and site_ids[i + len(run)] == run[-1] + 1:
                run.append(site_ids[i + len(run)])
            blocks.append(tuple(run))
            i += len(run)
        heap = HEAP
        self.objects = [heap + 64 * rng.randrange(1 << 14) for _ in range(OBJECTS)]
        heap += 64 << 14
        loops: list[list[list]] = []
        for at in range(0, len(blocks), 8):
            group = blocks[at:at + 8]
            while group:
                n = rng.randint(1, 8)
                loop = []
                for ids in group[:n]:
                    r = rng.random()
                    if r < P_STACK:
                        loop.append([ids, STACK, 4 * rng.randrange(64)])
                    elif r < P_STREAM:
                        size = rng.choice(STREAM_SIZES)
                        loop.append([ids, STREAM, heap, heap, heap + size, rng.choice(STREAM_STRIDES)])
                        heap += size + 4096
                    elif r < P_OBJECT:
                        loop.append([ids, OBJECT, 4 * rng.randrange(16)])
                    else:
                        loop.append([ids, RANDOM])
                loops.append(loop)
                group = group[n:]
        self.loops = loops
        self.hot = rng.sample(loops, min(HOT_LOOPS, len(loops)))
        weights = [1 / (rank + 1) ** ZIPF for rank in range(len(self.hot))]
        self.hot_cum = [sum(weights[:n + 1]) for n in range(len(weights))]
        self.sp = STACK_TOP - 1024

    def accesses(self, naccesses: int) -> tuple[array, array]:
        """The next ``naccesses`` accesses: (site ids, addresses)."""
        rng = self.rng
        randrange = rng.randrange
        ids = array("I")
        addrs = array("I")
        objects, nobjects = self.objects, len(self.objects)
        while len(ids) < naccesses:
            picks = rng.choices(self.hot, cum_weights=self.hot_cum, k=1024)
            for _ in range(int(len(picks) * COLD_SHARE)):
                picks[randrange(len(picks))] = rng.choice(self.loops)
            for loop in picks:
                sp = self.sp + 8 * randrange(-32, 33)  # a call or a return
                self.sp = sp = min(max(sp, STACK_TOP - STACK_DEPTH), STACK_TOP - 1024)
                for _ in range(rng.choice(ITERATIONS)):
                    obj = objects[randrange(nobjects) if randrange(8) == 0 else randrange(HOT_OBJECTS)]
                    for block in loop:
                        site_ids, kind = block[0], block[1]
                        k = len(site_ids)
                        ids.extend(site_ids)
                        if kind == STACK:
                            base = sp + block[2]
                            addrs.extend(range(base, base + 4 * k, 4))
                        elif kind == STREAM:
                            pos, stride = block[2], block[5]
                            end = pos + stride * k
                            addrs.extend(range(pos, end, stride))
                            block[2] = end if end + stride * 8 < block[4] else block[3]
                        elif kind == OBJECT:
                            base = obj + block[2]
                            addrs.extend(range(base, base + 4 * k, 4))
                        else:
                            base = HEAP + (randrange(RANDOM_SPAN) & ~3)
                            addrs.extend(range(base, base + 4 * k, 4))
        return ids[:naccesses], addrs[:naccesses]


@dataclass
class Generated:
    """One geometry's record stream and what the program counted on the way."""

    geometry: tuple[int, int, int]
    chunks: list[bytes]
    accesses: int
    hits: list[int]                    # filtered hits [loads, stores]: the program's mru_hits
    prefix: tuple[int, list[int]] | None = None  # (records, hits) at the checkpoint

    @property
    def records(self) -> int:
        return sum(len(c) for c in self.chunks) // (4 * RECORD_WORDS)

    def hits_after(self, nrecords: int) -> list[int]:
        """mru_hits as the program would have sent them had it ended after ``nrecords`` records."""
        if nrecords >= self.records:
            return self.hits
        if self.prefix is not None and self.prefix[0] == nrecords:
            return self.prefix[1]
        raise ValueError(f"no hit counts after {nrecords} records")


def generate(generator: RecordGenerator, geometries: Sequence[tuple[int, int, int]], stores: bytes,
             nrecords: int, checkpoint: int = 0) -> list[Generated]:
    """``nrecords`` records for each geometry, from one access stream, in pieces of whole records
    of at most CHUNK bytes; with the filtered hits after ``checkpoint`` records too."""
    per_chunk = CHUNK // (4 * RECORD_WORDS)
    filters = [RepeatFilterModel(g, stores, filter_depth(g)) for g in geometries]
    chunks: list[list[bytes]] = [[] for _ in geometries]
    prefix: list[tuple[int, list[int]] | None] = [None] * len(geometries)
    checkpoint = min(checkpoint, nrecords)
    made = 0
    while any(f.records < nrecords for f in filters):
        ids, addrs = generator.accesses(BATCH)
        made += len(ids)
        for n, f in enumerate(filters):
            at = 0
            while at < len(ids) and f.records < nrecords:
                goal = checkpoint if f.records < checkpoint else nrecords
                at = f.feed(ids, addrs, at, goal - f.records)
                if f.records == checkpoint and prefix[n] is None:
                    prefix[n] = (f.records, list(f.hits))
            while f.pending() >= per_chunk:
                chunks[n].append(f.take(per_chunk))
        if made % (16 * BATCH) == 0:
            progress(f"  {made / 1e6:.0f} M accesses: "
                     + ", ".join(f"{f.records / 1e6:.1f} M records ({geometry_name(f.geometry)})" for f in filters))
    out = []
    for f, pieces, at in zip(filters, chunks, prefix):
        while f.pending():
            pieces.append(f.take(per_chunk))
        out.append(Generated(f.geometry, pieces, f.accesses, list(f.hits), at))
    return out


def way2_hits(mix: Generated, stores: bytes) -> Generated:
    """The mix's site ids with addresses cycling over three lines of one set (through the filter:
    every access a record, all but the first three hits on the set's way 2)."""
    size, assoc, line = mix.geometry
    stride = size // assoc  # the next line of the same set
    lines = [HEAP + line + k * stride for k in range(3)]
    model = RepeatFilterModel(mix.geometry, stores, filter_depth(mix.geometry))
    chunks = []
    addresses = cycle(lines)
    for chunk in mix.chunks:
        words = array("I", chunk)
        if sys.byteorder != "little":
            words.byteswap()
        ids = words[0::RECORD_WORDS]
        addrs = array("I", islice(addresses, len(ids)))
        model.feed(ids, addrs, 0, len(ids))
        chunks.append(model.take(len(ids)))
    if model.records != model.accesses:
        raise AssertionError("way-2 stream: the filter dropped accesses")
    return Generated(mix.geometry, chunks, model.accesses, [0, 0])


# ------------------------------------------------------------------ measuring


@dataclass
class Row:
    dispatcher: str
    stream: str
    cache: str
    records: int
    nbytes: int
    seconds: list[float]      # wall time (perf_counter) of each run
    cpu_seconds: list[float]  # CPU time of the dispatching thread in each run
    hit_rate: float | None

    def cells(self) -> list[str]:
        median = statistics.median(self.seconds)
        rate = self.records / median
        hit = f"{100 * self.hit_rate:.2f} %" if self.hit_rate is not None else "?"
        return [self.dispatcher, self.stream, self.cache, f"{self.records / 1e6:g} M", hit,
                f"{rate / 1e6:.1f}" + (" ✓" if rate >= TARGET else ""), f"{self.records / min(self.seconds) / 1e6:.1f}",
                f"{self.nbytes / median / 1e6:.0f}", f"{1e9 * median / self.records:.2f}",
                f"{self.records / statistics.median(self.cpu_seconds) / 1e6:.1f}"]


HEADINGS = ["dispatcher", "stream", "cache", "records", "hit rate", "M rec/s (median)", "M rec/s (best)",
            "MB/s", "ns/record", "M rec/s (CPU time)"]


def hit_rate(outputs: dict[str, bytes]) -> float | None:
    """hits / accesses from the cachesim results (text or JSON)."""
    for text in outputs.values():
        found = dict(re.findall(r'"?(accesses|hits)"?:?\s+(\d+)', text.decode(errors="replace")))
        if "accesses" in found and "hits" in found and int(found["accesses"]):
            return int(found["hits"]) / int(found["accesses"])
    return None


def timed_dispatch(dispatcher: stream.Dispatcher, chunks: Sequence[bytes]) -> tuple[float, float, int, bytes]:
    """Feed ``chunks`` to ``dispatcher`` (started) as StreamReader does; (wall s, CPU s, bytes used,
    the end record: the bytes from the end marker on, empty when the stream has none)."""
    used_total = 0
    pending = b""
    ended, fed = False, 0
    cpu_start = time.thread_time()
    start = time.perf_counter()
    for chunk in chunks:
        fed += 1
        data = pending + chunk if pending else chunk
        used, ended = dispatcher.dispatch(data)
        used_total += used
        pending = data[used:] if used != len(data) else b""
        if ended:
            break
    elapsed = time.perf_counter() - start
    cpu = time.thread_time() - cpu_start
    return elapsed, cpu, used_total, pending + b"".join(chunks[fed:]) if ended else b""


def set_arrays(dispatcher: stream.Dispatcher, table: sitetable.SiteTable, values: dict[str, Sequence[int]]) -> None:
    """Fill the arrays the program sends at its end (``mru_hits``) as its end record would."""
    for index, entry in enumerate(table.target_arrays):
        if entry.name in values:
            words = array({1: "B", 2: "H", 4: "I", 8: "Q"}[entry.element_size], values[entry.name])
            if sys.byteorder != "little":
                words.byteswap()
            dispatcher.set_array(index, words.tobytes())


def end_record_arrays(dispatcher: stream.Dispatcher, table: sitetable.SiteTable, data: bytes) -> None:
    """Hand the arrays of a captured stream's end record (``data``: from its marker on) to
    ``dispatcher``, as StreamReader does."""
    marker, narrays = struct.unpack_from("<2I", data)
    if marker != stream.END or narrays != len(table.target_arrays):
        raise ValueError("the stream's end record does not match its site table")
    at = 8
    for _ in range(narrays):
        index, nbytes = struct.unpack_from("<2I", data, at)
        if index >= len(table.target_arrays) or nbytes != table.target_arrays[index].nbytes:
            raise ValueError(f"end record: array {index} of {nbytes} bytes does not match the site table")
        dispatcher.set_array(index, data[at + 8:at + 8 + nbytes])
        at += 8 + ((nbytes + 3) & ~3)


def measure(name: str, make: Callable[[], stream.Dispatcher], table: sitetable.SiteTable, chunks: Sequence[bytes],
            repeat: int, bias: int = 0, mru_hits: Sequence[int] | None = None) -> Row:
    """Run ``chunks`` through ``repeat`` fresh dispatchers from ``make``; the row (dispatcher and cache unset).

    Before the end routines the program's arrays are filled: from the stream's end record
    if it has one, else ``mru_hits`` (the hits the generator's filter counted)."""
    row = Row("", name, "", 0, 0, [], [], None)
    for k in range(repeat):
        dispatcher = make()
        try:
            dispatcher.start(bias)
            elapsed, cpu, row.nbytes, end = timed_dispatch(dispatcher, chunks)
            row.records = dispatcher.records
            if end:
                end_record_arrays(dispatcher, table, end)
            elif mru_hits is not None:
                set_arrays(dispatcher, table, {"mru_hits": mru_hits})
            row.hit_rate = hit_rate(dispatcher.finish())
        finally:
            dispatcher.close()
        row.seconds.append(elapsed)
        row.cpu_seconds.append(cpu)
        progress(f"  run {k + 1}/{repeat}: {row.records / elapsed / 1e6:.2f} M records/s "
                 f"({row.records / cpu / 1e6:.2f} by CPU time)")
    return row


def geometry_name(geometry: Sequence[int]) -> str:
    size, assoc, line = geometry[:3]
    return f"{size >> 10}k/{assoc}-way/{line}B"


def read_stream(path: Path, table: sitetable.SiteTable) -> tuple[list[bytes], int]:
    """A captured stream's records in CHUNK pieces (the end record included) and its bias."""
    data = path.read_bytes()
    if len(data) < stream.HEADER.size:
        raise ValueError(f"{path}: no stream header")
    magic, version, d0, d1, bias = stream.HEADER.unpack_from(data)
    if magic != stream.MAGIC or version != stream.VERSION:
        raise ValueError(f"{path}: not a ReHost stream")
    if (d0 | d1 << 32).to_bytes(8, "little") != table.digest:
        raise ValueError(f"{path}: not written by a program instrumented with this site table")
    body = memoryview(data)[stream.HEADER.size:]
    return [bytes(body[at:at + CHUNK]) for at in range(0, len(body), CHUNK)], bias


def first_records(chunks: Sequence[bytes], nrecords: int) -> list[bytes]:
    """The chunks holding the first ``nrecords`` records (the last one cut)."""
    wanted, left = [], nrecords * 4 * RECORD_WORDS
    for chunk in chunks:
        if left <= 0:
            break
        wanted.append(chunk[:left])
        left -= len(wanted[-1])
    return wanted


# ------------------------------------------------------------------ main


def header_line() -> str:
    """One line saying when, where and how the table was produced."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    argv[0] = Path(argv[0]).name
    return f"Measured {now} · anvil {anvil_revision()} · CPU: {cpu_model()} · command: `{shlex.join(argv)}`"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Target: at least 100 M cache-simulated records/s on one core.")
    parser.add_argument("--records", type=int, default=20_000_000, metavar="N",
                        help="records in the generated stream (default 20000000)")
    parser.add_argument("--repeat", type=int, default=3, metavar="K", help="runs per row (default 3)")
    parser.add_argument("--py-records", type=int, default=1_000_000, metavar="N",
                        help="records for the Python dispatcher (default 1000000; 0: skip)")
    parser.add_argument("--sites", type=Path, metavar="FILE", help="site table (*.sites.json) to use")
    parser.add_argument("--synthetic", action="store_true", help="use a synthetic table of 4096 cache_sim sites")
    parser.add_argument("--stream", type=Path, metavar="FILE",
                        help="also replay this captured stream (needs --sites: the table it was written for)")
    parser.add_argument("--library", type=Path, metavar="SO",
                        help="host library to measure instead of building analysis_libs/cachesim")
    parser.add_argument("--seed", type=int, default=12345, help="generator seed (default 12345)")
    args = parser.parse_args(argv)
    if args.records <= 0 or args.repeat <= 0 or args.py_records < 0:
        parser.error("--records and --repeat must be positive, --py-records not negative")
    if args.stream and not args.sites:
        parser.error("--stream needs --sites")
    return args


def load_document(args: argparse.Namespace, work: Path) -> tuple[dict, str]:
    """The site table document to measure with, and where it came from."""
    if args.sites:
        return json.loads(args.sites.read_bytes()), args.sites.name
    if not args.synthetic:
        try:
            return instrumented_lua_table(work)
        except Exception as e:  # no cross toolchain, no Lua package, ...: fall back, and say so
            progress(f"no Lua site table ({e}); using a synthetic one")
    return synthetic_table(), "synthetic"


def markdown(rows: list[Row]) -> Iterator[str]:
    yield "| " + " | ".join(HEADINGS) + " |"
    yield "|" + "|".join("---" if n < 3 else "---:" for n in range(len(HEADINGS))) + "|"
    for row in rows:
        yield "| " + " | ".join(row.cells()) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    """Generate the streams, measure every row, print the table."""
    args = parse_args(argv)
    header = header_line()
    with tempfile.TemporaryDirectory(prefix="anvil-dispatch-rate.") as tmp:
        document, source = load_document(args, Path(tmp))
    geometries = (DEFAULT_GEOMETRY, OTHER_GEOMETRY)
    tables = {g: with_geometry(document, g) for g in geometries}
    sites = record_sites(tables[DEFAULT_GEOMETRY])
    stores = store_flags(tables[DEFAULT_GEOMETRY])
    nsites = len(tables[DEFAULT_GEOMETRY].sites)
    library = args.library or host_build.build(host_build.tool_sources("cachesim"))
    progress(f"site table: {source}, {nsites} sites; library {library}")
    progress(f"generating accesses until each geometry has {args.records / 1e6:g} M records ...")
    started = time.perf_counter()
    streams = generate(RecordGenerator(sites, args.seed), geometries, stores, args.records, args.py_records)
    progress(f"generated in {time.perf_counter() - started:.1f} s")

    rows: list[Row] = []
    notes = ["Mix: " + "; ".join(f"{geometry_name(g.geometry)}: {g.records / 1e6:g} M records from "
                                 f"{g.accesses / 1e6:.1f} M accesses ({100 * g.records / g.accesses:.2f} %)"
                                 for g in streams)
             + ". The others were hits on the lines the program keeps per set (its repeat filter)."]

    def c_row(stream_name: str, table: sitetable.SiteTable, geometry: Sequence[int], data: Sequence[bytes],
              bias: int = 0, mru_hits: Sequence[int] | None = None) -> None:
        progress(f"C dispatcher, {stream_name}, {geometry_name(geometry)} ...")
        row = measure(stream_name, lambda: CDispatcher(library, table), table, data, args.repeat, bias, mru_hits)
        row.dispatcher, row.cache = "C", geometry_name(geometry)
        rows.append(row)

    for generated in streams:
        c_row("mix", tables[generated.geometry], generated.geometry, generated.chunks, mru_hits=generated.hits)
    mix = streams[0]
    del streams
    py_chunks = first_records(mix.chunks, args.py_records)
    py_hits = mix.hits_after(args.py_records) if args.py_records else None
    way2 = way2_hits(mix, stores)
    del mix
    c_row("way-2 hits", tables[DEFAULT_GEOMETRY], DEFAULT_GEOMETRY, way2.chunks, mru_hits=way2.hits)
    del way2
    if args.stream:
        replay_table = sitetable.parse(args.sites.read_bytes(), tool="cachesim")
        data, bias = read_stream(args.stream, replay_table)
        geometry = next((call_args for routine, call_args in replay_table.start
                         if replay_table.routines[routine].name == "profile_start"), DEFAULT_GEOMETRY)
        c_row(f"replay {args.stream.name}", replay_table, geometry, data, bias)
        del data

    if not args.py_records:
        notes.append("Python dispatcher: skipped (--py-records 0).")
    elif not PY_ANALYSIS.is_file():
        notes.append(f"Python dispatcher: skipped, {PY_ANALYSIS.relative_to(REPO_ROOT)} does not exist.")
    else:
        cls = load_class(PY_ANALYSIS)
        table = tables[DEFAULT_GEOMETRY]
        progress(f"Python dispatcher, mix, {geometry_name(DEFAULT_GEOMETRY)} ...")
        row = measure("mix", lambda: PyDispatcher(cls, table), table, py_chunks, args.repeat, mru_hits=py_hits)
        row.dispatcher, row.cache = "Python", geometry_name(DEFAULT_GEOMETRY)
        rows.append(row)
        notes.append(f"Python dispatcher: the first {row.records / 1e6:g} M records of the "
                     f"{geometry_name(DEFAULT_GEOMETRY)} mix.")

    print(header)
    print()
    for line in markdown(rows):
        print(line)
    print()
    print(f"Site table: {source}, {nsites} sites ({len(sites)} cache_sim). Records fed in chunks of whole records "
          f"just under {CHUNK >> 20} MiB; {args.repeat} run(s) per row, each with a fresh copy of the library; "
          f"hit rates over all accesses (the program's filtered hits included); MB/s and ns/record from the "
          f"median wall time; the last column from the dispatching thread's CPU time (lower wall rates than "
          f"that mean the machine was busy). ✓: at least {TARGET / 1e6:.0f} M records/s.")
    for note in notes:
        print()
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
