#!/usr/bin/env bash
# The main job on a sample: build it, instrument it with inscount and cachesim, run
# the results under qemu-arm next to the original, show what the tools found; then the
# same cache simulation in ReHost mode.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=samples/sort.c
echo "== building $src for 32-bit ARM (Thumb-2, dynamic, PIE)"
arm-linux-gnueabihf-gcc -O2 -g "$src" -o "$work/sort"
cd "$work"
echo "== original"
anvil run ./sort
echo "== inscount"
anvil instrument --tool inscount sort -o sort.inst
anvil run ./sort.inst
head -12 sort.inst.inscount.out
echo "== cachesim (32 KiB, 4-way, 32-byte lines)"
anvil instrument --tool cachesim --opt size=32k,assoc=4,line=32 sort -o sort.inh
anvil run ./sort.inh
cat sort.inh.cachesim.out
echo "== cachesim, ReHost: the analysis runs on the host (a local rehost-server)"
# Same name length as sort.inh: argv[0] sits on the stack, so the addresses match too.
anvil instrument --tool cachesim --mode rehost --opt size=32k,assoc=4,line=32 sort -o sort.reh
anvil run ./sort.reh
if cmp -s sort.inh.cachesim.out sort.reh.cachesim.out; then
    echo "== ReHost results are identical to InHost's"
else
    echo "== ReHost results differ from InHost's:" && diff sort.inh.cachesim.out sort.reh.cachesim.out
fi
