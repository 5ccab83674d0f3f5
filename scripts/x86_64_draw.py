"""Draw x86-64 programs at random from this machine's Debian packages (decision 0123).

The population: every installed package of architecture amd64 that ships an ELF executable
(ET_EXEC, or ET_DYN whose name has no ``.so``) in /usr/bin, /usr/sbin, /bin, /sbin or under
/usr/lib (``dpkg -L``). Their names, sorted, are shuffled by ``random.Random(seed)``; each
package's executable is drawn by ``random.Random(f"{seed}:{package}")`` among those not in
scripts/x86_64_corpus.py's corpus before this draw. The walk prints, in order, what it took
(the corpus's case of it, ``drawn()``) and what it passed over and why:

    python3 scripts/x86_64_draw.py --seed 123 --count 80
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from x86_64_corpus import by_kind, drawn  # noqa: E402

#: Passed over, each with its reason (by package).
SKIPPED = {
    "tk8.6": "a GUI (Tk)", "x11-utils": "a GUI (X11)", "openjdk-17-jdk": "a GUI (jconsole)",
    "libutempter0": "a setgid helper that needs a terminal on its standard input",
    "sysvinit-utils": "killall5 signals every process on the machine",
    "llvm-14-runtime": "lli-child-target serves lli over descriptors lli gives it",
    "fakeroot": "faked-sysv is a daemon", "libpam-modules-bin": "a PAM helper run by PAM with a password on a pipe",
    "gnupg-utils": "gpgcompose writes a keybox holding the time at every start (HOME: the work directory)",
}
#: Executables over this size are passed over: their rewrites (minutes each, six tools) did not
#: fit this round (the corpus has cmake, cc1plus, node for size).
MAX_BYTES = 8 << 20
#: The corpus before this draw (its own programs are not drawn again).
BEFORE = {"/usr/bin/ls", "/usr/bin/sort", "/usr/bin/wc", "/usr/bin/sha256sum", "/usr/bin/find", "/usr/bin/diff",
          "/usr/bin/grep", "/usr/bin/sed", "/usr/bin/gawk", "/usr/bin/mawk", "/usr/bin/tar", "/usr/bin/gzip",
          "/usr/bin/xz", "/usr/bin/bzip2", "/usr/bin/zstd", "/usr/bin/openssl", "/usr/bin/sqlite3", "/usr/bin/make",
          "/usr/bin/bash", "/usr/bin/perl", "/usr/bin/perl5.36.0", "/usr/bin/tclsh8.6", "/usr/bin/cmake",
          "/usr/bin/x86_64-linux-gnu-ld.gold", "/usr/bin/x86_64-linux-gnu-ld.bfd", "/usr/bin/git", "/usr/bin/vim.basic",
          "/usr/bin/curl", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "/usr/bin/gdb", "/usr/bin/node",
          "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"}


def _executables(package: str) -> list[str]:
    found = set()
    listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True).stdout.splitlines()
    for path in listed:
        if not path.startswith(("/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/usr/lib/")):
            continue
        if os.path.islink(path) or not os.path.isfile(path) or not os.access(path, os.X_OK):
            continue
        try:
            with open(path, "rb") as f:
                head = f.read(18)
        except OSError:
            continue
        if head[:4] == b"\x7fELF" and head[4] == 2 and (head[16] == 2 or head[16] == 3
                                                        and ".so" not in os.path.basename(path)):
            found.add(os.path.realpath(path))
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=123)
    parser.add_argument("--count", type=int, default=80, help="walk this many packages of the shuffled list")
    args = parser.parse_args()
    packages = subprocess.run(["dpkg-query", "-W", "-f", "${Package}:${Architecture}\n"], capture_output=True,
                              text=True).stdout.split()
    # Named with their architecture ("gpgv:amd64"): the order shuffled, and the draw's seeds.
    population = {p: e for p in sorted(packages) if p.endswith(":amd64") and (e := _executables(p))}
    names = sorted(population)
    random.Random(args.seed).shuffle(names)
    cases = {str(c.program): c.name for c in drawn() + by_kind() if isinstance(c.program, str)}
    print(f"{len(names)} packages with an executable; the first {args.count} of seed {args.seed}:")
    for position, name in enumerate(names[:args.count]):
        candidates = [e for e in population[name] if e not in BEFORE]
        pick = random.Random(f"{args.seed}:{name}").choice(candidates) if candidates else None
        if pick is None:
            why = "every executable in the corpus already"
        elif name.removesuffix(":amd64") in SKIPPED:
            why = f"passed over: {SKIPPED[name.removesuffix(':amd64')]}"
        elif os.path.getsize(pick) > MAX_BYTES:
            why = f"passed over: {os.path.getsize(pick) >> 20} MB"
        else:
            why = f"taken: {cases.get(pick, 'NOT IN THE CORPUS')}"
        print(f"{position:3} {name:40} {pick or '-':60} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
