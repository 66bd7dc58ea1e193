"""Shared test fixtures: machines and the bundled example regions (keep this file small)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxsched.machines.model import Machine, gfx906
from jaxsched.problem.format import load_region, load_regions
from jaxsched.problem.region import Region

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="session")
def gfx906_machine() -> Machine:
    """The paper's GPU model (issue width 1, VGPR and SGPR files)."""
    return gfx906()


@pytest.fixture(scope="session")
def small_region() -> Region:
    """``examples/small.json``: a hand-written 13-instruction gfx906 region."""
    return load_region(EXAMPLES / "small.json")


@pytest.fixture(scope="session")
def kernel_regions() -> list[Region]:
    """``examples/kernel.jsonl``: 40 generated regions of 8..300 instructions."""
    return load_regions(EXAMPLES / "kernel.jsonl")
