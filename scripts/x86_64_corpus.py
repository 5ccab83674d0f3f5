"""Real x86-64 programs with real work, instrumented (inscount, bbcount; cachesim, memtrace) and run natively
beside the original: do they behave the same, how fast do they rewrite, how much slower
do they run (decision 0112).

Each program is copied to ``<root>/o/bin/<name>`` and instrumented to ``<root>/i/bin/<name>``
(inscount) and ``<root>/b/bin/<name>`` (bbcount): paths of the same length, so that the same
environment, arguments and stack give the same addresses. Each runs under ``setarch -R``
(no address randomisation) in its own work directory (``<root>/<v>/w``, made the same way
by the case's setup), with the same environment and standard input. Compared with the
original's run: standard output, standard error, exit status and every file left in the
work directory (the tool's results file aside, which must exist and count something);
the variant's directory name in anything printed is read as the original's.

Programs: Debian's own (C, C++, stripped as shipped), programs linked here from Debian's
static libraries (CPython from Debian's and pyenv's libpython3.11.a, SQLite, OpenSSL's
libcrypto), the project's C samples built with gcc and clang at -O0..-O3, static,
static-pie, -fcf-protection, -fno-plt and LTO, a Rust program (threads, panics, iterators)
and Rust's own cargo, node and Java's launcher. Columns: whether every tool's runs were
identical, the file's size, the rewrite's wall seconds (the first tool's) and lifted
instructions a second, and each tool's CPU time (user and system) over the original's, its
wall time's in brackets (one run each, or the least of three under a second: a rough
figure; ``benchmarks/x86_64.py`` measures properly).

    python3 scripts/x86_64_corpus.py                  # the whole corpus (about 25 min)
    python3 scripts/x86_64_corpus.py --tier small     # the quick ones
    python3 scripts/x86_64_corpus.py --only sqlite --keep /tmp/corpus
    python3 scripts/x86_64_corpus.py --tier big --tools cachesim,memtrace --reference 20000000

``--tools`` picks the tools (each in its own directory, ``<root>/<name>/<letter>``):
cachesim and memtrace as well as the counting ones (decision 0115), and inscount and
cachesim in ReHost mode (``inscount-rehost``, ``cachesim-rehost``: run through ``anvil run``,
whose own CPU time counts; their results must be InHost's where that ran too, unless two
runs of the program differ). memtrace runs on the
small tier's cases only unless told otherwise, and a trace that grows past 4 GB stops the
run (said in the row's detail): its text is about 40 bytes an access. With both, memtrace
runs where cachesim's copy ran (the same path, a fresh work directory made the same way),
cachesim's loads and stores must be the trace's, and ``--reference`` feeds the trace to
the reference cache for its hits and misses. A program whose accesses differ from one run
to the next (hash tables keyed by inode numbers, random hash seeds, threads) is said to be
so and not checked.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLES = REPO_ROOT / "samples"
LIBDIR = Path("/usr/lib/x86_64-linux-gnu")
PYENV = Path("/root/.pyenv/versions/3.11.7")
#: Each tool's one-letter directory (``<root>/<name>/<letter>``): every variant's paths the
#: same length as the original's (``o``).
LETTERS = {"inscount": "i", "bbcount": "b", "cachesim": "c", "memtrace": "m",
           "inscount-rehost": "I", "cachesim-rehost": "C"}
#: A ``-rehost`` tool runs through ``anvil run`` (the analysis in that process, decision 0120).
REHOST = "-rehost"
RESULTS = re.compile(r"\.(inscount|bbcount|cachesim|memtrace)\.out(\.\d+)?$")
#: A memtrace run whose trace grows past this is stopped and reported as too big (not as a
#: difference): its text is about 40 bytes an access.
TRACE_LIMIT = 4 << 30


@dataclass
class Case:
    """One program and its work: ``args`` run in the work directory ``setup`` filled."""

    name: str
    program: Callable[[Path], Path] | str
    args: list[str]
    stdin: bytes = b""
    setup: Callable[[Path], None] | None = None
    home: str | None = None  #: a directory the program finds its files relative to (mirrored)
    tier: str = "small"
    env: dict[str, str] = field(default_factory=dict)
    #: Why two runs of the program do not do the same work (its counts and accesses are then
    #: not compared between runs: ReHost's with InHost's, cachesim's with memtrace's); "" if they do.
    varies: str = ""


def _text(path: Path, kib: int, seed: int = 1) -> None:
    """``kib`` KiB of deterministic text with repeats."""
    words = [f"w{(k * 7919 + seed) % 10007}" for k in range(2048)]
    lines, size, k = [], 0, 0
    while size < kib << 10:
        line = " ".join(words[(k + j * 31) % len(words)] for j in range(10)) + "\n"
        lines.append(line)
        size += len(line)
        k += 1
    path.write_text("".join(lines))


def _files(work: Path) -> None:
    """A small tree of text files and a copy of the samples' sources."""
    _text(work / "a.txt", 256)
    _text(work / "b.txt", 256, seed=3)
    shutil.copytree(SAMPLES, work / "src", ignore=shutil.ignore_patterns("boards", "lua"))


def _script(name: str, text: str) -> Callable[[Path], None]:
    def setup(work: Path) -> None:
        _files(work)
        (work / name).write_text(text)
    return setup


def _cached(name: str, command: Callable[[Path], list[str]]) -> Callable[[Path], Path]:
    """A program built here, once per build directory."""
    def build(builds: Path) -> Path:
        out = builds / name
        if not out.is_file():
            subprocess.run(command(out), check=True, capture_output=True, cwd=builds)
        return out
    return build


def _c(sample: str, compiler: str, *flags: str) -> Callable[[Path], list[str]]:
    return lambda out: [compiler, *flags, str(SAMPLES / sample), "-o", str(out)]


