"""The images of a fixed set of inputs are byte for byte those the recorded revision made.

Moving code between modules (the ISA split, decision 0105) must not change a byte of what
the rewriter writes; the suite's other tests show behaviour, this one shows identity, over
both instruction sets, both modes, every tool, Linux programs and firmware. The recording
(``tests/data/image_digests.json``, ``tests.support.image_digests``) holds the inputs'
digests too: where this machine's toolchain builds other inputs, the recorded revision's
own code, taken from git, makes the images to compare with instead.
"""

from __future__ import annotations

import json

import pytest

from tests.support import image_digests


def _recording() -> dict:
    return json.loads(image_digests.DIGESTS.read_text())


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> dict[str, str]:
    """Per case, the image digest the recorded revision makes from this machine's inputs."""
    recording = _recording()
    work = tmp_path_factory.mktemp("digests")
    inputs = {case.name: image_digests.input_digest(case) for case in image_digests.CASES}
    if all(inputs[name] == recorded["input"] for name, recorded in recording["cases"].items()):
        return {name: recorded["image"] for name, recorded in recording["cases"].items()}
    return image_digests.baseline_images(recording["revision"], work)


def test_every_case_is_recorded() -> None:
    assert sorted(_recording()["cases"]) == sorted(case.name for case in image_digests.CASES)


@pytest.mark.parametrize("case", image_digests.CASES, ids=lambda case: case.name)
def test_image_is_the_recorded_revisions(case: image_digests.Case, baseline: dict[str, str], tmp_path) -> None:
    image = image_digests.image_digest(case, tmp_path)
    assert image == baseline[case.name], (
        f"{case.name}: the image differs from revision {_recording()['revision']}'s; if the change is meant, "
        "record again: python3 -m tests.support.image_digests --record")
