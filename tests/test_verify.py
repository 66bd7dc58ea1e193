"""The independent verifier: each kind of violation, and RP recomputation with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.machines.model import generic, gfx906
from jaxsched.problem.generate import generate_region
from jaxsched.problem.region import Region
from jaxsched.verify import InvalidSchedule, ScheduleReport, verify, verify_order

V1, V2, S1, S2 = ("VGPR", 1), ("VGPR", 2), ("SGPR", 1), ("SGPR", 2)


def chain3() -> Region:
    """0 -> 1 (latency 3) -> 2 (latency 1); %a V1, %b V2, %c S1."""
    return Region.build(
        "chain3",
        [("a = ld", ["%a"], []), ("b = f a", ["%b"], ["%a"]), ("c = g b", ["%c"], ["%b"])],
        {"%a": V1, "%b": V2, "%c": S1},
        [(0, 1, 3), (1, 2, 1)],
        live_out=[],
    )


def asap(region: Region) -> np.ndarray:
    """Issue in input order (a topological order here), each as early as edges allow."""
    cycles = np.zeros(len(region), dtype=np.int64)
    last = -1
    for i in range(len(region)):
        c = max([last + 1] + [int(cycles[j]) + lat for j, lat in region.predecessors()[i]])
        cycles[i], last = c, c
    return cycles


# ---------------------------------------------------------------------- valid schedules
def test_valid_schedule_length_stalls_and_report():
    rep = verify(chain3(), gfx906(), [0, 3, 4])
    assert isinstance(rep, ScheduleReport)
    assert rep.length == 5 and rep.stalls == 2 and rep.order == (0, 1, 2)
    rep = verify(chain3(), gfx906(), [0, 5, 9])
    assert rep.length == 10 and rep.stalls == 7


def test_verify_order_is_rp_pass(small_region, gfx906_machine):
    n = len(small_region)
    rep = verify_order(small_region, gfx906_machine, list(range(n)))
    assert rep.length == n and rep.stalls == 0
    assert rep.order == tuple(range(n))
    # The same order with cycles = positions, latencies ignored, gives the same report.
    rep2 = verify(small_region, gfx906_machine, np.arange(n), latencies=False)
    assert rep2.peak_rp == rep.peak_rp and rep2.length == n
    # ... but with real latencies, back-to-back issue violates the load latencies.
    with pytest.raises(InvalidSchedule, match="latency"):
        verify(small_region, gfx906_machine, np.arange(n))


def test_accepts_jax_and_numpy_integer_arrays():
    import jax.numpy as jnp

    for cycles in (jnp.array([0, 3, 4], jnp.int32), np.array([0, 3, 4], np.int16), (0, 3, 4)):
        assert verify(chain3(), gfx906(), cycles).length == 5


def test_issue_width_two_and_same_cycle_latency_zero_edge():
    m = generic(issue_width=2)
    # Edge 1 -> 0 with latency 0: both may share a cycle, 1 goes first in the sequence.
    r = Region.build(
        "w2",
        [("x = use a", ["%x"], ["%a"]), ("a = def", ["%a"], []), ("y", ["%y"], [])],
        {"%a": V1, "%x": V1, "%y": V1},
        [(1, 0, 0)],
        live_in=[],
        live_out=[],
    )
    rep = verify(r, m, [0, 0, 1])
    assert rep.order == (1, 0, 2) and rep.length == 2 and rep.stalls == 0
    # An explicit order that puts 0 before 1 inside the cycle breaks the edge.
    with pytest.raises(InvalidSchedule, match="issued before instruction 1"):
        verify(r, m, [0, 0, 1], order=[0, 1, 2])
    assert verify(r, m, [0, 0, 1], order=[1, 0, 2]).order == (1, 0, 2)
    with pytest.raises(InvalidSchedule, match="issue width 2"):
        verify(r, m, [0, 0, 0])


# ---------------------------------------------------------------------- violations
@pytest.mark.parametrize(
    ("cycles", "pattern"),
    [
        ([0, 3], r"cycles has 2 entries, the region has 3"),  # a missing placement
        ([0, 3, 4, 5], r"cycles has 4 entries"),  # wrong length
        ([0, 2, 4], r"edge 0 -> 1 \(latency 3\).*instruction 1 issues at cycle 2, needs >= 3"),
        ([0, 3, 3], r"edge 1 -> 2 \(latency 1\)"),
        ([4, 3, 5], r"edge 0 -> 1"),  # dependence order
        ([-1, 3, 4], r"instruction 0 has negative cycle -1"),
        ([0.0, 3.0, 4.0], r"cycles must hold integers, got dtype float64"),
        ([[0, 3, 4]], r"one-dimensional"),
        ([True, 3, 4], r"integers"),
        (["0", "3", "4"], r"integers"),
    ],
)
def test_violations(cycles, pattern):
    with pytest.raises(InvalidSchedule, match=pattern) as info:
        verify(chain3(), gfx906(), cycles)
    assert "region 'chain3'" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_issue_width_violation():
    r = Region.build("free", [("a", [], []), ("b", [], []), ("c", [], [])], {}, [])
    with pytest.raises(InvalidSchedule, match=r"cycle 1 issues 2 instructions \[1, 2\]"):
        verify(r, gfx906(), [0, 1, 1])
    assert verify(r, generic(issue_width=2), [0, 1, 1]).length == 2


def test_latencies_false_needs_strict_order():
    r = chain3()
    assert verify(r, gfx906(), [0, 1, 2], latencies=False).length == 3
    with pytest.raises(InvalidSchedule, match=r"edge 0 -> 1 \(latencies ignored\)"):
        verify(r, generic(issue_width=2), [0, 0, 1], latencies=False)
    with pytest.raises(InvalidSchedule, match="edge 1 -> 2"):
        verify(r, gfx906(), [0, 2, 1], latencies=False)


@pytest.mark.parametrize(
    ("order", "pattern"),
    [
        ([0, 1, 1], r"order places instruction 1 2 times"),  # duplicate placement
        ([0, 1], r"order has 2 entries"),  # missing placement
        ([0, 1, 3], r"order\[2\] = 3 is not an instruction id"),
        ([0, 2, 1], r"edge 1 -> 2"),
        ([-1, 0, 1], r"order\[0\] = -1"),
    ],
)
def test_order_violations(order, pattern):
    with pytest.raises(InvalidSchedule, match=pattern):
        verify_order(chain3(), gfx906(), order)


def test_order_must_agree_with_cycles():
    with pytest.raises(InvalidSchedule, match="inconsistent with cycles"):
        verify(chain3(), gfx906(), [0, 3, 4], order=[1, 0, 2])
    with pytest.raises(InvalidSchedule, match="order places instruction 1 2 times"):
        verify(chain3(), gfx906(), [0, 3, 4], order=[0, 1, 1])


def test_unknown_register_file():
    r = Region.build("acc", [("a", ["%a"], [])], {"%a": ("AGPR", 1)}, [], live_out=[])
    with pytest.raises(InvalidSchedule, match="'AGPR', unknown to machine 'gfx906'"):
        verify(r, gfx906(), [0])
    r = Region.build("lt", [("a", [], [])], {}, [], live_through={"AGPR": 3})
    with pytest.raises(InvalidSchedule, match="live_through names file 'AGPR'"):
        verify(r, gfx906(), [0])


# ---------------------------------------------------------------------- RP, known answers
def vgpr_profile(region: Region, order) -> list[int]:
    return verify_order(region, gfx906(), order).rp_profile[:, 0].tolist()


def test_dead_def_occupies_only_its_instruction():
    # 0 defines %d, never used and not live-out; 1 defines %b used by 2.
    r = Region.build(
        "dead",
        [("d", ["%d"], []), ("b", ["%b"], []), ("use b", [], ["%b"])],
        {"%d": V1, "%b": V1},
        [(1, 2, 1)],
        live_out=[],
    )
    assert vgpr_profile(r, [0, 1, 2]) == [0, 1, 1, 0]
    assert vgpr_profile(r, [1, 0, 2]) == [0, 1, 2, 0]  # %d sits on top of the live %b
    assert verify_order(r, gfx906(), [1, 0, 2]).peak_rp == {"VGPR": 2, "SGPR": 0}


def test_live_out_stays_live():
    r = Region.build(
        "out",
        [("d", ["%d"], []), ("b", ["%b"], []), ("use b", [], ["%b"])],
        {"%d": V1, "%b": V1},
        [(1, 2, 1)],
        live_out=["%d"],
    )
    assert vgpr_profile(r, [0, 1, 2]) == [0, 1, 2, 1]
    # Omitted live_out: %d (defined, never used) is live-out by default.
    implied = Region.build("out2", r.instructions, r.registers, r.edges)
    assert implied.live_out == ("%d",)
    assert vgpr_profile(implied, [0, 1, 2]) == [0, 1, 2, 1]
    # A live-out register survives its last use.
    r = Region.build(
        "out3",
        [("a", ["%a"], []), ("use a", [], ["%a"])],
        {"%a": V1},
        [(0, 1, 1)],
        live_out=["%a"],
    )
    assert vgpr_profile(r, [0, 1]) == [0, 1, 1]


def test_live_in_dies_at_last_use():
    r = Region.build(
        "in",
        [("x = a", ["%x"], ["%a"]), ("y = a", ["%y"], ["%a"]), ("use x y", [], ["%x", "%y"])],
        {"%a": V2, "%x": V1, "%y": V1},
        [(0, 2, 1), (1, 2, 1)],
        live_out=[],
    )
    assert r.live_in == ("%a",)
    # start 2; after 0: 2 + x = 3; after 1: a dies (-2), y born: 2; after 2: 0.
    assert vgpr_profile(r, [0, 1, 2]) == [2, 3, 2, 0]
    # A live-in register that is never used stays live throughout.
    r = Region.build(
        "in2", [("b", ["%b"], [])], {"%a": V1, "%b": V1}, [], live_in=["%a"], live_out=[]
    )
    assert vgpr_profile(r, [0]) == [1, 2]


def test_live_through_is_constant():
    r = Region.build(
        "lt",
        [("a", ["%a"], []), ("use a", [], ["%a"])],
        {"%a": V1},
        [(0, 1, 1)],
        live_out=[],
        live_through={"VGPR": 5, "SGPR": 7},
    )
    rep = verify_order(r, gfx906(), [0, 1])
    assert rep.rp_profile.tolist() == [[5, 7], [6, 7], [5, 7]]
    assert rep.peak_rp == {"VGPR": 6, "SGPR": 7}


def test_width_two_and_two_files():
    r = Region.build(
        "files",
        [
            ("p = ld", ["%p"], []),
            ("s = ld", ["%s"], []),
            ("v = p s", ["%v"], ["%p", "%s"]),
            ("use v", [], ["%v"]),
        ],
        {"%p": S2, "%s": S1, "%v": V2},
        [(0, 2, 5), (1, 2, 5), (2, 3, 1)],
        live_out=[],
    )
    rep = verify_order(r, gfx906(), [0, 1, 2, 3])
    # columns: machine file order (VGPR, SGPR)
    assert rep.rp_profile.tolist() == [[0, 0], [0, 2], [0, 3], [2, 0], [0, 0]]
    assert rep.peak_rp == {"VGPR": 2, "SGPR": 3}


def test_uses_processed_before_defs():
    # %b = op %a where this is %a's last use: the result reuses the space, RP stays 1.
    r = Region.build(
        "reuse",
        [("a", ["%a"], []), ("b = a", ["%b"], ["%a"]), ("use b", [], ["%b"])],
        {"%a": V1, "%b": V1},
        [(0, 1, 1), (1, 2, 1)],
        live_out=[],
    )
    assert vgpr_profile(r, [0, 1, 2]) == [0, 1, 1, 0]
    # Same register used and defined (a redefinition): killed by the use, revived by the def.
    r = Region.build(
        "redef",
        [("a = a + 1", ["%a"], ["%a"]), ("use a", [], ["%a"])],
        {"%a": V2},
        [(0, 1, 1)],
        live_in=["%a"],
        live_out=["%a"],
    )
    assert vgpr_profile(r, [0, 1]) == [2, 2, 2]


def test_occupancy_and_rp_cost_from_peaks():
    # 15 live 64-bit values -> 30 VGPRs + 1 live-through = 31: gfx906 occupancy 8, cost 2.
    names = [f"%v{i}" for i in range(15)]
    r = Region.build(
        "occ",
        [*[(f"def {v}", [v], []) for v in names], ("use all", [], names)],
        dict.fromkeys(names, V2),
        [(i, 15, 1) for i in range(15)],
        live_out=[],
        live_through={"VGPR": 1},
    )
    rep = verify_order(r, gfx906(), list(range(16)))
    assert rep.peak_rp["VGPR"] == 31
    assert (rep.occupancy, rep.rp_cost) == (8, 2)
    assert rep.occupancy == gfx906().occupancy([31, 0])


# ---------------------------------------------------------------------- cross-check
def interval_rp(region: Region, seq: list[int]) -> np.ndarray:
    """VGPR/SGPR RP after each position from live intervals (SSA regions only)."""
    pos = {i: k for k, i in enumerate(seq)}
    first_def: dict[str, int] = {}
    last_use: dict[str, int] = {}
    for i, inst in enumerate(region.instructions):
        for r in inst.defs:
            assert r not in first_def, "SSA expected"
            first_def[r] = pos[i]
        for r in inst.uses:
            last_use[r] = max(last_use.get(r, -1), pos[i])
    files = {"VGPR": 0, "SGPR": 1}
    out = np.zeros((len(seq), 2), dtype=np.int64)
    for f, v in region.live_through.items():
        out[:, files[f]] += v
    for name, reg in region.registers.items():
        start = -1 if name in region.live_in else first_def.get(name)
        if start is None:
            continue
        if name in region.live_out:
            end = len(seq)  # live to the end
        elif name in last_use:
            end = last_use[name]  # dies at its last use (not live after it)
        elif start == -1:
            end = len(seq)  # a live-in without uses is never killed
        else:
            end = start + 1  # dead def: only at its own instruction
        lo, hi = max(start, 0), end
        out[lo:hi, files[reg.file]] += reg.width
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rp_matches_interval_model_on_generated_regions(seed):
    rng = np.random.default_rng(seed)
    region = generate_region(seed, int(rng.integers(2, 200)))
    n = len(region)
    preds = [{j for j, _ in p} for p in region.predecessors()]
    for _ in range(3):  # random topological orders
        done: set[int] = set()
        seq: list[int] = []
        while len(seq) < n:
            ready = [i for i in range(n) if i not in done and preds[i] <= done]
            pick = ready[int(rng.integers(0, len(ready)))]
            seq.append(pick)
            done.add(pick)
        rep = verify_order(region, gfx906(), seq)
        np.testing.assert_array_equal(rep.rp_profile[1:], interval_rp(region, seq))
    # The input order with ASAP cycles is a valid latency schedule.
    cycles = asap(region)
    rep = verify(region, gfx906(), cycles)
    assert rep.length == int(cycles.max()) + 1 >= region.critical_path_length() + 1
