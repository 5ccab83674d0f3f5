"""One build of a sample through the counting tools, judged against the original under qemu-arm.

What scripts/clang_sweep.py and scripts/variant_sweep.py share: build the sample (optionally
stripped), run it under qemu-arm and count its instructions (qemu's trace), instrument it with
each tool in each mode, run the copy the same way and say what differs: a refused rewrite, a
crash, other output or exit status, an inscount total that is not qemu's count, ReHost results
that are not InHost's.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

ARGS: dict[str, list[str]] = {"calls": ["stdin", "two words"]}
STDIN: dict[str, bytes] = {"calls": b"some input for the calls sample\n"}
#: Samples whose children write results files of their own: inscount's total is the parent's only.
FORKING = {"forks"}


def _instrument(binary: Path, tool: str, dest: Path, mode: str) -> str:
    """Instrument ``binary`` into ``dest`` (a fresh directory); '' or the last line of the refusal."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    for old in dest.parent.glob("*"):
        old.unlink()
    err = dest.parent.parent / "err"
    with open(err, "w") as handle:
        proc = subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "--tool", tool, "--mode", mode,
                               "--format", "json", str(binary), "-o", str(dest)],
                              stderr=handle, stdout=subprocess.DEVNULL, timeout=900)
    if proc.returncode == 0:
        return ""
    lines = err.read_text().strip().splitlines() or [f"exit {proc.returncode}"]
    return "refused: " + lines[-1][:160]


#: What a profiling timer runs in a static gprof (-pg) program: glibc's SIGPROF handler,
#: which adds the interrupted PC to gmon.out's histogram, and the signal return it goes
#: back through. How often depends on time (a traced run is slower and takes more), so
#: neither count includes it (timed_code).
TIMED = ("__profil_counter", "profil_counter", "__default_rt_sa_restorer")


def timed_code(binary: Path) -> tuple[list[tuple[int, int]], set[str]]:
    """The address ranges of TIMED code in ``binary`` (unstripped; none unless it profiles
    with mcount) and the names Anvil's results give them (every symbol there, ``sub_<hex>``)."""
    from elftools.elf.elffile import ELFFile

    with open(binary, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".symtab")
        symbols = [(s.name, s["st_value"] & ~1, s["st_size"]) for s in table.iter_symbols()] if table else []
    if not any(name == "__gnu_mcount_nc" and size for name, _, size in symbols):
        return [], set()
    ranges = {(address, address + size) for name, address, size in symbols if name in TIMED and size}
    names = {name for name, address, _ in symbols if any(address == lo for lo, _ in ranges)}
    return sorted(ranges), names | {f"sub_{lo:x}" for lo, _ in ranges}


def gmon_profile(data: bytes) -> bytes:
    """gprof's ``gmon.out`` (32-bit) without what timing decides: the histogram's bins are
    zeroed (profil's samples), its range and the call-graph arcs (``mcount``'s caller and
    callee addresses and counts, sorted) are kept."""
    out, at = [data[:20]], 20
    arcs = []
    while at < len(data):
        tag = data[at]
        if tag == 0:  # histogram: lowpc, highpc, bins, rate, dimension (16 bytes), 2-byte bins
            bins = struct.unpack_from("<I", data, at + 9)[0]
            out.append(data[at:at + 33] + bytes(2 * bins))
            at += 33 + 2 * bins
        elif tag == 1:  # arc: frompc, selfpc, count
            arcs.append(data[at:at + 13])
            at += 13
        else:  # basic-block counts and anything else: kept whole
            out.append(data[at:])
            break
    return b"".join(out + sorted(arcs))


def written_files(directory: Path) -> dict[str, bytes]:
    """The files a run of ``directory``/prog wrote there (gcov's ``.gcda``, gprof's
    ``gmon.out``...), not the program itself or Anvil's files (``prog.*``); ``gmon.out``
    as gmon_profile reads it."""
    files = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name != "prog" and not path.name.startswith("prog."):
            data = path.read_bytes()
            files[path.name] = gmon_profile(data) if path.name == "gmon.out" else data
    return files


def judge_build(sample: str, binary: Path, stripped: bool, tools: list[str], modes: list[str], tmp: Path,
                server: str | None = None, env: dict[str, str] | None = None,
                lib_root: str = "/usr/arm-linux-gnueabihf") -> list[tuple[str, str]]:
    """Outcome ('ok' or a failure text) of each ``tool/mode`` on ``binary`` (a build of ``sample``).

    ``tmp`` is an empty scratch directory; ``server``: a rehost-server's address, needed
    for mode ``rehost``, whose results must equal InHost's (so InHost runs first). Every run
    has the environment ``env`` and the libraries of ``lib_root``; the files a copy writes
    in its directory must be the original's (written_files).
    """
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs
    from tests.support.run import place, results, run_prog

    timed, timed_names = timed_code(binary)
    if stripped:
        plain = tmp / "stripped"
        subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(plain), str(binary)], check=True)
        binary = plain
    args, stdin = ARGS.get(sample, []), STDIN.get(sample, b"")
    placed = place(binary, tmp, "orig")
    original = run_prog(placed, args, stdin, env=env, lib_root=lib_root)
    original_files = written_files(placed.parent)
    traced = tmp / "trace"
    traced.mkdir()  # the traced run's files (gcov adds to a .gcda it finds) go apart from the others
    total = sum(n for pc, n in exe_pcs(trace_pcs(placed, args, stdin, argv0="prog", lib_root=lib_root, env=env,
                                                 cwd=traced), placed).items()
                if not any(lo <= pc < hi for lo, hi in timed))
    out: list[tuple[str, str]] = []
    for tool in tools:
        inhost_results: bytes | None = None
        for mode in modes:
            name = f"{tool}/{mode}"
            dest = tmp / ("inst" if mode == "inhost" else "rhst") / "prog"
            refusal = _instrument(binary, tool, dest, mode)
            if refusal:
                out.append((name, refusal))
                continue
            try:
                if mode == "inhost":
                    inst = run_prog(dest, args, stdin, timeout=180, env=env, lib_root=lib_root)
                else:
                    from tests.support.rehost import run_rehost

                    assert server is not None, "mode rehost needs a server"
                    inst, _ = run_rehost(dest, server, args, stdin, timeout=180, env=env, lib_root=lib_root)
            except subprocess.TimeoutExpired:
                out.append((name, "timeout"))
                continue
            if (inst.returncode, inst.stdout, inst.stderr) != (original.returncode, original.stdout, original.stderr):
                out.append((name, f"differs: exit {inst.returncode} (orig {original.returncode}) "
                                  f"stderr {inst.stderr[-120:]!r}"))
                continue
            written = written_files(inst.cwd)
            if written != original_files:
                names = sorted(n for n in {*written, *original_files} if written.get(n) != original_files.get(n))
                out.append((name, f"files differ: {', '.join(names)[:120]}"))
                continue
            result_file = inst.cwd / f"prog.{tool}.out"
            if not result_file.is_file():
                out.append((name, "no results"))
                continue
            if mode == "inhost":
                inhost_results = result_file.read_bytes()
            elif inhost_results is not None and result_file.read_bytes() != inhost_results:
                out.append((name, "results differ from InHost's"))
                continue
            if tool == "inscount" and sample not in FORKING:
                counted = results(inst, tool)
                got = counted["total"] - sum(n for name, n in counted["procedures"].items() if name in timed_names)
                if got != total:  # stripped too: every instruction that runs is found (decision 0056)
                    out.append((name, f"count {got} vs qemu {total}"))
                    continue
            out.append((name, "ok"))
    return out
