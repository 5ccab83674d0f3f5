"""Debian's armel programs (soft-float ARMv5TE) through the counting tools, next to the original.

Downloads Debian 12's armel grep, sed, gzip, bc and lua5.4 with the libraries they need
(``apt-get download PKG:armel``: ``dpkg --add-architecture armel && apt-get update`` first),
unpacks them once into the sample cache, and runs each program's workload under qemu-arm
(``-L /usr/arm-linux-gnueabi``, its libraries through LD_LIBRARY_PATH) and its copies
instrumented with each tool: the same output and exit status; inscount's total against
qemu's count of the executable's instructions (Lua's differs from run to run: it seeds its
hashes from addresses and time). Decision 0094.

    PYTHONPATH=. python3 scripts/armel_programs.py [--programs gzip,bc,grep,sed,lua] [--tools T,T]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PACKAGES = ["gzip:armel", "bc:armel", "libreadline8:armel", "libtinfo6:armel", "lua5.4:armel",
            "liblua5.4-0:armel", "grep:armel", "libpcre2-8-0:armel", "sed:armel", "libacl1:armel",
            "libselinux1:armel"]
TEXT = b"".join(b"line %d abbbd acd the quick brown fox abcbcd %d\n" % (i, i * 7919 % 1000) for i in range(400))
#: Name -> (path in the packages, arguments, stdin).
PROGRAMS: dict[str, tuple[str, list[str], bytes]] = {
    "gzip": ("bin/gzip", ["-9", "-n", "-c"], TEXT),
    "bc": ("usr/bin/bc", ["-l"], b"scale=60; 4*a(1)\ne(1)\nsqrt(2)\nfor(i=0;i<200;i++) x=x+i^2\nx\n"),
    "lua": ("usr/bin/lua5.4", ["-e", "local t={} for i=1,3000 do t[i]=string.format('%05d', i*i) end "
                                     "table.sort(t) print(#t, t[1], t[3000])"], b""),
    "grep": ("bin/grep", ["-n", "-E", "a(bc)+d|ab+d"], TEXT),
    "sed": ("bin/sed", ["-e", r"s/a\(b*\)d/X\1Y/g", "-e", "s/[0-9]\\+/N/2"], TEXT),
}


def main() -> int:
    """Run each program and tool; print one line each; exit status 1 if any differs."""
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs
    from tests.support.run import place, results, run_prog
    from tests.support.samples import ARMEL_SYSROOT, debian_packages

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--tools", default="inscount,bbcount,cachesim,memtrace")
    opts = parser.parse_args()
    root = debian_packages("armel-programs", PACKAGES, "usr/bin/lua5.4")
    env = {"LD_LIBRARY_PATH": f"{root}/lib/arm-linux-gnueabi:{root}/usr/lib/arm-linux-gnueabi"}
    failed = 0
    for name in opts.programs.split(","):
        path, args, stdin = PROGRAMS[name]
        tmp = Path(tempfile.mkdtemp(prefix=f"armel-{name}."))
        placed = place(root / path, tmp, "orig")
        original = run_prog(placed, args, stdin, env=env, lib_root=ARMEL_SYSROOT, like_trace=True)
        total = sum(exe_pcs(trace_pcs(placed, args, stdin, lib_root=ARMEL_SYSROOT, env=env), placed).values())
        for tool in opts.tools.split(","):
            dest = tmp / "inst" / "prog"
            dest.parent.mkdir(exist_ok=True)
            made = subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "--tool", tool, "--format",
                                   "json", str(placed), "-o", str(dest)], capture_output=True, text=True)
            if made.returncode:
                failed += 1
                print(f"FAIL {name} {tool}: refused: {made.stderr.strip().splitlines()[-1:]}")
                continue
            inst = run_prog(dest, args, stdin, env=env, lib_root=ARMEL_SYSROOT, like_trace=True)
            same = (inst.returncode, inst.stdout, inst.stderr) == (original.returncode, original.stdout,
                                                                     original.stderr)
            note = ""
            if same and tool == "inscount":
                got = results(inst, tool)["total"]
                note = f" count {got}, qemu {total}" + ("" if got == total or name == "lua" else " (differs)")
                same = got == total or name == "lua"
            failed += not same
            print(f"{'ok  ' if same else 'FAIL'} {name} {tool}: exit {inst.returncode} (original "
                  f"{original.returncode}), {len(original.stdout)} bytes out{note}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
