"""How many executables a `schedule` run needs (pinned): one `engine.advance` per bucket whose
regions reach the colony, nothing for preparing problems or for settled regions, and nothing
more for another run of the same buckets."""

from __future__ import annotations

import pytest

import jaxsched
from jaxsched.colony import host
from jaxsched.colony.drivers import engine
from jaxsched.colony.problem import canonical_shape
from jaxsched.compilation import CompileCache
from jaxsched.problem.generate import generate_region
from jaxsched.problem.padded import padded_shape
from jaxsched.verify import verify

MACHINE = jaxsched.gfx906()
#: The colony runs on every region (no filters, the input order as the only start).
SETTINGS = dict(
    ants=64, wavefront_size=32, max_iterations=3, filters=False, starts=("input",), seed=3
)


@pytest.fixture
def cache(monkeypatch) -> CompileCache:
    """A fresh compile cache for `schedule` (the suite's store behind it: an executable is
    compiled or loaded, and counted either way)."""
    fresh = CompileCache()
    monkeypatch.setattr(engine, "COMPILED", fresh)
    monkeypatch.setattr(host, "COMPILED", fresh)
    return fresh


def _run(cache: CompileCache, regions) -> list[str]:
    """The functions of the executables one `schedule` call obtained (compiled or loaded)."""
    before = len([e for e in cache.events if e.source != "memory"])
    results = jaxsched.schedule(regions, MACHINE, **SETTINGS)
    for r, res in zip(regions, results, strict=True):
        verify(r, MACHINE, res.cycles, order=res.order)
    events = [e for e in cache.events if e.source != "memory"]
    return [e.function for e in events[before:]]


def test_a_run_of_two_buckets_needs_one_executable_per_bucket(cache):
    # bucket 32 (17..32 instructions) and bucket 64 (33..64), three regions each
    first = [generate_region(s, n) for s, n in [(1, 20), (2, 24), (3, 30), (4, 40), (5, 50)]]
    first.append(generate_region(13, 60))
    again = [generate_region(s, n) for s, n in [(7, 18), (8, 22), (9, 31), (10, 35)]]
    again += [generate_region(11, 45), generate_region(12, 63)]
    shapes = {canonical_shape(padded_shape(r, MACHINE)) for r in first + again}
    assert len(shapes) == 2  # the buckets' canonical shapes (none grows its bucket)
    got = _run(cache, first)
    assert len(got) == 2 and all(name.endswith("advance") for name in got), got
    # other regions of the same buckets, as many per bucket: nothing new
    assert _run(cache, again) == []


def test_settled_regions_need_no_executable(cache):
    tiny = [generate_region(s, 3) for s in range(5)]  # starts meet their bounds
    results = jaxsched.schedule(tiny, MACHINE, seed=0)
    assert cache.compilations + cache.loads == 0
    assert all(sum(r.iterations) == 0 for r in results)
