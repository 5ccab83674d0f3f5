"""ReHost's channel holds no descriptor of the program's, and `anvil run` ends when the
program's processes have (decision 0126).

- Descriptors the user gives `anvil run` (``3>log``, a jobserver) reach the program, as
  under plain qemu-arm or natively: samples/descriptors_walked.c lists what it has, the
  original run directly and every copy (InHost, ReHost) under `anvil run` list the same.
- A forked child that outlives its parent (samples/outlives_parent.c) is waited for, in the
  program's session or (for a second) in one of its own: its output is there and its ReHost
  results are the InHost copy's, parent and child.
- A child that left the session and runs on (setsid: a daemon) is waited for a second at
  most: `anvil run` ends before it does and names it in one line; the daemon still finishes
  its own work.
- x86-64: the ReHost copy of descriptors_walked under `anvil run` lists what the original
  lists, and its results (parent's, forked child's) are the InHost copy's.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.support.rehost import CLI, CLI_RUN, assert_rehost_as_inhost
from tests.support.run import LIB_ROOT, forked_results, instrument, place
from tests.support.samples import build, build_x86_64

GIVEN_FD = 7  # a descriptor the user opened for the program (``7>file``)


def _with_descriptor(cmd: list[str], cwd: Path, log: Path) -> subprocess.CompletedProcess:
    """``cmd`` run with descriptor GIVEN_FD open on ``log`` (``7>log``, by a shell), no environment."""
    return subprocess.run(["sh", "-c", f'exec "$@" {GIVEN_FD}>"{log}"', "sh", *cmd], capture_output=True, cwd=cwd,
                          env={}, timeout=300)


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
def test_descriptors_given_to_anvil_run_reach_the_program(mode: str, tmp_path: Path) -> None:
    sample = build("descriptors_walked", "O2-thumb-dyn")
    original = place(sample, tmp_path, "orig")
    direct = _with_descriptor(["qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(original)], original.parent,
                              tmp_path / "direct.log")
    assert direct.returncode == 0, direct.stderr
    assert f"start: /proc/self/fd: 0 1 2 {GIVEN_FD} (4)".encode() in direct.stdout, direct.stdout
    extra = ("--mode", "rehost") if mode == "rehost" else ()
    copy = instrument(sample, "cachesim", tmp_path, *extra, slot=mode[:2] + "st")
    run = _with_descriptor(CLI_RUN + [str(copy)], copy.parent, tmp_path / "copy.log")
    assert (run.returncode, run.stdout, run.stderr) == (direct.returncode, direct.stdout, direct.stderr)


@pytest.mark.parametrize("args", [(), ("session",)], ids=["same-session", "own-session"])
def test_a_child_that_outlives_its_parent_is_waited_for(args: tuple[str, ...], tmp_path: Path) -> None:
    """In the program's session, or in one of its own for a while (a short job, not a daemon)."""
    sample = build("outlives_parent", "O2-thumb-dyn")  # (run_prog's pipes close when the child ends)
    inhost, rehost = assert_rehost_as_inhost(sample, "cachesim", tmp_path, args=args)
    assert inhost.stdout.count(b"\n") == 2, inhost.stdout  # the parent's line and the child's
    children = forked_results(rehost.parent, "cachesim")
    assert len(children) == 1 and children == forked_results(inhost.cwd, "cachesim")


