"""The exact search agrees with an independent CP-SAT model (OR-Tools, test-only dependency).

The model is position-indexed: ``x[i, p]`` says instruction i is the p-th issued; liveness after
each position is encoded from the spec's case analysis (live-in/defined, uses remaining,
live-out); the RP cost goes through an occupancy table lookup (``AddElement``). The length model
adds issue cycles, latencies, the issue width and ties cycles to positions.
"""

from __future__ import annotations

import pytest

cp_model = pytest.importorskip("ortools.sat.python.cp_model")

from jaxsched.exact import solve_exact, solve_two_pass  # noqa: E402
from jaxsched.machines.model import Machine, generic, gfx906  # noqa: E402
from jaxsched.problem.generate import generate_region  # noqa: E402
from jaxsched.problem.region import Region  # noqa: E402
from jaxsched.verify import verify, verify_order  # noqa: E402


def _or(m, lits, name):
    v = m.NewBoolVar(name)
    if not lits:
        m.Add(v == 0)
        return v
    m.AddMaxEquality(v, lits)
    return v


def _and(m, lits, name):
    v = m.NewBoolVar(name)
    if not lits:
        m.Add(v == 1)
        return v
    m.AddMinEquality(v, lits)
    return v


def build_model(region: Region, machine: Machine, objective: str, rp_target: int | None = None):
    """CP-SAT model; returns (model, objective expression, positions, cycles or None)."""
    n = len(region)
    m = cp_model.CpModel()
    x = [[m.NewBoolVar(f"x{i}_{p}") for p in range(n)] for i in range(n)]
    for i in range(n):
        m.AddExactlyOne(x[i])
    for p in range(n):
        m.AddExactlyOne(x[i][p] for i in range(n))
    pos = [sum(p * x[i][p] for p in range(n)) for i in range(n)]
    for e in region.edges:
        m.Add(pos[e.src] + 1 <= pos[e.dst])
    # done[i][p] = 1 iff instruction i issued at position <= p
    done = [[m.NewBoolVar(f"d{i}_{p}") for p in range(n)] for i in range(n)]
    for i in range(n):
        for p in range(n):
            m.Add(done[i][p] == sum(x[i][q] for q in range(p + 1)))
    defs = {r: [] for r in region.registers}
    users = {r: [] for r in region.registers}
    for i, inst in enumerate(region.instructions):
        for r in inst.defs:
            defs[r].append(i)
        for r in inst.uses:
            users[r].append(i)
    files = machine.file_names
    ub = [region.live_through.get(f, 0) for f in files]
    for reg in region.registers.values():
        ub[files.index(reg.file)] += reg.width
    peaks = [m.NewIntVar(0, ub[f], f"peak{f}") for f in range(len(files))]
    start = [region.live_through.get(f, 0) for f in files]
    for r in region.live_in:
        start[files.index(region.registers[r].file)] += region.registers[r].width
    for f in range(len(files)):
        m.Add(peaks[f] >= start[f])
    for p in range(n):
        rp = [region.live_through.get(f, 0) for f in files]
        for r, reg in region.registers.items():
            defd = _or(m, [done[d][p] for d in defs[r]], f"defd{r}_{p}")
            held = m.NewBoolVar(f"held{r}_{p}")
            if r in region.live_in:
                m.Add(held == 1)
            else:
                m.Add(held == defd)
            if r in region.live_out:
                live = held
            elif users[r]:
                gone = _and(m, [done[u][p] for u in users[r]], f"gone{r}_{p}")
                live = _and(m, [held, gone.Not()], f"live{r}_{p}")
            elif r in region.live_in:
                live = defd.Not()
            else:
                live = None
            at = _or(m, [x[d][p] for d in defs[r]], f"at{r}_{p}")
            occ = at if live is None else _or(m, [live, at], f"occ{r}_{p}")
            f = files.index(reg.file)
            rp[f] = rp[f] + reg.width * occ
        for f in range(len(files)):
            m.Add(peaks[f] >= rp[f])
    occs = []
    for f, rf in enumerate(machine.files):
        table = [rf.occupancy(v) for v in range(ub[f] + 1)]
        o = m.NewIntVar(0, 64, f"occ{f}")
        m.AddElement(peaks[f], table, o)
        occs.append(o)
    occ = m.NewIntVar(0, 64, "occ")
    m.AddMinEquality(occ, occs)
    cost = m.NewIntVar(0, 64, "cost")
    m.AddMaxEquality(cost, [0, machine.target_occupancy - occ])
    if objective == "rp":
        big = sum(ub) + 1
        return m, cost * big + sum(peaks), pos, None
    if rp_target is not None:
        m.Add(cost <= rp_target)
    horizon = n + sum(e.latency for e in region.edges)
    cyc = [m.NewIntVar(0, horizon, f"c{i}") for i in range(n)]
    for e in region.edges:
        m.Add(cyc[e.dst] >= cyc[e.src] + e.latency)
    ivs = [m.NewIntervalVar(cyc[i], 1, cyc[i] + 1, f"iv{i}") for i in range(n)]
    m.AddCumulative(ivs, [1] * n, machine.issue_width)
    for i in range(n):
        for j in range(i + 1, n):
            b = m.NewBoolVar(f"b{i}_{j}")  # i issues before j
            m.Add(pos[i] < pos[j]).OnlyEnforceIf(b)
            m.Add(cyc[i] <= cyc[j]).OnlyEnforceIf(b)
            m.Add(pos[j] < pos[i]).OnlyEnforceIf(b.Not())
            m.Add(cyc[j] <= cyc[i]).OnlyEnforceIf(b.Not())
    length = m.NewIntVar(1, horizon + 1, "length")
    for i in range(n):
        m.Add(length >= cyc[i] + 1)
    return m, length, pos, cyc


