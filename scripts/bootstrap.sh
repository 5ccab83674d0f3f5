#!/usr/bin/env bash
# Bootstrap a Debian 12 machine for Anvil development and CI.
#
# Installs (only when missing) the ARM cross toolchain (C and C++), clang and ld.lld (the
# samples built by another compiler and linker), qemu-user, the host C compiler
# (ReHost analysis libraries) and openssl (the TLS test), enables the
# armhf foreign architecture (needed by tests/support/samples.py to fetch Debian's
# armhf Lua library with `apt-get download`), and installs the project in editable
# mode with its test extras.  Safe to run any number of times.
set -euo pipefail

log() { printf 'bootstrap: %s\n' "$*"; }
warn() { printf 'bootstrap: warning: %s\n' "$*" >&2; }
die() { printf 'bootstrap: error: %s\n' "$*" >&2; exit 1; }

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DEBIAN_FRONTEND=noninteractive

# Run a command as root: directly when we are root, through sudo otherwise.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo DEBIAN_FRONTEND=noninteractive "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

# True when a Debian package is installed (status "install ok installed").
pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

PACKAGES=(
    gcc-arm-linux-gnueabihf
    g++-arm-linux-gnueabihf
    libc6-dev-armhf-cross
    qemu-user
    binutils-arm-linux-gnueabihf
    gcc
    libc6-dev
    openssl
    gcc-arm-none-eabi
    libnewlib-arm-none-eabi
    picolibc-arm-none-eabi  # tests/support/firmware_variants.py: firmware built with another C library
    libstdc++-arm-none-eabi-newlib  # samples/boards/throw.cpp: C++ exceptions on a board (decision 0122)
    qemu-system-arm
    libglib2.0-dev     # benchmarks/qemu_plugins.py: QEMU's TCG plugins (the benchmarks' peers, the tests' pccount)
    pkg-config
    clang              # tests/test_clang.py: programs of another compiler and linker
    lld
    mold
    golang-go          # Go programs: tests/test_other_compilers.py (go_faults.go), tests/test_x86_64_go.py (go_work.go, gofmt)
    gcc-arm-linux-gnueabi  # Debian's armel port (soft-float ARMv5TE): the sweeps' armel-* variants
    g++-arm-linux-gnueabi  # and tests/test_armv5_idioms.py (decision 0094)
    valgrind           # tests/test_x86_64_memtrace.py: Lackey's trace of every access, the oracle
    klibc-utils        # tests/test_x86_64_copies.py: programs klibc's library starts (calls as main)
    musl-tools         # tests/test_x86_64_musl.py: x86-64 programs of musl, static and with its dynamic linker
    libssl-dev         # tests/test_x86_64_copies.py: OpenSSL's libcrypto linked in statically (decision 0209)
    gccgo-arm-linux-gnueabihf  # tests/test_library_threads.py: goroutines on the threads libgo starts
)

# 1. Debian packages (and pip, where the python3 on PATH has none: Debian's own python3).
missing=()
if ! python3 -m pip --version >/dev/null 2>&1; then
    missing+=(python3 python3-pip)
fi
for pkg in "${PACKAGES[@]}"; do
    if ! pkg_installed "$pkg"; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    # A partial index failure (e.g. a mirror mid-sync) still leaves usable lists.
    as_root apt-get update -q || warn "apt-get update reported errors; trying the install anyway"
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}" \
        || die "apt-get install failed: ${missing[*]}"
else
    log "Debian packages already present"
fi
command -v arm-linux-gnueabihf-gcc >/dev/null 2>&1 || die "arm-linux-gnueabihf-gcc not on PATH"
command -v qemu-arm >/dev/null 2>&1 || die "qemu-arm not on PATH"

# 2. The armhf foreign architecture (for `apt-get download liblua5.4-dev:armhf`).
if dpkg --print-foreign-architectures | grep -qx armhf; then
    log "armhf architecture already enabled"
    if ! apt-cache show liblua5.4-dev:armhf >/dev/null 2>&1; then
        log "armhf index missing, running apt-get update"
        as_root apt-get update -q || warn "apt-get update failed; the armhf index may be unavailable"
    fi
else
    log "enabling armhf architecture"
    as_root dpkg --add-architecture armhf || die "dpkg --add-architecture armhf failed"
    as_root apt-get update -q || warn "apt-get update failed; the armhf index may be unavailable"
fi

# 3. The project itself, editable, with test extras.
# Debian's python3 marks itself externally managed (PEP 668) and pip refuses to install
# into it; the README's commands run `python3 -m pytest`, so the project goes there anyway.
pip_flags=(-q)
if python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    pip_flags+=(--break-system-packages)
fi
log "pip install ${pip_flags[*]} -e '.[test]'"
(cd "$REPO_ROOT" && python3 -m pip install "${pip_flags[@]}" -e '.[test]') || die "pip install failed"

# 4. The tests' instruction oracle, a QEMU plugin of our own (tests/oracles/pccount.c, decision
# 0155), compiled against the header of the installed qemu's Debian source, which is
# downloaded once: here, before the test workers need it. Without it the tests read QEMU's
# -d exec log instead: the same counts, many times slower.
log "python3 benchmarks/qemu_plugins.py pccount"
(cd "$REPO_ROOT" && python3 benchmarks/qemu_plugins.py pccount) \
    || warn "the pccount plugin was not built: the tests will count instructions from QEMU's log (slower)"

log "done"