PYTHON_WORK = """import json, re, zlib, hashlib, collections, itertools, decimal, fractions, sys
words = open('a.txt').read().split()
c = collections.Counter(words)
print(len(words), c.most_common(3))
print(hashlib.sha256(open('b.txt', 'rb').read()).hexdigest())
z = zlib.compress(open('a.txt', 'rb').read(), 9); print(len(z), zlib.decompress(z)[:20])
print(json.dumps({k: v for k, v in itertools.islice(sorted(c.items()), 5)}, sort_keys=True))
print(sum(fractions.Fraction(1, k) for k in range(1, 60)))
decimal.getcontext().prec = 50; print(decimal.Decimal(2).sqrt())
print(len(re.findall(r'w1[0-9]+7', open('b.txt').read())))
class E(Exception): pass
def deep(n):
    if n == 0: raise E('bottom')
    return deep(n - 1)
try: deep(200)
except E as e: print('caught', e)
open('out.json', 'w').write(json.dumps(sorted(c)[:100]))
print(sys.version_info[:2])
"""
SQL = """create table t(k integer primary key, w text, n integer);
with recursive s(i) as (select 1 union all select i + 1 from s where i < 20000)
insert into t(w, n) select 'w' || (i * 7919 % 1009), i % 97 from s;
create index tw on t(w);
select w, count(*), sum(n) from t group by w order by 2 desc, 1 limit 5;
select count(*) from t a join t b on a.w = b.w where a.k < 300 and b.k < 300;
update t set n = n * 2 where w like 'w1%';
select sum(n), max(w), min(w) from t;
"""
PERL_WORK = r"""my %c; open my $f, '<', 'a.txt' or die; while (<$f>) { $c{$_}++ for split; }
my @top = (sort { $c{$b} <=> $c{$a} or $a cmp $b } keys %c)[0..4]; print "@top\n";
my $s = join '', map { chr(65 + $_ % 26) } 1..5000; (my $t = $s) =~ s/([AEIOU])/lc $1/ge;
print length($t), substr($t, 0, 30), "\n";
printf "%.6f\n", eval { my $x = 0; $x += sqrt($_) for 1..100000; $x };
eval { die { code => 7 } }; print "died $@->{code}\n";
open my $o, '>', 'perl.out'; print $o join("\n", sort keys %c), "\n";
"""
TCL_WORK = """set f [open a.txt]; set d [read $f]; close $f
foreach w $d { dict incr c $w }
puts [lrange [lsort -stride 2 -index 1 -integer -decreasing $c] 0 5]
proc fib n { expr {$n < 2 ? $n : [fib [expr {$n-1}]] + [fib [expr {$n-2}]]} }
puts [fib 20]
puts [string map {w W} [string range $d 0 40]]
if {[catch {error boom} m]} { puts "caught $m" }
"""
JS_WORK = """const fs = require('fs');
const words = fs.readFileSync('a.txt', 'utf8').split(/\\s+/).filter(Boolean);
const c = new Map(); for (const w of words) c.set(w, (c.get(w) || 0) + 1);
console.log(words.length, [...c.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3));
console.log(require('crypto').createHash('sha256').update(fs.readFileSync('b.txt')).digest('hex'));
let s = 0; for (let i = 0; i < 3e6; i++) s = (s + i * i) % 1000003; console.log(s);
try { JSON.parse('{bad'); } catch (e) { console.log('caught', e.name); }
fs.writeFileSync('out.txt', JSON.stringify([...c.keys()].sort().slice(0, 50)));
"""
MAKEFILE = """all: out/sum.txt out/list.txt
out:
\tmkdir -p out
out/sum.txt: a.txt b.txt | out
\tcat a.txt b.txt | wc -c > $@
out/list.txt: | out
\t$(foreach f,$(sort $(wildcard src/*.c)),echo $(notdir $(f:.c=.o)) >> $@;)
"""
BASH_WORK = r"""declare -A seen; n=0
while read -r line; do for w in $line; do seen[$w]=$(( ${seen[$w]:-0} + 1 )); n=$((n+1)); done
done < <(head -200 a.txt)
echo "$n ${#seen[@]}"; f() { local x=$1; [[ $x -le 1 ]] && echo 1 && return; echo $(( x * $(f $((x-1))) )); }; f 12
printf '%s\n' "${!seen[@]}" | sort | head -3 > keys.txt; s=abcdef; echo ${s^^} ${s:2:3} ${s//c/X}
case $BASH_VERSION in 5*) echo five;; *) echo other;; esac; trap 'echo bye' EXIT
"""
CMAKE_LISTS = """cmake_minimum_required(VERSION 3.10)
project(p NONE)
file(GLOB srcs "${CMAKE_SOURCE_DIR}/src/*.c")
list(LENGTH srcs n)
string(REGEX REPLACE "[aeiou]" "_" v "anvil rewrites programs")
math(EXPR x "(${n} * 7) % 13")
message(STATUS "sources ${n} ${v} ${x}")
file(WRITE "${CMAKE_BINARY_DIR}/out.txt" "${n}\\n")
"""


def _python(root: Path, name: str) -> Callable[[Path], Path]:
    include = root / "include/python3.11"
    if root == PYENV:
        lib, extra = root / "lib/python3.11/config-3.11-x86_64-linux-gnu/libpython3.11.a", ["-lm"]
    else:
        lib, extra = LIBDIR / "libpython3.11.a", ["-no-pie", "-lm", "-lz", "-lexpat"]
    # -rdynamic: the extension modules (zlib, _json, ...) call back into the interpreter.
    return _cached(name, lambda out: ["gcc", "-O2", "-rdynamic", f"-I{include}", str(SAMPLES / "x64_python_main.c"),
                                      str(lib), *extra, "-o", str(out)])


def _rust(name: str, *flags: str) -> Callable[[Path], Path]:
    rustc = shutil.which("rustc") or "rustc"
    return _cached(name, lambda out: [rustc, "--edition", "2021", *flags, str(SAMPLES / "x64_work.rs"), "-o", str(out)])


def _cargo() -> str:
    toolchains = sorted(Path.home().glob(".rustup/toolchains/stable-*/bin/cargo"))
    return str(toolchains[0]) if toolchains else "/usr/bin/cargo"


def _cargo_setup(work: Path) -> None:
    (work / "hello/src").mkdir(parents=True)
    (work / "hello/Cargo.toml").write_text('[package]\nname = "hello"\nversion = "0.1.0"\nedition = "2021"\n')
    (work / "hello/src/main.rs").write_text('fn main() { println!("hello"); }\n')


LINK = ["-shared", "-o", "libx.so", "hash.o", "matrix.o", "sort.o"]


