"""Measure how many cachesim records per second the ReHost dispatchers sustain on one core.

This measures the host side of ReHost alone, without qemu, gRPC or a program: a record
generator builds a ``cache_sim`` record stream in memory (site id word + effective
address word per record, the format of rehost/stream.py), and the benchmark feeds it in
1 MiB chunks to ``CDispatcher.dispatch`` (rehost/dispatch_c.py: the tool's C built for
the host by rehost/host_build.py, ``anvil_dispatch`` in runtime_stubs/host/anvil_host.c).
Only the dispatch loop is timed (``time.perf_counter``); loading the library, the start
and end routines and generating the stream are not.

The site table is a real one: the Lua interpreter (``tests.support.samples.build_lua``)
instrumented with ``anvil instrument --tool cachesim --mode rehost``; ``--sites FILE``
takes another ``*.sites.json`` and ``--synthetic`` a made-up table of 4096 ``cache_sim``
sites. Its start call and ``tags`` array are rewritten for each cache geometry.

The generated stream imitates a program (class RecordGenerator): the sites are cut into
basic blocks of consecutive ids and those into loops, each block with a fixed way of
addressing (a stack slot, a strided walk over a heap region of 1-256 KiB, a field of
the loop's current heap object, or a random address in 64 MiB); hot loops are entered
with Zipf-like weights and run 1-64 iterations. With the Lua table that gives hit rates
of about 93 % (16 KiB) and 91 % (32 KiB, 32-byte lines) and a site working set like the
Lua interpreter's own (a few thousand sites cover 99 % of the records). Rows:

- ``mix`` with the default geometry (16 KiB, 8-way, 64-byte lines) and 32 KiB, 4-way,
  32-byte lines;
- ``one line``: the same site ids, every address in one line, so every access hits the
  most recently used way: the upper bound of the C dispatcher (dispatch overhead plus
  the shortest path through ``cache_sim``);
- ``replay`` with ``--stream FILE``: a stream a ReHost program wrote (its channel,
  file descriptor 1000, redirected to a file, e.g.
  ``qemu-arm -L /usr/arm-linux-gnueabihf ./lua.inst bench.lua 1000>lua.stream``), with
  ``--sites`` naming the table it was instrumented with;
- the Python dispatcher (rehost/dispatch_py.py with analysis_libs/cachesim/cachesim.py,
  when that file exists) on the first ``--py-records`` records of the mix.

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
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for _path in (REPO_ROOT, REPO_ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from run import anvil_command, anvil_revision, cpu_model  # noqa: E402  (benchmarks/run.py, on sys.path above)

from rehost import host_build, sitetable, stream  # noqa: E402  (needs the repo root on sys.path)
from rehost.dispatch_c import CDispatcher  # noqa: E402
from rehost.dispatch_py import PyDispatcher, load_class  # noqa: E402

CHUNK = 1 << 20                       # bytes per dispatch call, as the bridge sends them
RECORD_WORDS = 2                      # cache_sim: site id + effective address
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


def synthetic_table(nsites: int = 4096, seed: int = 1) -> dict:
    """A valid cachesim site table of ``nsites`` cache_sim sites (two thirds loads)."""
    rng = random.Random(seed)
    return {
        "format": sitetable.FORMAT, "version": sitetable.VERSION, "tool": "cachesim",
        "routines": [{"name": "profile_start", "kinds": ["const", "const", "const"]},
                     {"name": "cache_sim", "kinds": ["effaddr", "is_store"]},
                     {"name": "profile_end", "kinds": ["string", "const"]}],
        "sites": [[1, [None, int(rng.random() < 1 / 3)]] for _ in range(nsites)],
        "start": [[0, list(DEFAULT_GEOMETRY)]],
        "end": [[2, ["dispatch_rate.cachesim.out", 0]]],
        "arrays": [{"name": "tags", "ctype": "uint32_t", "length": DEFAULT_GEOMETRY[0] // DEFAULT_GEOMETRY[2],
                    "from_target": False}],
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
    """``document`` with profile_start's arguments and the tags array set for ``geometry``, parsed."""
    size, assoc, line = geometry
    doc = json.loads(json.dumps(document))
    names = [r["name"] for r in doc["routines"]]
    doc["start"] = [[index, list(geometry) if names[index] == "profile_start" else args]
                    for index, args in doc["start"]]
    for entry in doc["arrays"]:
        if entry["name"] == "tags":
            entry["length"] = size // line
    table = sitetable.parse(json.dumps(doc).encode(), tool="cachesim")
    if assoc * line > size:
        raise ValueError(f"geometry {geometry}: size smaller than assoc*line")
    return table