def test_a_daemon_is_not_waited_for(tmp_path: Path) -> None:
    sample = build("outlives_parent", "O2-thumb-dyn")
    original = place(sample, tmp_path, "orig")
    subprocess.run(["env", "-i", "qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(original), "daemon"],
                   cwd=original.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    rehost = instrument(sample, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    started = time.monotonic()
    # Files, not pipes: the daemon closes its own copies, but not before the fork.
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        run = subprocess.run(CLI_RUN + [str(rehost), "daemon"], stdout=out, stderr=err, cwd=rehost.parent,
                             env={}, timeout=60)
    took = time.monotonic() - started
    stderr = (tmp_path / "err").read_text()
    assert run.returncode == 0, stderr
    assert took < 3.5, f"anvil run waited for the daemon ({took:.1f} s; it runs 4 s)"
    assert stderr.count("\n") == 1 and "a session of its own (a daemon): not waited for longer" in stderr, stderr
    assert (tmp_path / "out").read_bytes().startswith(b"parent: ")
    for _ in range(100):  # the daemon finishes its work all the same
        if (rehost.parent / "daemon.out").exists() and (original.parent / "daemon.out").exists() \
                and (rehost.parent / "daemon.out").stat().st_size:
            break
        time.sleep(0.1)
    assert (rehost.parent / "daemon.out").read_bytes() == (original.parent / "daemon.out").read_bytes()


def test_x86_64_rehost_copy_lists_what_the_original_lists(tmp_path: Path) -> None:
    sample = build_x86_64("descriptors_walked", "x64-gcc-O2")
    original = tmp_path / "orig" / "prog"
    original.parent.mkdir()
    original.write_bytes(sample.read_bytes())
    original.chmod(0o755)
    direct = subprocess.run(["prog"], executable=original, capture_output=True, cwd=original.parent, env={},
                            timeout=60)
    assert direct.returncode == 0 and b"start: /proc/self/fd: 0 1 2 (3)" in direct.stdout, direct
    copies = {}
    for mode in ("inhost", "rehost"):
        copy = tmp_path / mode / "prog"
        copy.parent.mkdir()
        done = subprocess.run([*CLI, "instrument", "--tool", "cachesim", "--mode", mode, str(sample),
                               "-o", str(copy)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        # (setarch -R: the same addresses in every run, so that the caches see the same lines)
        run = subprocess.run(["setarch", "-R", *CLI_RUN, str(copy)], capture_output=True, cwd=copy.parent, env={},
                             timeout=60)
        assert (run.returncode, run.stdout, run.stderr) == (direct.returncode, direct.stdout, direct.stderr)
        copies[mode] = copy.parent
    results = {mode: (where / "prog.cachesim.out").read_bytes() for mode, where in copies.items()}
    assert results["rehost"] == results["inhost"]
    assert forked_results(copies["rehost"], "cachesim") == forked_results(copies["inhost"], "cachesim")


def test_a_low_descriptor_limit(tmp_path: Path) -> None:
    """Under ``ulimit -Sn 512`` (below the channel's descriptor 1000) the ReHost copy runs
    with the program's own limit, as the original and the InHost copy do, and gets InHost's
    results; a hard limit that low is one line naming it."""
    sample = build("descriptors_walked", "O2-thumb-dyn")
    limited = ["sh", "-c", 'ulimit -Sn 512 && exec "$@"', "sh"]
    original = place(sample, tmp_path, "orig")
    inhost = instrument(sample, "cachesim", tmp_path)
    rehost = instrument(sample, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    runs = [subprocess.run(limited + ["qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(copy)], capture_output=True,
                           cwd=copy.parent, env={}, timeout=120) for copy in (original, inhost)]
    runs.append(subprocess.run(limited + [*CLI_RUN, str(rehost)], capture_output=True, cwd=rehost.parent, env={},
                               timeout=120))
    assert runs[0].returncode == 0, runs[0].stderr
    for run in runs[1:]:
        assert (run.returncode, run.stdout, run.stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    assert (rehost.parent / "prog.cachesim.out").read_bytes() == (inhost.parent / "prog.cachesim.out").read_bytes()
    hard = subprocess.run(["sh", "-c", 'ulimit -n 512 && exec "$@"', "sh", *CLI_RUN, str(rehost)],
                          capture_output=True, text=True, cwd=rehost.parent, env={}, timeout=120)
    assert hard.returncode == 2 and hard.stderr.count("\n") == 1 and "descriptor limit is 512" in hard.stderr
