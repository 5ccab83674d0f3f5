"""bbcount's top-N list (option ``top``) against qemu's block counts, and the CLI's own
listings (``anvil tools``, ``anvil --help``)."""

from __future__ import annotations

import subprocess

from rewriter.passes import TOOLS
from tests.support.run import assert_same_behaviour, instrument_ir, results, run_prog, traced_original
from tests.support.samples import build


def test_top_blocks_are_qemus_most_executed(tmp_path) -> None:
    original, pcs, ir = traced_original(build("hash", "O2-thumb-dyn"), tmp_path)
    qemu_counts = sorted((pcs[b.address] for p in ir.procedures for b in p.blocks), reverse=True)
    for top in (1, 7):
        inst = run_prog(instrument_ir(ir, "bbcount", tmp_path, top=str(top)))
        assert_same_behaviour(original, inst)
        listed = results(inst, "bbcount")["top"]
        assert [b["count"] for b in listed] == qemu_counts[:top]
        assert all(b["count"] == pcs[b["address"]] for b in listed)


def test_tools_lists_every_tool_and_its_options() -> None:
    shown = subprocess.run(["anvil", "tools"], capture_output=True, text=True, check=True).stdout
    for name, tool in TOOLS.items():
        assert f"{name}: {tool.description}\n" in shown
        for opt in tool.options:
            assert f"    {opt.name}={opt.default}  " in shown


def test_help_names_every_command() -> None:
    shown = subprocess.run(["anvil", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("instrument", "run", "image", "rehost-listen", "rehost-server", "inspect", "tools"):
        assert command in shown
        sub = subprocess.run(["anvil", command, "--help"], capture_output=True, text=True)
        assert sub.returncode == 0 and sub.stdout.startswith(f"usage: anvil {command}")
