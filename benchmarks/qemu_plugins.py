"""Build QEMU's own TCG plugins from Debian's source of the installed qemu, cached.

The peers Anvil is measured against (``benchmarks/peers.py``) are the plugins that ship
in QEMU's source tree: ``tests/plugin/insn.c`` (instruction count), ``tests/plugin/bb.c``
(block count), ``tests/plugin/mem.c`` (memory-access callbacks) and
``contrib/plugins/cache.c`` (a cache model). Debian does not package them, so they are
built here from exactly the source the installed ``qemu-user`` was built from:

1. the source version is asked of dpkg (``${source:Version}`` of ``qemu-user``, e.g.
   ``1:7.2+dfsg-7+deb12u18``; the binary's ``+b3`` is a rebuild of the same source);
2. its ``.dsc`` is fetched from deb.debian.org's pool (snapshot.debian.org when the pool
   no longer has it), and the orig and debian tarballs it names, each checked against
   the SHA-256 the ``.dsc`` gives;
3. only ``include/qemu/qemu-plugin.h`` and the four plugin sources are taken from the
   orig tarball, and the hunks of Debian's patches (``debian/patches/series``) that touch
   them are applied, as ``dpkg-source -x`` would;
4. each plugin is compiled with ``gcc -shared -fPIC -O2`` and glib's flags from
   ``pkg-config glib-2.0`` (Debian: ``libglib2.0-dev``).

The project's own plugins (``OWN_PLUGINS``: the benchmarks' block counter, the tests'
instruction oracle ``tests/oracles/pccount.c``) are compiled the same way against the same
header (``compile_plugin``).

The result lives in ``<repo>/.cache/qemu-plugins/<source version>/`` (``ANVIL_QEMU_PLUGIN_CACHE``
names another root); later calls return it at once. The download is made under a file lock,
so test workers that need a plugin at the same time fetch the source once. Run as a script,
it builds them (or only the project's plugins named) and prints where they are::

    python3 benchmarks/qemu_plugins.py
    python3 benchmarks/qemu_plugins.py pccount     # what scripts/bootstrap.sh builds
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Plugin name -> its source in QEMU's tree.
PLUGINS: dict[str, str] = {
    "insn": "tests/plugin/insn.c",
    "bb": "tests/plugin/bb.c",
    "mem": "tests/plugin/mem.c",
    "cache": "contrib/plugins/cache.c",
}
#: Plugins of this project's own (``benchmarks/plugins/``), built against the same header:
#: name -> source.
OWN_PLUGINS: dict[str, Path] = {
    "blockcount": REPO_ROOT / "benchmarks" / "plugins" / "blockcount.c",
    # The tests' instruction oracle (tests/oracles/qemu_trace.py, decision 0155).
    "pccount": REPO_ROOT / "tests" / "oracles" / "pccount.c",
}
#: How every plugin is compiled (and glib's flags from pkg-config).
CFLAGS = ("-shared", "-fPIC", "-O2")
HEADER = "include/qemu/qemu-plugin.h"
#: The Debian package whose source version names the source to build from.
PACKAGE = "qemu-user"
POOL = "http://deb.debian.org/debian/pool/main/q/qemu/"
SNAPSHOT = "https://snapshot.debian.org/archive/debian/{stamp}/pool/main/q/qemu/"
SNAPSHOT_INFO = "https://snapshot.debian.org/mr/package/qemu/{version}/srcfiles?fileinfo=1"


class PluginBuildError(RuntimeError):
    """QEMU's plugins could not be built (no qemu installed, download or compile failure)."""


