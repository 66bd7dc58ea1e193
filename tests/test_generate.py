"""The random region generator: determinism, sizes, dependence coverage, GPU-like shape."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.machines.model import gfx906
from jaxsched.problem.format import region_from_dict, region_to_dict
from jaxsched.problem.generate import Knobs, generate_region, generate_regions
from jaxsched.problem.region import MAX_INSTRUCTIONS, Region
from jaxsched.verify import verify_order


def check_structure(r: Region) -> None:
    """Invariants every generated region must satisfy."""
    n = len(r)
    producer: dict[str, int] = {}
    for i, inst in enumerate(r.instructions):
        for reg in inst.defs:
            assert reg not in producer, f"{r.name}: {reg} defined twice (not SSA)"
            producer[reg] = i
    edges = {(e.src, e.dst): e for e in r.edges}
    assert all(e.src < e.dst for e in r.edges), "input order must be topological"
    used_undefined = set()
    for i, inst in enumerate(r.instructions):
        for reg in inst.uses:
            if reg not in producer:
                used_undefined.add(reg)
                continue
            d = producer[reg]
            assert d < i, f"{r.name}: {reg} used at {i} before its def at {d}"
            assert (d, i) in edges, f"{r.name}: no edge for def->use {reg} ({d} -> {i})"
    # Every def->use edge carries the producer's latency: all data edges out of one
    # instruction share it.
    lat: dict[int, int] = {}
    for e in r.edges:
        if e.kind == "data":
            assert lat.setdefault(e.src, e.latency) == e.latency
    assert set(r.live_in) == used_undefined
    assert not set(r.live_in) & set(producer)
    used = {u for x in r.instructions for u in x.uses}
    defined_unused = set(producer) - used
    assert defined_unused <= set(r.live_out)
    assert set(r.live_out) <= set(producer)
    for reg in r.registers.values():
        assert reg.file in ("VGPR", "SGPR") and reg.width in (1, 2)
    assert {e.kind for e in r.edges} <= {"data", "other"}
    assert all(e.latency in (0, 1) for e in r.edges if e.kind == "other")
    r.check_machine(gfx906())
    assert n == len(r.instructions)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 12, 16, 33, 100, 257, 1000, 4096])
def test_sizes_and_structure(n):
    r = generate_region(n, n)
    assert len(r) == n
    check_structure(r)
    verify_order(r, gfx906(), list(range(n)))  # the input order is a valid RP-pass order


def test_many_seeds_structure():
    for seed in range(40):
        check_structure(generate_region(seed, 2 + seed * 7))


def test_deterministic_per_seed():
    a = region_to_dict(generate_region(7, 300))
    b = region_to_dict(generate_region(7, 300))
    assert a == b
    assert region_to_dict(generate_region(8, 300)) != a
    assert region_to_dict(generate_region(7, 300, name="x")) == {**a, "name": "x"}


def test_round_trips_through_format():
    r = generate_region(3, 120)
    assert region_to_dict(region_from_dict(region_to_dict(r))) == region_to_dict(r)


def test_gpu_like_content():
    r = generate_region(11, 400)
    texts = [i.text for i in r.instructions]
    loads = [i for i, t in enumerate(texts) if "GLOBAL_LOAD" in t]
    stores = [i for i, t in enumerate(texts) if "GLOBAL_STORE" in t]
    assert loads and stores and any("S_LOAD" in t for t in texts)
    lat = {e.src: e.latency for e in r.edges if e.kind == "data"}
    assert all(20 <= lat[i] <= 80 for i in loads if i in lat)
    assert all(not r.instructions[i].defs and len(r.instructions[i].uses) == 2 for i in stores)
    files = [g.file for g in r.registers.values()]
    assert files.count("VGPR") > files.count("SGPR") > 0
    widths = {(g.file, g.width) for g in r.registers.values()}
    assert widths == {("VGPR", 1), ("VGPR", 2), ("SGPR", 1), ("SGPR", 2)}
    assert any(e.kind == "other" for e in r.edges)
    assert sum(r.live_through.values()) <= 12


def test_register_pressure_is_a_real_constraint():
    """Input orders of ~100-instruction regions reach 20-60 VGPRs for some seeds."""
    peaks = [
        verify_order(generate_region(s, 100), gfx906(), range(100)).peak_rp["VGPR"]
        for s in range(12)
    ]
    assert max(peaks) >= 20 and min(peaks) <= 60
    occ = [verify_order(generate_region(s, 300), gfx906(), range(300)).occupancy for s in range(4)]
    assert min(occ) < 10


def test_knobs_change_the_regions():
    r = generate_region(1, 200, store_prob=0.0, accumulate_prob=0.0)
    assert not any("STORE" in i.text for i in r.instructions)
    r = generate_region(1, 200, f64_chain_prob=1.0)
    assert any("GLOBAL_LOAD_DWORDX2" in i.text for i in r.instructions)
    assert not any(i.text.split(" = ")[-1].startswith("GLOBAL_LOAD_DWORD ") for i in r.instructions)
    r = generate_region(1, 200, load_latency=(50, 50), live_through=(0, 0))
    assert {
        e.latency
        for e in r.edges
        if e.kind == "data" and "GLOBAL_LOAD" in r.instructions[e.src].text
    } == {50}
    assert sum(r.live_through.values()) == 0
    assert Knobs().load_latency == (20, 80)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"n": 1}, "n=1 is not an integer in 2.."),
        ({"n": MAX_INSTRUCTIONS + 1}, "is not an integer in 2.."),
        ({"n": 2.5}, "n=2.5"),
        ({"n": 10, "seed": -1}, "seed=-1"),
        ({"n": 10, "colour": 3}, r"unknown knobs \['colour'\]"),
        ({"n": 10, "group_size": (3, 2)}, "group_size"),
        ({"n": 10, "loads_per_chain": (0, 2)}, "loads_per_chain"),
        ({"n": 10, "store_prob": 1.5}, "store_prob=1.5 is not a probability"),
        ({"n": 10, "extra_live_out": -1}, "extra_live_out"),
    ],
)
def test_bad_arguments(kwargs, pattern):
    kwargs = {"seed": 0, **kwargs}
    with pytest.raises(ValueError, match=pattern):
        generate_region(**kwargs)


def test_generate_regions():
    rs = generate_regions(5, 60, 2, 512)
    assert len(rs) == 60
    assert [r.name for r in rs] == [f"gen:5:{k}" for k in range(60)]
    sizes = np.array([len(r) for r in rs])
    assert sizes.min() >= 2 and sizes.max() <= 512
    # log-uniform: both small and large regions occur
    assert (sizes < 16).sum() >= 5 and (sizes > 128).sum() >= 5
    again = generate_regions(5, 60, 2, 512)
    assert [region_to_dict(a) for a in rs] == [region_to_dict(b) for b in again]
    assert [len(r) for r in generate_regions(6, 60, 2, 512)] != sizes.tolist()
    for r in rs[:20]:
        check_structure(r)
    assert [len(r) for r in generate_regions(1, 5, 9, 9)] == [9] * 5
    assert generate_regions(1, 0) == []
    with pytest.raises(ValueError, match="min_size"):
        generate_regions(1, 3, 10, 5)
    with pytest.raises(ValueError, match="count"):
        generate_regions(1, -1)