def solve_cpsat(region, machine, objective, rp_target=None, seconds=300.0):
    """(status name, optimal objective value or None, wall seconds)."""
    m, obj, _, _ = build_model(region, machine, objective, rp_target)
    m.Minimize(obj)
    solver = cp_model.CpSolver()
    # A deterministic limit: whether CP-SAT proves optimality must not depend on the load.
    solver.parameters.max_deterministic_time = seconds
    solver.parameters.max_time_in_seconds = 20 * seconds  # a hang guard only
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    st = solver.Solve(m)
    name = solver.StatusName(st)
    value = round(solver.ObjectiveValue()) if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    return name, value, solver.WallTime()


def _rp_value(region, machine, key):
    files = machine.file_names
    ub = sum(region.live_through.get(f, 0) for f in files) + sum(
        r.width for r in region.registers.values()
    )
    return key[0] * (ub + 1) + key[1]


def _agree(region, machine) -> None:
    res = solve_two_pass(region, machine, time_budget=30.0)
    assert res.optimal, region.name
    verify_order(region, machine, res.rp.order)
    verify(region, machine, res.length.cycles, order=res.length.order)
    st, val, _ = solve_cpsat(region, machine, "rp")
    assert st == "OPTIMAL"
    assert val == _rp_value(region, machine, res.rp.upper), region.name
    st, val, _ = solve_cpsat(region, machine, "length", rp_target=res.rp.rp_cost)
    assert st == "OPTIMAL"
    assert val == res.length.upper[0], region.name


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_cpsat_small(seed: int) -> None:
    _agree(generate_region(100 + seed, 10 + 2 * seed), generic(registers_per_file=64))


@pytest.mark.slow
@pytest.mark.parametrize("n", [16, 28])
def test_agrees_with_cpsat_up_to_28(n: int) -> None:
    """Both passes agree with CP-SAT on a region of each instruction bucket (16 and 32: 28
    instructions, the largest here; `test_agrees_with_cpsat_small` has 10 to 14), on gfx906
    and on a dual-issue machine with 64 registers per file."""
    for machine in (gfx906(), generic(registers_per_file=64, issue_width=2)):
        _agree(generate_region(200 + n, n), machine)


def test_cpsat_model_rejects_worse_than_exact() -> None:
    """Sanity of the comparison: forcing CP-SAT below the exact optimum is infeasible."""
    region = generate_region(300, 9)
    machine = generic(registers_per_file=64)
    res = solve_exact(region, machine, objective="length", rp_target=2)
    m, length, _, _ = build_model(region, machine, "length", rp_target=2)
    m.Add(length <= res.upper[0] - 1)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.Solve(m) == cp_model.INFEASIBLE