def cases() -> list[Case]:
    """The corpus."""
    gawk = shutil.which("gawk") or shutil.which("mawk") or "/usr/bin/awk"
    c_samples = []
    builds = {  # (sample, compiler, flags): the producers and options the task names
        "O0": ("gcc", "-O0"), "O1": ("gcc", "-O1"), "O3": ("gcc", "-O3"),
        "static": ("gcc", "-O2", "-static"), "static-pie": ("gcc", "-O2", "-static-pie"),
        "cet": ("gcc", "-O2", "-fcf-protection=full"), "noplt": ("gcc", "-O2", "-fno-plt"),
        "lto": ("gcc", "-O2", "-flto"), "clang-O2": ("clang", "-O2"), "clang-O3-static": ("clang", "-O3", "-static"),
        "clang-O0": ("clang", "-O0"), "native": ("gcc", "-O3", "-march=native"),
        "lld": ("clang", "-O2", "-fuse-ld=lld"), "gold": ("gcc", "-O2", "-fuse-ld=gold"),
    }
    for label, (compiler, *flags) in builds.items():
        for sample, args in (("hash.c", []), ("matrix.c", [])):
            name = f"{sample[:-2]}-{label}"
            c_samples.append(Case(name, _cached(name, _c(sample, compiler, *flags)), args))
    return [
        # Debian's C programs, stripped as shipped
        Case("ls", "/bin/ls", ["-laR", "src"], setup=_files),
        Case("sort", "/usr/bin/sort", ["-k2", "-t", " ", "a.txt", "b.txt", "-o", "sorted.txt"], setup=_files),
        Case("wc", "/usr/bin/wc", ["a.txt", "b.txt"], setup=_files),
        Case("sha256sum", "/usr/bin/sha256sum", ["a.txt", "b.txt"], setup=_files),
        Case("find", "/usr/bin/find", ["src", "-name", "*.c", "-size", "+1k", "-printf", "%p %s\\n"], setup=_files),
        Case("diff", "/usr/bin/diff", ["-u", "a.txt", "b.txt"], setup=_files),
        Case("grep", "/bin/grep", ["-c", "-E", "w1[0-9]7|w99[0-9]+ w2", "a.txt", "b.txt"], setup=_files),
        Case("sed", "/bin/sed", ["-E", "s/(w[0-9])([0-9]*)/\\2\\1/g;/w1/d", "a.txt"], setup=_files),
        Case("awk", gawk, ["{for(i=1;i<=NF;i++)c[$i]++} END{for(w in c)n++; print n, NR}", "a.txt"], setup=_files),
        Case("tar", "/bin/tar", ["-cf", "out.tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0",
                                 "--numeric-owner", "src", "a.txt"], setup=_files),
        Case("gzip", "/bin/gzip", ["-9", "-k", "a.txt"], setup=_files),
        Case("xz", "/usr/bin/xz", ["-6", "-k", "a.txt"], setup=_files),
        Case("bzip2", "/usr/bin/bzip2", ["-9", "-k", "b.txt"], setup=_files),
        Case("zstd", "/usr/bin/zstd", ["-q", "-19", "a.txt", "-o", "a.zst"], setup=_files),
        Case("openssl", "/usr/bin/openssl", ["dgst", "-sha512", "a.txt", "b.txt"], setup=_files),
        Case("sqlite3", "/usr/bin/sqlite3", ["db.sqlite"], stdin=SQL.encode()),
        Case("make", "/usr/bin/make", ["-s", "-f", "Makefile"], setup=_script("Makefile", MAKEFILE)),
        Case("bash", "/bin/bash", ["work.sh"], setup=_script("work.sh", BASH_WORK)),
        # Hash seeds fixed: the same accesses every run (cachesim against memtrace's trace).
        Case("perl", "/usr/bin/perl", ["work.pl"], setup=_script("work.pl", PERL_WORK),
             env={"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}),
        Case("tclsh", "/usr/bin/tclsh8.6", ["work.tcl"], setup=_script("work.tcl", TCL_WORK)),
        # C++
        Case("cmake", "/usr/bin/cmake", ["-P", "CMakeLists.txt"], setup=_script("CMakeLists.txt", CMAKE_LISTS.replace(
            "project(p NONE)\n", "")), home="/usr", tier="big"),
        Case("ld.gold", "/usr/bin/x86_64-linux-gnu-ld.gold", LINK,
             setup=_objects),
        Case("ld.bfd", "/usr/bin/x86_64-linux-gnu-ld.bfd", LINK,
             setup=_objects),
        Case("git", "/usr/bin/git", ["diff", "--no-index", "--histogram", "--stat", "-p", "a.txt", "b.txt"],
             setup=_files),
        Case("vim", "/usr/bin/vim.basic", ["-es", "-u", "NONE", "-i", "NONE", "-N", "-c", "%s/w1/W1/g", "-c", "sort u",
                                           "-c", "w! out.txt", "-c", "q!", "a.txt"], setup=_files),
        Case("curl", "/usr/bin/curl", ["-s", "file://localhost/etc/services", "-o", "out.txt"]),
        Case("cc1plus", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus",
             ["-quiet", "-O2", "-fpreprocessed", "unwind.ii", "-o", "unwind.s"], setup=_preprocessed, tier="big"),
        Case("gdb", "/usr/bin/gdb", ["-nx", "-batch", "-ex", "print 6*7", "-ex", "print sizeof(long)",
                                     "-ex", "info functions ^nope$"], tier="big"),
        # interpreters linked here from static libraries (the interpreter rewritten, not a .so)
        Case("python-debian", _python(Path("/usr"), "python-debian"), ["work.py"],
             setup=_script("work.py", PYTHON_WORK), tier="big", env={"PYTHONHASHSEED": "0"}),
        Case("python-pyenv", _python(PYENV, "python-pyenv"), ["work.py"], setup=_script("work.py", PYTHON_WORK),
             tier="big", env={"PYTHONHASHSEED": "0"}),
        Case("sqlite-static-lib", _cached("sqlite-static-lib", lambda out: [
            "gcc", "-O2", str(SAMPLES / "x64_sqlite_shell.c"), str(LIBDIR / "libsqlite3.a"), "-lm", "-o", str(out)]),
             ["db.sqlite"], stdin=SQL.encode()),
        Case("libcrypto", _cached("libcrypto", lambda out: [
            "gcc", "-O2", str(SAMPLES / "x64_digest.c"), str(LIBDIR / "libcrypto.a"), "-lz", "-l:libzstd.so.1",
            "-o", str(out)]), ["a.txt", "b.txt"], setup=_files),
        # Rust
        Case("rust-O3", _rust("rust-O3", "-C", "opt-level=3"), ["30000"]),
        Case("rust-O0-panics", _rust("rust-O0", "-C", "opt-level=0"), ["3000", "die"]),
        Case("cargo", _cargo(), ["metadata", "--offline", "--format-version", "1", "--no-deps",
                                 "--manifest-path", "hello/Cargo.toml"], setup=_cargo_setup, tier="big"),
        # very big
        Case("node", "/usr/bin/node", ["work.js"], setup=_script("work.js", JS_WORK), tier="huge"),
        Case("java", "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", ["-Xshare:off", "-version"],
             home="/usr/lib/jvm/java-17-openjdk-amd64"),
        *c_samples,
        *drawn(),
        *by_kind(),
    ]


#: Decision 0123: the first programs of this machine's Debian packages (those with an ELF
#: executable in /usr/bin, /usr/sbin or /usr/lib), shuffled by ``random.Random(123)``, one
#: executable a package drawn by ``random.Random(f"123:{package}")`` among those not in the
#: corpus above (``scripts/x86_64_draw.py`` repeats the draw and says what it passed over).
DASH_WORK = r"""set -e; n=0; for f in src/*.c; do n=$((n + 1)); done; echo "$n sources"
x=$(wc -l < a.txt); echo "lines $x"; f() { echo "f:$1"; [ "$1" -gt 0 ] && f $(($1 - 1)) || :; }; f 3
cat <<EOT | tr a-z A-Z | sort -r > up.txt
alpha
beta $n
EOT
trap 'echo trapped' USR1; kill -USR1 $$; (exit 7) || echo "sub $?"; case $x in *0*) echo zero;; *) echo other;; esac
read a b < b.txt; echo "$a/$b"; set -- one two three; shift; echo "$# $*"; exec echo exec done
"""
PERL_XS_WORK = r"""use strict; use List::Util qw(sum max reduce shuffle); use POSIX qw(floor fmod strtol);
use Digest::MD5 qw(md5_hex); use Digest::SHA qw(sha1_hex); use Storable qw(freeze thaw dclone);
use Data::Dumper; use Encode qw(encode decode); use Scalar::Util qw(blessed reftype);
$Data::Dumper::Sortkeys = 1; open my $f, '<', 'a.txt' or die; my @w = map { split } <$f>;
print scalar(@w), ' ', sum(map { length } @w), ' ', max(map { length } @w), "\n";
print md5_hex(join '', @w[0..999]), ' ', sha1_hex('anvil'), "\n";
my $d = { list => [1..5], name => 'x', nested => { a => [floor(7.5), fmod(7, 3)] } };
my $t = thaw(freeze($d)); print Dumper($t); print reduce { $a * $b } 1..15; print "\n";
my $u = decode('UTF-8', "caf\xc3\xa9"); print length($u), ' ', length(encode('UTF-16LE', $u)), "\n";
print reftype(dclone($d)), ' ', (blessed(bless {}, 'K') // 'none'), ' ', (strtol('ff', 16))[0], "\n";
"""
RPC = """const MAX = 64;
struct pair { int key; string name<MAX>; };
program P { version V { pair GET(int) = 1; void PUT(pair) = 2; } = 1; } = 0x20000099;
"""
ARM_ASM = """\t.syntax unified\n\t.thumb\n\t.text\n\t.global f\n\t.type f, %function\nf:\n\tpush {r4, lr}
\tmovs r4, #0\n1:\tadds r4, r4, r0\n\tsubs r0, r0, #1\n\tbne 1b\n\tldr r1, =table\n\tldr r0, [r1, r4, lsl #2]
\tpop {r4, pc}\n\t.ltorg\n\t.data\ntable:\t.word 1, 2, 3, 4\n"""
TINY_CPP = """template <typename T> struct V { T a[8]; int n = 0; void push(T x) { a[n++] = x; } T sum() const {
T s{}; for (int i = 0; i < n; ++i) s += a[i]; return s; } };
struct B { virtual ~B() {} virtual int f(int x) { return x + 1; } };
struct D : B { int f(int x) override { return x * 3; } };
int use(B &b, int k) { V<int> v; for (int i = 0; i < k && i < 8; ++i) v.push(b.f(i)); return v.sum(); }
int thrower(int x) { if (x < 0) throw x; return x; }
int main() { D d; try { return use(d, 5) + thrower(-1); } catch (int e) { return e; } }
"""
PO_A = 'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "hello"\nmsgstr "bonjour"\n\n' \
    'msgid "one file"\nmsgid_plural "%d files"\nmsgstr[0] "un fichier"\nmsgstr[1] "%d fichiers"\n'
PO_B = 'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "hello"\nmsgstr "salut"\n\n' \
    'msgid "bye"\nmsgstr "au revoir"\n'
XAUTH = ("add :7 . 00112233445566778899aabbccddeeff\n"
         "add box/unix:3 MIT-MAGIC-COOKIE-1 ffeeddccbbaa99887766554433221100\n"
         "list\nnlist\nremove :7\nlist\n")
ED_WORK = "r a.txt\n1,3p\n,s/w1/W1/g\n/W1/p\n$-2,$d\nw out.txt\nq\n"
SEXP = "(7:private(3:rsa(1:n#00c5ef01#)(1:e3:\x01\x00\x01))[10:text/plain]5:hello)"


#: Why a program's work varies run to run: it walks /proc, whose processes come and go.
PROCESSES = "it reads every process of the machine in /proc"


def _in_release(work: Path) -> None:
    shutil.copy("/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease", work / "InRelease")


def _arm_objects(compiler: str) -> Callable[[Path], None]:
    def setup(work: Path) -> None:
        for name in ("hash", "matrix", "sort"):
            subprocess.run([compiler, "-O2", "-fPIC", f"-Dmain=main_{name}", "-c", str(SAMPLES / f"{name}.c"),
                            "-o", str(work / f"{name}.o")], check=True)
        subprocess.run([compiler.replace("-gcc", "-ar"), "rc", str(work / "lib.a"),
                        *(str(work / f"{n}.o") for n in ("hash", "matrix", "sort"))], check=True)
    return setup


def _write(**texts: str) -> Callable[[Path], None]:
    """Files of the given names (``_`` for ``.``) with the given text, beside ``_files``'."""
    def setup(work: Path) -> None:
        _files(work)
        for name, text in texts.items():
            (work / name.replace("_", ".")).write_text(text)
    return setup


def _terminfo(work: Path) -> None:
    (work / "t.src").write_bytes(subprocess.run(["infocmp", "-x", "xterm-256color"], capture_output=True,
                                                check=True).stdout)


def _mime(work: Path) -> None:
    (work / "mime/packages").mkdir(parents=True)
    shutil.copy("/usr/share/mime/packages/freedesktop.org.xml", work / "mime/packages")


def _parts(work: Path) -> None:
    (work / "parts").mkdir()
    for k, text in enumerate(("echo one; exit 0", "echo two >&2; exit 3", "ls parts | wc -l")):
        script = work / "parts" / f"{k}0-part"
        script.write_text(f"#!/bin/sh\n{text}\n")
        script.chmod(0o755)
    (work / "parts" / "skip.me").write_text("#!/bin/sh\necho never\n")


def _repository(work: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "GIT_AUTHOR_DATE": "@1000000000 +0000",
           "GIT_COMMITTER_DATE": "@1000000000 +0000", "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
    repo = work / "repo"
    for command in (["init", "-q", "-b", "main", str(repo)],
                    ["-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"],
                    ["-C", str(repo), "tag", "v1"]):
        subprocess.run(["git", *command], check=True, env=env)


def drawn() -> list[Case]:
    """Decision 0123's draw (seed 123), in the order drawn; what was passed over, and why,
    is in the decision."""
    lib = Path("/usr/lib")
    return [
        Case("gpgv", "/usr/bin/gpgv", ["--keyring", "/usr/share/keyrings/debian-archive-keyring.gpg", "InRelease"],
             setup=_in_release),
        Case("xxd", "/usr/bin/xxd", ["-g4", "-c24", "src/hash.c", "out.hex"], setup=_files),
        Case("arm-g++", "/usr/bin/arm-linux-gnueabi-g++-12", ["-S", "-O2", "t.cpp", "-o", "t.s"],
             setup=_write(t_cpp=TINY_CPP), home="/usr"),
        Case("lessecho", "/usr/bin/lessecho", ["-a", "a b", 'c"d', "e\\f", "plain"]),
        Case("perl5.36", "/usr/bin/perl5.36-x86_64-linux-gnu", ["work.pl"], setup=_write(work_pl=PERL_XS_WORK),
             env={"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}),
        Case("arm-none-as", str(lib / "arm-none-eabi/bin/as"), ["-mcpu=cortex-m4", "t.s", "-o", "t.o"],
             setup=_write(t_s=ARM_ASM)),
        Case("arm-strings", "/usr/bin/arm-linux-gnueabi-strings", ["-t", "x", "-n", "6", "hash.o"],
             setup=_arm_objects("arm-linux-gnueabihf-gcc")),
        Case("arm-ld.bfd", "/usr/bin/arm-linux-gnueabihf-ld.bfd", LINK, setup=_arm_objects("arm-linux-gnueabihf-gcc")),
        Case("rpcgen", "/usr/bin/rpcgen", ["-c", "-o", "t_xdr.c", "t.x"], setup=_write(t_x=RPC)),
        Case("arm-gcc-ranlib", "/usr/bin/arm-linux-gnueabi-gcc-ranlib-12", ["lib.a"],
             setup=_arm_objects("arm-linux-gnueabi-gcc"), home="/usr"),
        Case("gtester", "/usr/bin/gtester", ["--version"]),
        Case("gpg-wks-server", "/usr/bin/gpg-wks-server", ["--version"]),
        Case("hostname", "/usr/bin/hostname", []),
        Case("pinentry-curses", "/usr/bin/pinentry-curses", [],
             stdin=b"GETINFO version\nGETINFO flavor\nOPTION ttyname=/dev/null\nBYE\n"),
        Case("tic", "/usr/bin/tic", ["-x", "-o", "db", "t.src"], setup=_terminfo),
        Case("getcap", "/usr/sbin/getcap", ["-r", "src"], setup=_files),
        Case("msgcat", "/usr/bin/msgcat", ["--use-first", "-o", "out.po", "a.po", "b.po"],
             setup=_write(a_po=PO_A, b_po=PO_B)),
        Case("python3.12-gcloud", "/usr/lib/google-cloud-sdk/platform/bundledpythonunix/bin/python", ["work.py"],
             setup=_script("work.py", PYTHON_WORK), env={"PYTHONHASHSEED": "0"},
             home="/usr/lib/google-cloud-sdk/platform/bundledpythonunix"),
        Case("jar", "/usr/lib/jvm/java-17-openjdk-amd64/bin/jar", ["--version"],
             home="/usr/lib/jvm/java-17-openjdk-amd64"),
        Case("vgdb", "/usr/bin/vgdb", ["-l"], varies="it lists /tmp, whose files come and go"),
        Case("dash", "/usr/bin/dash", ["work.sh"], setup=_write(work_sh=DASH_WORK),
             varies="its script signals its own pid ($$), whose digits vary"),
        Case("xauth", "/usr/bin/xauth", ["-f", "auth", "source", "-"], stdin=XAUTH.encode()),
        Case("update-mime-database", "/usr/bin/update-mime-database", ["mime"], setup=_mime),
        Case("strace", "/usr/bin/strace", ["-qq", "-e", "trace=openat,execve", "-o", "log.txt", "/usr/bin/cat",
                                           "a.txt"], setup=_files),
        Case("pg_verifybackup", "/usr/lib/postgresql/15/bin/pg_verifybackup", ["src"], setup=_files,
             home="/usr/lib/postgresql/15"),
        Case("clang", "/usr/lib/llvm-14/bin/clang", ["-O2", "-S", "-emit-llvm", "src/hash.c", "-o", "hash.ll"],
             setup=_files, home="/usr/lib/llvm-14"),
        Case("gprofng", "/usr/bin/x86_64-linux-gnu-gprofng", ["--version"]),
        Case("e2undo", "/usr/sbin/e2undo", ["a.txt", "b.txt"], setup=_files),
        Case("oid2name", "/usr/lib/postgresql/15/bin/oid2name", ["-H", "/nonexistent"]),
        Case("dpkg", "/usr/bin/dpkg", ["-S", "bin/jq"]),
        Case("gpg-protect-tool", "/usr/lib/gnupg/gpg-protect-tool", ["--version"]),
        # -q: lz4 shows its progress on stderr when a run takes long (a copy under memtrace)
        Case("lz4", "/usr/bin/lz4", ["-q", "-9", "a.txt", "a.lz4"], setup=_files),
        Case("lld", str(lib / "llvm-14/bin/lld"), ["-flavor", "gnu", *LINK], setup=_objects),
        Case("ed", "/usr/bin/ed", ["-s"], stdin=ED_WORK.encode(), setup=_files),
        Case("dumpsexp", "/usr/bin/dumpsexp", [], stdin=SEXP.encode("latin-1")),
        Case("genl", "/usr/sbin/genl", ["ctrl", "list"]),
        Case("skill", "/usr/bin/skill", ["-l"]),
        Case("lsof", "/usr/bin/lsof", ["-w", "a.txt"], setup=_files, varies=PROCESSES),
        Case("clear_console", "/usr/bin/clear_console", []),
        Case("gdbus", "/usr/bin/gdbus", ["help"]),
        Case("file", "/usr/bin/file", ["a.txt", "src", "src/hash.c", "src/x64_work.rs", "/usr/bin/xxd"],
             setup=_files),
        Case("tmux", "/usr/bin/tmux", ["-V"]),
        Case("cmp", "/usr/bin/cmp", ["-l", "-n", "20000", "a.txt", "b.txt"], setup=_files),
        Case("stat", "/usr/bin/stat", ["-c", "%n %s %Y %A %F %h", "a.txt", "b.txt", "src", "src/hash.c"],
             setup=_files),
        Case("git-shell", "/usr/bin/git-shell", ["-c", "git-upload-pack 'repo'"], stdin=b"0000",
             setup=_repository),
        Case("python3.11", "/usr/bin/python3.11", ["work.py"], setup=_script("work.py", PYTHON_WORK),
             env={"PYTHONHASHSEED": "0"}),
        Case("run-parts", "/usr/bin/run-parts", ["--report", "parts"], setup=_parts),
        Case("pkgconf", "/usr/bin/pkgconf", ["--cflags", "--libs", "--static", "libpng", "zlib"]),
        Case("locale", "/usr/bin/locale", ["-a"]),
        Case("go-app-stager", "/usr/lib/google-cloud-sdk/platform/google_appengine/go-app-stager", ["-h"]),
        Case("gpg-wks-client", "/usr/lib/gnupg/gpg-wks-client", ["--version"]),
        Case("wget", "/usr/bin/wget", ["-q", "-t", "1", "-O", "out", "http://127.0.0.1:9/"]),
        Case("gencmn", "/usr/sbin/gencmn", ["-s", ".", "-d", ".", "-n", "x", "1000000", "list.txt"],
             setup=_write(list_txt="a.txt\n")),
        Case("dbus-update-activation-environment", "/usr/bin/dbus-update-activation-environment", []),
        Case("qemu-sh4", "/usr/bin/qemu-sh4", ["-version"]),
    ]


#: Decision 0123's programs chosen by kind: tools nobody tried (coreutils, util-linux,
#: procps, iproute2), programs that fork and exec, walk their descriptors, or are C++.
BC_WORK = "scale=200; 4*a(1)\nfor (i = 1; i < 30; i++) { x = x + 1 / (i ^ 2) }; x\nsqrt(2)^2\n2^200 % 1000007\n"
JQ_WORK = ('([.[] | {k: .name, n: (.v * 3), tags: (.t | join(","))}] | sort_by(-.n) | .[:3]), '
           '(map(.v) | add), (group_by(.v % 3) | map(length)), ([paths] | length)')
JQ_INPUT = "[" + ",".join(f'{{"name": "w{k * 7919 % 1009}", "v": {k * 31 % 97}, "t": ["a{k % 5}", "b{k % 3}"]}}'
                          for k in range(400)) + "]"
NINJA = """builddir = /tmp
rule cc
  command = cat $in | tr a-z A-Z > $out
rule count
  command = wc -c $in > $out
build up/a.txt: cc a.txt
build up/b.txt: cc b.txt
build sizes.txt: count up/a.txt up/b.txt
default sizes.txt
"""
FDS_PY = "import os, subprocess\nprint(sorted(os.listdir('/proc/self/fd')))\n" \
    "print(subprocess.run(['ls', '/proc/self/fd'], capture_output=True, text=True).stdout.split())\n" \
    "r, w = os.pipe(); os.closerange(3, 1 << 16); print(sorted(os.listdir('/proc/self/fd')))\n"


def _patch(work: Path) -> None:
    _files(work)
    new = work / "new.txt"
    text = (work / "a.txt").read_text().splitlines(keepends=True)
    new.write_text("".join(line.replace("w1", "W1") if k % 7 == 0 else line for k, line in enumerate(text)))
    diff = subprocess.run(["diff", "-u", "--label", "a.txt", "--label", "a.txt", "a.txt", "new.txt"],
                          capture_output=True, cwd=work).stdout
    (work / "p.diff").write_bytes(diff)
    new.unlink()


def by_kind() -> list[Case]:
    """Chosen by kind (decision 0123)."""
    return [
        Case("jq", "/usr/bin/jq", ["-c", JQ_WORK, "in.json"], setup=_write(in_json=JQ_INPUT)),
        Case("bc", "/usr/bin/bc", ["-l", "-q"], stdin=BC_WORK.encode()),
        Case("ip", "/usr/bin/ip", ["-j", "addr"]),
        Case("ps", "/usr/bin/ps", ["-o", "pid,ppid,comm", "-p", "1"], varies=PROCESSES),
        Case("pgrep", "/usr/bin/pgrep", ["-c", "-x", "no-such-program"], varies=PROCESSES),
        Case("column", "/usr/bin/column", ["-J", "-N", "a,b,c"], stdin=b"x y z\n1 22 333\n\"q\" r s\n"),
        Case("hexdump", "/usr/bin/hexdump", ["-C", "src/hash.c"], setup=_files),
        Case("od", "/usr/bin/od", ["-A", "x", "-t", "x2z", "-w16", "src/sort.c"], setup=_files),
        Case("xargs", "/usr/bin/xargs", ["-n", "2", "-t", "echo", "got"], stdin=b"a b c\nd e\n\"f g\" h\n"),
        Case("patch", "/usr/bin/patch", ["-p0", "-i", "p.diff", "-o", "out.txt"], setup=_patch),
        Case("less", "/usr/bin/less", ["-F", "-X", "src/hash.c"], setup=_files),
        Case("openssl-enc", "/usr/bin/openssl", ["enc", "-aes-256-cbc", "-K", "00" * 32, "-iv", "11" * 16,
                                                "-in", "a.txt", "-out", "a.enc"], setup=_files),
        Case("perl-xs", "/usr/bin/perl", ["work.pl"], setup=_write(work_pl=PERL_XS_WORK),
             env={"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}),
        Case("ninja", "/usr/bin/ninja", ["-j", "1"], setup=_write(build_ninja=NINJA)),
        Case("groff", "/usr/bin/groff", ["-Tutf8", "-man", "p.1"], setup=lambda w: (w / "p.1").write_bytes(
            subprocess.run(["zcat", "/usr/share/man/man1/cmp.1.gz"], capture_output=True, check=True).stdout)),
        Case("ctags", "/usr/bin/ctags-universal", ["-R", "-f", "tags", "src"], setup=_files),
        Case("coreutils-nl", "/usr/bin/nl", ["-ba", "-nrz", "src/hash.c"], setup=_files),
        Case("coreutils-tr", "/usr/bin/tr", ["-s", "a-z0-9", "A-Z"], stdin=b"hello 001 world 999 zz\n" * 500),
        Case("coreutils-cut", "/usr/bin/cut", ["-d", " ", "-f", "2,4-6", "a.txt"], setup=_files),
        Case("coreutils-uniq", "/usr/bin/uniq", ["-c", "-w", "3"],
             stdin=b"".join(b"w%d\n" % (k // 7) for k in range(900))),
        Case("coreutils-b2sum", "/usr/bin/b2sum", ["-l", "256", "a.txt", "b.txt"], setup=_files),
        Case("coreutils-base64", "/usr/bin/base64", ["-w", "60", "src/hash.c"], setup=_files),
        Case("coreutils-factor", "/usr/bin/factor", [], stdin=b"1000000007 600851475143 18446744073709551557 "
             b"340282366920938463463374607431768211297\n"),
        Case("coreutils-shuf", "/usr/bin/shuf", ["--random-source=a.txt", "-n", "20", "b.txt"], setup=_files),
        Case("coreutils-du", "/usr/bin/du", ["-ab", "src"], setup=_files),
        Case("coreutils-split", "/usr/bin/split", ["-l", "500", "-d", "a.txt", "part."], setup=_files),
        Case("coreutils-numfmt", "/usr/bin/numfmt", ["--to=iec-i", "--suffix=B", "--format=%.3f"],
             stdin=b"".join(b"%d\n" % (7 ** k) for k in range(20))),
        Case("coreutils-timeout", "/usr/bin/timeout", ["5", "sh", "-c", "echo child; exit 3"]),
        Case("coreutils-env", "/usr/bin/env", ["-i", "A=1", "/usr/bin/printenv"]),
        Case("ls-fd", "/bin/ls", ["/proc/self/fd/"]),
        Case("find-fd", "/usr/bin/find", ["/proc/self/fd", "-mindepth", "1", "-printf", "%f\\n"]),
        Case("python-fds", "/usr/bin/python3.11", ["fds.py"], setup=_write(fds_py=FDS_PY)),
        Case("flock", "/usr/bin/flock", ["lock", "-c", "echo locked; ls /proc/self/fd | wc -l"]),
        Case("script", "/usr/bin/script", ["-q", "-e", "-c", "echo in a pty; exit 4", "/dev/null"]),
        Case("findmnt", "/usr/bin/findmnt", ["-J", "-o", "TARGET,FSTYPE", "/proc"]),
        Case("namei", "/usr/bin/namei", ["-l", "/usr/bin/perl"]),
        Case("getent", "/usr/bin/getent", ["passwd", "root", "nobody"]),
        Case("iconv", "/usr/bin/iconv", ["-f", "UTF-8", "-t", "UTF-16LE", "-o", "out.txt", "a.txt"], setup=_files),
        Case("cscope", "/usr/bin/cscope", ["-b", "-k", "-u", "-R", "-s", "src"], setup=_files),
        Case("infocmp", "/usr/bin/infocmp", ["-1", "-x", "xterm-256color", "vt100"]),
    ]


def _objects(work: Path) -> None:
    for name in ("hash", "matrix", "sort"):
        subprocess.run(["gcc", "-O2", "-fPIC", f"-Dmain=main_{name}", "-c", str(SAMPLES / f"{name}.c"),
                        "-o", str(work / f"{name}.o")], check=True)


def _preprocessed(work: Path) -> None:
    subprocess.run(["g++", "-E", "-O2", str(SAMPLES / "unwind.cpp"), "-o", str(work / "unwind.ii")], check=True)


def _place(case: Case, program: Path, variant_dir: Path) -> Path:
    """Where the variant's program goes: ``bin/<name>``, or inside a mirror of its home."""
    if case.home is None:
        return variant_dir / "bin" / program.name
    home = Path(case.home)
    mirror = variant_dir / "home"
    relative = program.relative_to(home)
    # Every entry on the way to the program is a real directory; everything else a link.
    here, source = mirror, home
    for part in relative.parts:
        here.mkdir(parents=True, exist_ok=True)
        for entry in source.iterdir():
            if entry.name != part and not (here / entry.name).exists():
                (here / entry.name).symlink_to(entry)
        here, source = here / part, source / part
    return here


def _rewrite(program: Path, tool: str, out: Path, results: Path | None = None) -> tuple[float, int, str]:
    """Instrument (the results file at ``results`` if given); return wall seconds, lifted
    instructions and the error (empty if none)."""
    start = time.perf_counter()
    # A trace in text: a line an access, read a line at a time (its JSON is one long list).
    form = "text" if tool == "memtrace" else "json"
    mode = ["--mode", "rehost"] if tool.endswith(REHOST) else []
    done = subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "--tool", tool.removesuffix(REHOST),
                           *mode, "--format", form,
                           *(["--out", str(results)] if results else []),
                           str(program), "-o", str(out)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    seconds = time.perf_counter() - start
    found = re.search(r"\((\d+) instructions\)", done.stderr)
    error = "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1][:200]
    return seconds, int(found.group(1)) if found else 0, error


def _environment(case: Case, work: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(work), "LANG": "C", "LC_ALL": "C", "TZ": "UTC", **case.env}


def _watched(command: list[str], case: Case, here: Path, timeout: float, trace: Path | None) -> tuple:
    """Run ``command`` in ``here``: (status, stdout, stderr). The status is "timeout" after
    ``timeout`` seconds, "trace too big" if ``trace`` grows past TRACE_LIMIT (the run is
    killed then: memtrace of a long run)."""
    with subprocess.Popen(command, cwd=here, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=_environment(case, here)) as child:
        start, given = time.perf_counter(), case.stdin
        while True:
            try:
                # Retrying communicate loses no output; the input is sent once.
                out, err = child.communicate(given, timeout=1.0)
                return child.returncode, out, err
            except subprocess.TimeoutExpired:
                given = None
            big = trace is not None and trace.exists() and trace.stat().st_size > TRACE_LIMIT
            if big or time.perf_counter() - start > timeout:
                child.kill()
                child.communicate()
                return ("trace too big" if big else "timeout"), b"", b""


def _children_cpu() -> float:
    """User and system seconds of the children waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(program: Path, case: Case, work: Path, trace: Path | None = None,
         rehost: Path | None = None) -> tuple[float, float, tuple]:
    """Run in ``work``: wall seconds, CPU seconds (user and system: on a machine others
    share the wall time is theirs too), and (status, stdout, stderr, files). A short run is
    timed twice more in a copy of the work directory as it was (the least time is kept).
    ``trace``: where the program writes a trace (watched for its size). ``rehost``: through
    ``anvil run`` with this analysis library (built beforehand: a build would go into the
    cache under $HOME, which is the work directory); the program's argv[0] the same."""
    runner = [sys.executable, "-m", "rewriter.cli", "run", "-q", "--lib", str(rehost), "--argv0", str(program)] \
        if rehost else []
    pristine = work.with_name(work.name + ".before")
    shutil.copytree(work, pristine, symlinks=True)
    times, cpus = [], []
    for attempt in range(3):
        here = work if attempt == 0 else work.with_name(work.name + ".again")
        if attempt:
            shutil.rmtree(here, ignore_errors=True)
            shutil.copytree(pristine, here, symlinks=True)
        start, used = time.perf_counter(), _children_cpu()
        done = _watched(["setarch", "-R", *runner, str(program), *(["--"] if rehost else []), *case.args], case,
                        here, 900, trace)
        if attempt == 0:
            status, out, err = done
        times.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - used)
        if attempt:
            shutil.rmtree(here, ignore_errors=True)
        # A trace is written to one path whatever the directory: a second run, from another
        # directory (another environment, another stack), would write over the first's.
        if times[0] > 1.0 or isinstance(status, str) or trace is not None:
            break
    shutil.rmtree(pristine, ignore_errors=True)
    seconds, cpu = min(times), min(cpus)
    files = {str(p.relative_to(work)): p.read_bytes() for p in sorted(work.rglob("*"))
             if p.is_file() and not p.is_symlink() and not RESULTS.search(p.name)}
    return seconds, cpu, (status, out, err, files)


def _difference(want: tuple, got: tuple) -> str:
    names = ("exit status", "stdout", "stderr", "files")
    for name, a, b in zip(names, want, got):
        if a != b:
            if name == "exit status":
                return f"exit status {b}, the original's {a}: {got[2][-300:]!r}"
            if name == "files":
                changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                return f"files differ: {changed[:5]}"
            # Where they part: the first byte that differs, with some before it.
            at = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            low = max(0, at - 80)
            return f"{name} differs at byte {at}: {b[low:at + 120]!r} (original: {a[low:at + 120]!r})"
    return ""


def _prepare(case: Case, work: Path) -> None:
    """The case's files in ``work``, every one with the same times (``ls -l``, ``diff -u``
    and ``tar`` print them)."""
    if case.setup:
        case.setup(work)
    for path in [work, *work.rglob("*")]:
        os.utime(path, (1e9, 1e9), follow_symlinks=False)


def _qemu_check(case: Case, program: Path, root: Path) -> str:
    """inscount's total against QEMU's count of the original's instructions in its own code
    (tests/test_x86_64_counts.py's oracle), both run under ``qemu-x86_64`` from ``prog`` in
    fresh work directories of the same length: "" if equal, else what differs."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs

    works = {}
    for v, tool in (("q", None), ("r", "inscount")):
        work = root / case.name / v
        shutil.rmtree(work, ignore_errors=True)
        (work / "w").mkdir(parents=True)
        _prepare(case, work / "w")
        placed = work / "prog"
        if tool:
            error = _rewrite(program, tool, placed)[2]
            if error:
                return error
        else:
            shutil.copy(program, placed)
        works[v] = (placed, work / "w")
    plain, plain_work = works["q"]
    oracle = trace_pcs(plain, case.args, stdin=case.stdin, cwd=plain_work, timeout=3600,
                       env={"LANG": "C", "LC_ALL": "C", "TZ": "UTC"})
    want = sum(exe_pcs(oracle, plain).values())
    copied, copied_work = works["r"]
    subprocess.run(["env", "-i", "LANG=C", "LC_ALL=C", "TZ=UTC", "qemu-x86_64", "-0", "prog", str(copied),
                    *case.args], cwd=copied_work, input=case.stdin, capture_output=True, timeout=3600)
    found = [p for p in copied_work.iterdir() if RESULTS.search(p.name)]
    if not found:
        return "qemu: no results file"
    got = json.loads(found[0].read_text())["total"]
    return "" if got == want else f"qemu: inscount {got}, QEMU {want}"


def _reference(trace: Path, counts: dict, limit: int) -> str:
    """cachesim's counts against the reference cache (tests/oracles/cache_model.py) fed
    memtrace's accesses of the same run, in cachesim's geometry: "" if equal, else what
    differs, or why it was not checked (a trace of over ``limit`` accesses: the model is
    plain Python, about a million accesses a second)."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.oracles.cache_model import ReferenceCache

    cache = ReferenceCache(counts["size"], counts["assoc"], counts["line"])
    access = cache.access
    with open(trace, "rb") as f:
        for n, line in enumerate(f):
            if n > limit:
                return f"reference not run: over {limit:,} accesses"
            if line[:1] != b"#":
                _, address, _, kind = line.split()
                access(int(address, 16), kind == b"S")
    want = {**cache.stats(), "hits": cache.accesses - cache.misses}
    wrong = {k: (counts.get(k), v) for k, v in want.items() if counts.get(k) != v}
    return "" if not wrong else f"cachesim (got, reference): {wrong}"


def _kinds(trace: Path) -> tuple[int, int]:
    """The loads and stores in a memtrace trace (its lines end with the kind)."""
    loads = stores = 0
    with open(trace, "rb") as f:
        for line in f:
            if line.endswith(b" L\n"):
                loads += 1
            elif line.endswith(b" S\n"):
                stores += 1
    return loads, stores


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _forget_children(trace: Path) -> None:
    """Delete the traces of the processes the program forked (``<trace>.<pid>``): a child's
    starts as a copy of its parent's so far (bash's subshells: 730 MB each)."""
    for child in trace.parent.glob(trace.name + ".*"):
        if child.name[len(trace.name) + 1:].isdigit():
            child.unlink()


def _repeatable(placed: Path, case: Case, vdir: Path, trace: Path) -> bool:
    """Whether the traced program, run again in a second work directory made the same way
    (``<vdir>/x``: the same length), makes the same accesses. Some do not: find's and
    tar's hash tables are keyed by the files' inode numbers, which differ from one
    directory to the next, and so do the addresses of their buckets."""
    again = vdir / "x"
    shutil.rmtree(again, ignore_errors=True)
    again.mkdir()
    _prepare(case, again)
    first, second = trace.with_name("first." + trace.name), trace  # (not .<digits>: a child's)
    trace.rename(first)
    _run(placed, case, again, second)
    same = second.exists() and _digest(first) == _digest(second)
    second.unlink(missing_ok=True)
    _forget_children(trace)
    first.rename(trace)
    return same


def _host_library(tool: str) -> Path:
    """``tool``'s analysis built for the records of x86-64 programs (cached by content)."""
    from rehost import host_build

    return host_build.build(host_build.tool_sources(tool), host_build.flags_for(8))


def _reads_its_memory_map(program: Path, case: Case, vdir: Path) -> bool:
    """Whether ``program`` opens /proc/self/maps in its run (strace)."""
    here = vdir / "s"
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir()
    _prepare(case, here)
    log = vdir / "strace.log"
    _watched(["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", str(log), str(program), *case.args], case,
             here, 900, None)
    return log.exists() and "/proc/self/maps" in log.read_text(errors="replace")


def _results_again(placed: Path, case: Case, vdir: Path, tool: str) -> bytes | None:
    """The results file of a second run of the ReHost copy ``placed``, in a work directory
    made the same way (``<vdir>/x``: the same length); None if it wrote none."""
    again = vdir / "x"
    shutil.rmtree(again, ignore_errors=True)
    again.mkdir()
    _prepare(case, again)
    _run(placed, case, again, rehost=_host_library(tool))
    found = [p for p in again.iterdir() if (m := RESULTS.search(p.name)) and not m.group(2)]
    return found[0].read_bytes() if found else None


def run_case(case: Case, root: Path, builds: Path, qemu: bool = False, tools: Sequence[str] = ("inscount", "bbcount"),
             memtrace_tiers: tuple[str, ...] = ("small",), reference: int = 0) -> dict:
    """Rewrite and run one case with each tool (and, ``qemu``, against QEMU's count);
    return its row. memtrace runs only on the cases of ``memtrace_tiers`` (a long run's
    trace is tens of gigabytes); where cachesim ran too, its loads and stores must be the
    trace's, and (``reference``, at most that many accesses) its hits and misses those of
    the reference cache fed the trace."""
    program = Path(case.program(builds)) if callable(case.program) else Path(case.program)
    program = program.resolve()
    row = {"name": case.name, "size": program.stat().st_size, "status": "identical", "detail": ""}
    notes = []
    runs = {}
    inhost_results: dict[str, bytes] = {}  # tool -> its InHost copy's results (for its ReHost copy's)
    # memtrace last, so that its trace can be checked against cachesim's counts.
    order = [None, *sorted(tools, key=lambda t: t == "memtrace")]
    for tool in order:
        if tool == "memtrace" and case.tier not in memtrace_tiers:
            notes.append(f"memtrace not run ({case.tier} tier: the trace would be too big)")
            continue
        vdir = root / case.name / (LETTERS[tool] if tool else "o")
        if tool == "memtrace" and "cachesim" in runs:
            # The trace is taken where cachesim's copy ran, as it ran (the same path, the
            # same environment): its run's work directory and copy are kept beside.
            vdir = root / case.name / LETTERS["cachesim"]
            (vdir / "w").rename(vdir / "w.cachesim")
        placed = _place(case, program, vdir)
        if placed.exists() and tool == "memtrace":
            placed.rename(placed.with_name(placed.name + ".cachesim"))
        placed.parent.mkdir(parents=True, exist_ok=True)
        trace = None
        if tool is None:
            shutil.copy(program, placed)
        else:
            # A trace is written as the program runs: outside the work directory, whose
            # time the program may print (ls -la's ".."), and which counts as its output.
            if tool == "memtrace":
                trace = vdir / "memtrace.out"
            seconds, lifted, error = _rewrite(program, tool, placed, trace)
            row[f"{tool} rewrite"] = seconds
            row.setdefault("instructions", lifted)
            if error:
                if row["status"] == "identical":
                    row["status"], row["detail"] = f"{tool}: refused/failed", error
                continue
        work = vdir / "w"
        work.mkdir(parents=True, exist_ok=True)
        _prepare(case, work)
        library = _host_library(tool.removesuffix(REHOST)) if tool and tool.endswith(REHOST) else None
        seconds, cpu, result = _run(placed, case, work, trace, library)
        # The program's own results file: its forked children's (``.<pid>``) are not it (a
        # program that ended by an exec left only theirs, decision 0123).
        results = [trace] if trace else [p for p in work.iterdir() if (m := RESULTS.search(p.name)) and not m.group(2)]
        results = [p for p in results if p.exists()]
        if result[0] == "trace too big":
            notes.append(f"memtrace stopped: trace over {TRACE_LIMIT >> 30} GB")
            for p in results:
                p.unlink()
            _forget_children(trace)
            continue
        # What the variant printed of its own directory is read as the original's.
        mine, theirs = str(vdir).encode(), str(root / case.name / "o").encode()
        result = (result[0], result[1].replace(mine, theirs), result[2].replace(mine, theirs),
                  {k: c.replace(mine, theirs) for k, c in result[3].items()})
        runs[tool] = result
        row[f"{tool or 'original'} s"], row[f"{tool or 'original'} cpu"] = seconds, cpu
        if tool is None:
            continue
        difference = _difference(runs[None], result)
        if not difference and not results:
            difference = "no results file"
        if not difference and tool in ("cachesim", "inscount"):
            inhost_results[tool] = results[0].read_bytes()
        if not difference and case.varies and (tool == "memtrace" or tool and tool.endswith(REHOST)):
            notes.append(f"{tool}: results not compared ({case.varies})")
        elif not difference and tool and tool.endswith(REHOST) and tool.removesuffix(REHOST) in inhost_results:
            if results[0].read_bytes() != inhost_results[tool.removesuffix(REHOST)]:
                if _results_again(placed, case, vdir, tool.removesuffix(REHOST)) != results[0].read_bytes():
                    notes.append(f"{tool}: results not compared (two runs differ)")
                elif _reads_its_memory_map(program, case, vdir):
                    # The two copies' regions differ (the analysis library, the communicator),
                    # and so do the lines of /proc/self/maps the program parses.
                    notes.append(f"{tool}: results not compared (the program reads /proc/self/maps)")
                else:
                    difference = f"results differ from {tool.removesuffix(REHOST)}'s InHost"
        if not difference and tool == "cachesim":
            row["cachesim"] = json.loads(results[0].read_text())
        if not difference and tool == "memtrace" and "cachesim" in row and not case.varies:
            # Paths of the same length: the same run, the same accesses.
            counts = row["cachesim"]
            loads, stores = _kinds(results[0])
            if (loads, stores) != (counts["loads"], counts["stores"]):
                difference = (f"cachesim's loads/stores {counts['loads']}/{counts['stores']}, "
                              f"memtrace's {loads}/{stores}")
            elif reference:
                difference = _reference(results[0], counts, reference)
                if difference.startswith("reference not run"):
                    notes.append(difference)
                    difference = ""
                else:
                    row["reference"] = "differs" if difference else "exact"
                    if not difference:
                        notes.append(f"reference cache exact ({counts['accesses']:,} accesses)")
            if difference and not _repeatable(placed, case, vdir, trace):
                # Not a fault of the tools: the program's own accesses depend on the run.
                notes.append(f"cachesim not checked: two traces differ ({difference})")
                row["reference"] = "not repeatable"
                difference = ""
        if tool == "memtrace":
            for p in results:
                row["trace MB"] = p.stat().st_size / 1e6
                p.unlink()
            _forget_children(trace)
        if difference and row["status"] == "identical":
            row["status"], row["detail"] = f"{tool}: differs", difference
    if qemu:
        difference = _qemu_check(case, program, root)
        row["qemu"] = "differs" if difference else "exact"
        if difference and row["status"] == "identical":
            row["status"], row["detail"] = "inscount: not QEMU's count", difference
    row["detail"] = "; ".join(filter(None, [row["detail"], *notes]))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="cases whose name holds this (comma-separated)")
    parser.add_argument("--group", choices=["drawn", "kind"],
                        help="only decision 0123's draw (drawn) or its programs chosen by kind (kind)")
    parser.add_argument("--tier", choices=["small", "big", "huge"], default="huge",
                        help="up to this tier (small: under a few seconds each; huge: node)")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary directory)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--qemu", action="store_true",
                        help="also compare inscount's total with QEMU's count (slow: 1-2 M instructions/s)")
    parser.add_argument("--tools", default="inscount,bbcount",
                        help=f"comma-separated, of {', '.join(LETTERS)} (default: inscount,bbcount)")
    parser.add_argument("--memtrace-tier", choices=["small", "big", "huge"], default="small",
                        help="memtrace only on the cases up to this tier (default small: a long run's trace is "
                             f"tens of GB; any trace over {TRACE_LIMIT >> 30} GB is stopped)")
    parser.add_argument("--reference", type=int, default=0, metavar="N",
                        help="with cachesim and memtrace: feed the trace (up to N accesses) to the reference "
                             "cache (tests/oracles/cache_model.py) and compare cachesim's hits and misses")
    args = parser.parse_args()
    tools = args.tools.split(",")
    unknown = [t for t in tools if t not in LETTERS]
    if unknown:
        parser.error(f"unknown tools {unknown}: the tools are {', '.join(LETTERS)}")
    if args.qemu and "inscount" not in tools:
        parser.error("--qemu checks inscount's count: add inscount to --tools")
    order = ["small", "big", "huge"]
    tiers = order[: order.index(args.tier) + 1]
    memtrace_tiers = tuple(order[: order.index(args.memtrace_tier) + 1])
    group = {c.name for c in {"drawn": drawn, "kind": by_kind}[args.group]()} if args.group else None
    chosen = [c for c in cases() if c.tier in tiers and (group is None or c.name in group)
              and (not args.only or any(o in c.name for o in args.only.split(",")))]
    root = args.keep or Path(tempfile.mkdtemp(prefix="anvil-corpus-"))
    builds = root / "builds"
    builds.mkdir(parents=True, exist_ok=True)
    rows = []
    columns = " | ".join(t + " ×" for t in tools)
    print(f"| program | result | size (MB) | rewrite (s) | insn/s | {columns} | QEMU | detail |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(tools) + "---|---|")
    for case in chosen:
        if (root / case.name).exists():
            shutil.rmtree(root / case.name)
        try:
            row = run_case(case, root, builds, args.qemu, tools, memtrace_tiers, args.reference)
        except (OSError, subprocess.CalledProcessError) as e:
            row = {"name": case.name, "size": 0, "status": "not built", "detail": str(e)[:200]}
        rows.append(row)
        def ratio(tool: str, r: dict = row) -> str:
            """CPU time over the original's (wall time's in brackets)."""
            base, wall = r.get("original cpu") or 0, r.get("original s") or 0
            if not (base and wall and tool + " s" in r):
                return "-"
            return f"{r[tool + ' cpu'] / base:.2f} ({r[tool + ' s'] / wall:.2f})"
        rewrite = row.get(f"{tools[0]} rewrite", 0)
        speed = f"{row.get('instructions', 0) / rewrite:,.0f}" if rewrite else "-"
        print(f"| {case.name} | {row['status']} | {row['size'] / 1e6:.1f} | {rewrite:.1f} | {speed} | "
              f"{' | '.join(ratio(t) for t in tools)} | {row.get('qemu', '-')} | {row['detail']} |", flush=True)
        if not args.keep:
            shutil.rmtree(root / case.name, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if all(r["status"] == "identical" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
