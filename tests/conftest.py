"""Shared test fixtures: machines and the bundled example regions (keep this file small)."""

from __future__ import annotations

import os
import shutil
import tempfile

# No test reads or writes the user's executable store (`jaxsched.store`): the suite shares one
# store of its own, $JAXSCHED_TEST_CACHE_DIR (every worker and the processes tests start), a
# new temporary folder per run unless set (`off`: no store). Tests that need a store of their
# own pass a folder.
if "JAXSCHED_TEST_CACHE_DIR" not in os.environ:  # the first process of the run (xdist's
    # controller, or the only one): workers inherit the variable
    os.environ["JAXSCHED_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxsched-test-store-")
    os.environ["_JAXSCHED_TEST_STORE_OWNER"] = str(os.getpid())
os.environ["JAXSCHED_CACHE_DIR"] = os.environ["JAXSCHED_TEST_CACHE_DIR"]
# The native construction's library (`jaxsched.colony.construction.native`) is built once per run,
# in the
# run's store, and shared by tests that give processes a store of their own.
if os.path.isabs(os.environ["JAXSCHED_TEST_CACHE_DIR"]):
    os.environ.setdefault(
        "JAXSCHED_NATIVE_DIR", os.path.join(os.environ["JAXSCHED_TEST_CACHE_DIR"], "native")
    )

from pathlib import Path

import pytest

from jaxsched.compilation import relieve_map_pressure
from jaxsched.machines.model import Machine, gfx906
from jaxsched.problem.format import load_region, load_regions
from jaxsched.problem.region import Region

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def pytest_unconfigure(config):
    """The run's own store goes with the process that made it."""
    if os.environ.get("_JAXSCHED_TEST_STORE_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["JAXSCHED_TEST_CACHE_DIR"], ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _bounded_memory_maps():
    """A test worker lives through many files' compiles: drop cached executables between
    files when its memory maps near the kernel's limit (`relieve_map_pressure`)."""
    yield
    relieve_map_pressure()


@pytest.fixture
def no_store(monkeypatch):
    """No executable store in this test (``pytestmark = pytest.mark.usefixtures("no_store")``
    for a whole file): what a user who turned it off gets."""
    monkeypatch.setenv("JAXSCHED_CACHE_DIR", "off")


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