def record_sites(table: sitetable.SiteTable) -> list[int]:
    """The ids of the table's sites whose records are two words (cache_sim: site id + address)."""
    ids = [i for i, (routine, _) in enumerate(table.sites)
           if len(table.routines[routine].dynamic_slots) == RECORD_WORDS - 1]
    if not ids:
        raise ValueError("the site table has no cache_sim sites")
    return ids


# ------------------------------------------------------------------ record generator


class RecordGenerator:
    """Site ids and effective addresses of a made-up but program-like run of cache_sim records.

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

    def chunk(self, nrecords: int) -> tuple[array, array]:
        """The next ``nrecords`` records: (site ids, addresses)."""
        rng = self.rng
        randrange = rng.randrange
        ids = array("I")
        addrs = array("I")
        objects, nobjects = self.objects, len(self.objects)
        while len(ids) < nrecords:
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
        return ids[:nrecords], addrs[:nrecords]


def interleave(ids: array, addrs: array) -> bytes:
    """Records (site id, address) as stream bytes (little-endian words)."""
    words = array("I", bytes(4 * RECORD_WORDS * len(ids)))
    words[0::2] = ids
    words[1::2] = addrs
    if sys.byteorder != "little":
        words.byteswap()
    return words.tobytes()


def generate(generator: RecordGenerator, nrecords: int) -> tuple[list[bytes], list[array]]:
    """``nrecords`` records in CHUNK-sized pieces, and the site ids of each piece."""
    per_chunk = CHUNK // (4 * RECORD_WORDS)
    chunks, ids_of = [], []
    done = 0
    while done < nrecords:
        n = min(per_chunk, nrecords - done)
        ids, addrs = generator.chunk(n)
        chunks.append(interleave(ids, addrs))
        ids_of.append(ids)
        done += n
        if len(chunks) % 16 == 0:
            progress(f"  generated {done / 1e6:.0f} M records")
    return chunks, ids_of


def one_line_chunks(ids_of: list[array], address: int = HEAP + 0x40) -> list[bytes]:
    """The same site ids, every address in one cache line."""
    return [interleave(ids, array("I", [address]) * len(ids)) for ids in ids_of]


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


def timed_dispatch(dispatcher: stream.Dispatcher, chunks: Sequence[bytes]) -> tuple[float, float, int]:
    """Feed ``chunks`` to ``dispatcher`` (started) as StreamReader does; (wall s, CPU s, bytes used)."""
    used_total = 0
    pending = b""
    cpu_start = time.thread_time()
    start = time.perf_counter()
    for chunk in chunks:
        data = pending + chunk if pending else chunk
        used, ended = dispatcher.dispatch(data)
        used_total += used
        pending = data[used:] if used != len(data) else b""
        if ended:
            break
    elapsed = time.perf_counter() - start
    return elapsed, time.thread_time() - cpu_start, used_total


def measure(name: str, make: Callable[[], stream.Dispatcher], chunks: Sequence[bytes], repeat: int,
            bias: int = 0) -> Row:
    """Run ``chunks`` through ``repeat`` fresh dispatchers from ``make``; the row (dispatcher and cache unset)."""
    row = Row("", name, "", 0, 0, [], [], None)
    for k in range(repeat):
        dispatcher = make()
        try:
            dispatcher.start(bias)
            elapsed, cpu, row.nbytes = timed_dispatch(dispatcher, chunks)
            row.records = dispatcher.records
            row.hit_rate = hit_rate(dispatcher.finish())
        finally:
            dispatcher.close()
        row.seconds.append(elapsed)
        row.cpu_seconds.append(cpu)
        progress(f"  run {k + 1}/{repeat}: {row.records / elapsed / 1e6:.2f} M records/s "
                 f"({row.records / cpu / 1e6:.2f} by CPU time)")
    return row


def geometry_name(geometry: tuple[int, int, int]) -> str:
    size, assoc, line = geometry
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
    """Generate the stream, measure every row, print the table."""
    args = parse_args(argv)
    header = header_line()
    with tempfile.TemporaryDirectory(prefix="anvil-dispatch-rate.") as tmp:
        document, source = load_document(args, Path(tmp))
    tables = {g: with_geometry(document, g) for g in (DEFAULT_GEOMETRY, OTHER_GEOMETRY)}
    sites = record_sites(tables[DEFAULT_GEOMETRY])
    nsites = len(tables[DEFAULT_GEOMETRY].sites)
    library = args.library or host_build.build(host_build.tool_sources("cachesim"))
    progress(f"site table: {source}, {nsites} sites; library {library}")
    progress(f"generating {args.records / 1e6:g} M records ...")
    started = time.perf_counter()
    chunks, ids_of = generate(RecordGenerator(sites, args.seed), args.records)
    progress(f"generated in {time.perf_counter() - started:.1f} s")

    rows: list[Row] = []
    notes: list[str] = []

    def c_row(stream_name: str, table: sitetable.SiteTable, geometry: tuple[int, int, int],
              data: Sequence[bytes], bias: int = 0) -> None:
        progress(f"C dispatcher, {stream_name}, {geometry_name(geometry)} ...")
        row = measure(stream_name, lambda: CDispatcher(library, table), data, args.repeat, bias)
        row.dispatcher, row.cache = "C", geometry_name(geometry)
        rows.append(row)

    for geometry in (DEFAULT_GEOMETRY, OTHER_GEOMETRY):
        c_row("mix", tables[geometry], geometry, chunks)
    py_chunks = first_records(chunks, args.py_records)
    del chunks
    c_row("one line", tables[DEFAULT_GEOMETRY], DEFAULT_GEOMETRY, one_line_chunks(ids_of))
    del ids_of
    if args.stream:
        replay_table = sitetable.parse(args.sites.read_bytes(), tool="cachesim")
        data, bias = read_stream(args.stream, replay_table)
        geometry = next((tuple(call_args) for routine, call_args in replay_table.start
                         if replay_table.routines[routine].name == "profile_start"), DEFAULT_GEOMETRY)
        c_row(f"replay {args.stream.name}", replay_table, geometry, data, bias)  # type: ignore[arg-type]
        del data

    if not args.py_records:
        notes.append("Python dispatcher: skipped (--py-records 0).")
    elif not PY_ANALYSIS.is_file():
        notes.append(f"Python dispatcher: skipped, {PY_ANALYSIS.relative_to(REPO_ROOT)} does not exist.")
    else:
        cls = load_class(PY_ANALYSIS)
        table = tables[DEFAULT_GEOMETRY]
        progress(f"Python dispatcher, mix, {geometry_name(DEFAULT_GEOMETRY)} ...")
        row = measure("mix", lambda: PyDispatcher(cls, table), py_chunks, args.repeat)
        row.dispatcher, row.cache = "Python", geometry_name(DEFAULT_GEOMETRY)
        rows.append(row)
        notes.append(f"Python dispatcher: the first {row.records / 1e6:g} M records of the mix.")

    print(header)
    print()
    for line in markdown(rows):
        print(line)
    print()
    print(f"Site table: {source}, {nsites} sites ({len(sites)} cache_sim). Records fed in {CHUNK >> 20} MiB chunks; "
          f"{args.repeat} run(s) per row, each with a fresh copy of the library; MB/s and ns/record from the "
          f"median wall time; the last column from the dispatching thread's CPU time (lower wall rates than "
          f"that mean the machine was busy). ✓: at least {TARGET / 1e6:.0f} M records/s.")
    for note in notes:
        print()
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
