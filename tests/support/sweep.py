"""One build of a sample through the counting tools, judged against the original under qemu-arm.

What scripts/clang_sweep.py and scripts/variant_sweep.py share: build the sample (optionally
stripped), run it under qemu-arm and count its instructions (qemu's trace), instrument it with
each tool in each mode, run the copy the same way and say what differs: a refused rewrite, a
crash, other output or exit status, an inscount total that is not qemu's count, ReHost results
that are not InHost's.
"""

from __future__ import annotations

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


def judge_build(sample: str, binary: Path, stripped: bool, tools: list[str], modes: list[str], tmp: Path,
                server: str | None = None) -> list[tuple[str, str]]:
    """Outcome ('ok' or a failure text) of each ``tool/mode`` on ``binary`` (a build of ``sample``).

    ``tmp`` is an empty scratch directory; ``server``: a rehost-server's address, needed
    for mode ``rehost``, whose results must equal InHost's (so InHost runs first).
    """
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs
    from tests.support.run import place, results, run_prog

    if stripped:
        plain = tmp / "stripped"
        subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(plain), str(binary)], check=True)
        binary = plain
    args, stdin = ARGS.get(sample, []), STDIN.get(sample, b"")
    placed = place(binary, tmp, "orig")
    original = run_prog(placed, args, stdin)
    total = sum(exe_pcs(trace_pcs(placed, args, stdin, argv0="prog"), placed).values())
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
                    inst = run_prog(dest, args, stdin, timeout=180)
                else:
                    from tests.support.rehost import run_rehost

                    assert server is not None, "mode rehost needs a server"
                    inst, _ = run_rehost(dest, server, args, stdin, timeout=180)
            except subprocess.TimeoutExpired:
                out.append((name, "timeout"))
                continue
            if (inst.returncode, inst.stdout, inst.stderr) != (original.returncode, original.stdout, original.stderr):
                out.append((name, f"differs: exit {inst.returncode} (orig {original.returncode}) "
                                  f"stderr {inst.stderr[-120:]!r}"))
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
                got = results(inst, tool)["total"]
                if got != total:  # stripped too: every instruction that runs is found (decision 0056)
                    out.append((name, f"count {got} vs qemu {total}"))
                    continue
            out.append((name, "ok"))
    return out
