"""scripts/debian_sample.py's reading of Debian's index (decision 0104): a corpus entry's
package list is what it computes from Depends, so it must follow libraries through each
other and stop at what is not a library or what the cross sysroot has."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location("debian_sample", Path(__file__).parents[1] / "scripts" /
                                               "debian_sample.py")
assert _SPEC is not None and _SPEC.loader is not None
debian_sample = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(debian_sample)


def _package(depends: str = "", multi_arch: str = "same", arch: str = "armhf") -> dict[str, str]:
    return {"Depends": depends, "Multi-Arch": multi_arch, "Architecture": arch}


INDEX = {
    "tool": _package("libc6 (>= 2.34), liba1 (>= 1) | libb1, tool-data, libgcc-s1, libarch-all", multi_arch=""),
    "liba1": _package("libc6, libdeep2:any (>= 3)"),
    "libb1": _package(),
    "libdeep2": _package("zlib1g"),
    "zlib1g": _package("libc6"),
    "tool-data": _package(multi_arch="foreign", arch="all"),
    "libarch-all": _package(multi_arch="foreign", arch="all"),
    "libc6": _package(),
    "libgcc-s1": _package(),
}


def test_depends_takes_the_first_alternative_without_versions_or_qualifiers() -> None:
    assert debian_sample.depends(INDEX["tool"]) == ["libc6", "liba1", "tool-data", "libgcc-s1", "libarch-all"]
    assert debian_sample.depends(INDEX["liba1"]) == ["libc6", "libdeep2"]


def test_library_closure_follows_libraries_and_leaves_the_sysroots() -> None:
    # liba1 (not its alternative libb1), through it libdeep2 and zlib1g (not named "lib", but
    # Multi-Arch: same); not the data package, an Architecture: all one, libc6 or libgcc-s1.
    assert debian_sample.library_closure("tool", INDEX) == ["liba1", "libdeep2", "zlib1g"]


def test_each_seed_passes_over_the_corpus_but_its_own_picks() -> None:
    # Decision 0106: seed 104's picks are in the corpus for seed 106's draw and not for its own
    # (so each draw repeats), and the entries made of PyPI wheels, which name no Debian
    # package, are passed over.
    for seed, own, other in ((104, "emacs-bin-common", "dar-static"), (106, "dar-static", "emacs-bin-common")):
        in_corpus = debian_sample.corpus_packages(seed)
        assert own not in in_corpus and other in in_corpus
        assert "sed" in in_corpus