def source_version() -> str:
    """The Debian source version of the installed qemu (``1:7.2+dfsg-7+deb12u18``)."""
    proc = subprocess.run(["dpkg-query", "-W", "-f=${source:Version}", PACKAGE], capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise PluginBuildError(f"{PACKAGE} is not installed (dpkg-query: {proc.stderr.strip()})")
    return proc.stdout.strip()


def cache_root() -> Path:
    """Where built plugins are kept: ``$ANVIL_QEMU_PLUGIN_CACHE`` or ``<repo>/.cache/qemu-plugins``."""
    override = os.environ.get("ANVIL_QEMU_PLUGIN_CACHE")
    return Path(override) if override else REPO_ROOT / ".cache" / "qemu-plugins"


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 (fixed Debian hosts)
        return response.read()


def _dsc_name(version: str) -> str:
    """``qemu_7.2+dfsg-7+deb12u18.dsc``: the epoch is not part of Debian's file names."""
    return f"qemu_{version.split(':', 1)[-1]}.dsc"


def _download_source(version: str) -> tuple[bytes, dict[str, bytes]]:
    """The .dsc text and the tarballs it names (name -> bytes), each checked against its SHA-256."""
    name = _dsc_name(version)
    bases = [POOL]
    try:
        dsc = _fetch(POOL + name)
    except OSError:
        dsc = None
    if dsc is None:  # gone from the pool: the snapshot archive keeps every version
        import json

        try:
            info = json.loads(_fetch(SNAPSHOT_INFO.format(version=urllib.request.quote(version))))
            stamp = next(iter(info["fileinfo"].values()))[0]["first_seen"]
            bases = [SNAPSHOT.format(stamp=stamp)]
            dsc = _fetch(bases[0] + name)
        except (OSError, ValueError, KeyError, IndexError, StopIteration) as exc:
            raise PluginBuildError(f"cannot download {name} from deb.debian.org or snapshot.debian.org: {exc}") \
                from None
    text = dsc.decode()
    section = text.split("Checksums-Sha256:", 1)[-1]
    files = re.findall(r"^ ([0-9a-f]{64}) \d+ (\S+\.tar\.\w+)$", section, re.MULTILINE)
    if not files:
        raise PluginBuildError(f"{name} names no tarball with a SHA-256")
    tarballs = {}
    for digest, tarball in files:
        data = _fetch(bases[0] + tarball)
        if hashlib.sha256(data).hexdigest() != digest:
            raise PluginBuildError(f"{tarball}: SHA-256 differs from the one {name} gives")
        tarballs[tarball] = data
    return dsc, tarballs


def _extract(tarballs: dict[str, bytes], tree: Path) -> None:
    """The header and the plugin sources from the orig tarball into ``tree``, with Debian's
    patches to them applied."""
    wanted = {HEADER, *PLUGINS.values()}
    orig = next(data for name, data in tarballs.items() if ".orig." in name)
    with tarfile.open(fileobj=io.BytesIO(orig)) as tar:
        for member in tar:
            relative = member.name.split("/", 1)[-1]
            if relative in wanted and member.isfile():
                target = tree / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
                wanted.discard(relative)
    if wanted:
        raise PluginBuildError(f"the orig tarball has no {', '.join(sorted(wanted))}")
    debian = next(data for name, data in tarballs.items() if ".debian." in name)
    with tarfile.open(fileobj=io.BytesIO(debian)) as tar:
        names = {member.name: member for member in tar if member.isfile()}
        series = tar.extractfile(names["debian/patches/series"]).read().decode().splitlines()
        for line in series:
            patch = line.split("#", 1)[0].strip().split()
            if patch:
                hunks = _hunks_for(tar.extractfile(names[f"debian/patches/{patch[0]}"]).read().decode(errors="replace"),
                                   {HEADER, *PLUGINS.values()})
                if hunks:
                    proc = subprocess.run(["patch", "-p1", "-s", "-d", str(tree)], input=hunks, text=True,
                                          capture_output=True)
                    if proc.returncode != 0:
                        raise PluginBuildError(f"Debian's {patch[0]} does not apply: {proc.stdout}{proc.stderr}")


def _hunks_for(patch: str, paths: set[str]) -> str:
    """The parts of a unified diff that change one of ``paths`` (``+++ b/PATH``), joined."""
    parts = re.split(r"(?m)^(?=--- )", patch)
    kept = []
    for part in parts:
        found = re.match(r"--- .*\n\+\+\+ (\S+)", part)
        if found and found.group(1).split("/", 1)[-1] in paths:
            kept.append(re.split(r"(?m)^(?=diff |Index: )", part)[0])
    return "".join(kept)


def _glib_flags() -> list[str]:
    proc = subprocess.run(["pkg-config", "--cflags", "--libs", "glib-2.0"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise PluginBuildError("glib's development files are missing: apt-get install libglib2.0-dev pkg-config")
    return proc.stdout.split()


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold ``root``'s build lock: two test workers (pytest-xdist) asking for a plugin at once
    download QEMU's source once, the second waiting for the first."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def source_tree() -> Path:
    """The header and QEMU's plugin sources of the installed qemu's Debian source, patched:
    ``<cache>/<version>/src`` (downloaded once; ``include/qemu/qemu-plugin.h`` is what every
    plugin is compiled against)."""
    version = source_version()
    out = cache_root() / version.replace(":", "_")
    tree = out / "src"
    if (tree / HEADER).is_file():
        return tree
    with _locked(cache_root()):
        if (tree / HEADER).is_file():  # made by another process while this one waited
            return tree
        out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="qemu-source.", dir=out))
        try:
            _, tarballs = _download_source(version)
            _extract(tarballs, work / "src")
            (work / "src").rename(tree)  # complete or absent: a reader checks the header only
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return tree


def _compile(source: Path, headers: Path, out: Path) -> None:
    """``gcc -shared`` ``source`` into ``out``, written under another name and renamed, so a
    process that finds ``out`` finds it whole."""
    temporary = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    cmd = ["gcc", *CFLAGS, "-I", str(headers), str(source), "-o", str(temporary), *_glib_flags()]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        temporary.unlink(missing_ok=True)
        raise PluginBuildError(f"compiling {source.name} failed:\n$ {' '.join(cmd)}\n{proc.stderr}")
    temporary.replace(out)


def build() -> dict[str, Path]:
    """Build (once) and return QEMU's plugins for the installed qemu: name -> ``lib<name>.so``."""
    tree = source_tree()
    built = {name: tree.parent / f"lib{name}.so" for name in PLUGINS}
    for name, path in built.items():
        if not path.is_file():
            _compile(tree / PLUGINS[name], tree / "include" / "qemu", path)
    return built


def compile_plugin(source: Path) -> Path:
    """A plugin source of this project's own, built (once per content of its source and
    compiler flags) against the header of the installed qemu's source; returns the
    library's path (``<cache>/<version>/lib<name>-<digest>.so``)."""
    text = source.read_bytes()
    tree = source_tree()
    digest = hashlib.sha256(text + " ".join(CFLAGS).encode()).hexdigest()[:12]
    out = tree.parent / f"lib{source.stem}-{digest}.so"
    if not out.is_file():
        _compile(source, tree / "include" / "qemu", out)
    return out


def own_plugin(name: str) -> Path:
    """One of OWN_PLUGINS, built (compile_plugin); returns the library's path."""
    return compile_plugin(OWN_PLUGINS[name])


def main(argv: list[str] | None = None) -> int:
    """Build the plugins (QEMU's, or the OWN_PLUGINS named as arguments) and print their paths."""
    names = sys.argv[1:] if argv is None else argv
    unknown = [name for name in names if name not in OWN_PLUGINS]
    if unknown:
        print(f"qemu_plugins: error: no plugin of ours named {', '.join(unknown)} (known: {', '.join(OWN_PLUGINS)})",
              file=sys.stderr)
        return 2
    try:
        built = {name: own_plugin(name) for name in names} if names else build()
        for name, path in built.items():
            print(f"{name}\t{path}")
    except (PluginBuildError, OSError) as exc:
        print(f"qemu_plugins: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
