#!/usr/bin/env bash
# The main job on a sample: build it, instrument it with inscount and cachesim, run
# the results under qemu-arm next to the original, show what the tools found.
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
anvil instrument --tool cachesim --opt size=32k,assoc=4,line=32 sort -o sort.cache
anvil run ./sort.cache
cat sort.cache.cachesim.out
