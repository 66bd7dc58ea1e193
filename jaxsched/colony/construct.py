"""All ants of a region building one schedule each: fixed-shape state, one `lax` step per
instruction.

Data layout (chosen for XLA:CPU and GPUs alike, measured in ``benchmarks/colony.py``):
  * The ant axis is explicit and **minor** (last): every per-ant array is ``[..., A]``. Scoring,
    prefix sums and reductions over ready slots then run as elementwise operations over rows of
    A ants, which vectorise; per-ant indexing is a gather/scatter with indices ``(idx, ant)``.
  * The ready list is compact: ``K + 1`` slots (K = padded ready-list bound; slot K is a dummy)
    holding candidate ids and, as a structure of arrays, everything scoring needs (earliest
    cycle, heuristic key, widths defined and killed per file), so scoring gathers nothing but
    the pheromone. A decision looks only at the first ``w`` slots, ``w`` the smallest of a few
    static widths holding every ant's candidates (`lax.switch`), so a step costs
    O(w + D + U + V) per ant: O(actual ready list), not O(N).
  * Both passes run the same code (one compilation): the pass is a traced flag. Every ant
    schedules exactly one instruction per step. In the ILP pass stalls are not steps: choosing a
    semi-ready candidate (or having none ready) moves the ant's cycle forward to the candidate's
    earliest cycle; in the RP pass latencies are zero, so every candidate is ready. All ants take
    the same number of steps and the step loop has an unbatched trip count (a plain loop, no
    lane freezing).
  * Sentinels index dummy slots (instruction ``N``, register ``R``, ready slot ``K``), so padding
    and inactive steps are harmless writes, not selects.
  * The width a candidate would kill now (its last uses) is kept per instruction and file and
    updated incrementally: each register keeps the XOR of the ids of its unscheduled users, so
    when one use remains the XOR *is* that user, found in O(1).
  * Randomness: two 32-bit hashes per ant-step of a per-ant seed (drawn once per iteration from
    the caller's key with `jax.random.bits`) and the step number; no key splitting in the loop.
    The RP pass's exploration coin hashes a per-wavefront seed, so a wavefront shares it.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxsched.colony.params import ColonyParams
from jaxsched.problem.padded import DeviceRegion

BIG = 2**30


class Prepared(NamedTuple):
    """A region's constant arrays for construction, with dummy rows for the sentinels.

    Shapes: N instructions (bucket), K ready slots, D successors, U uses, V defs, R registers,
    F register files.
    """

    n: jnp.ndarray  # int32[]: real instruction count
    succ: jnp.ndarray  # int32[N + 1, D]: successors, sentinel N; row N all sentinels
    succ_lat: jnp.ndarray  # int32[N + 1, D]
    num_preds: jnp.ndarray  # int32[N + 1]: in-degree (dummy: BIG, never ready)
    uses: jnp.ndarray  # int32[N + 1, U]: sentinel R
    defs: jnp.ndarray  # int32[N + 1, V]: sentinel R
    def_wf: jnp.ndarray  # int32[F, N + 1]: width an instruction defines, per file
    reg_wf: jnp.ndarray  # int32[R + 1, F]: width of register r in its file's column, else 0
    reg_num_uses: jnp.ndarray  # int32[R + 1]
    reg_users_xor: jnp.ndarray  # int32[R + 1]: XOR of the ids of the register's users
    reg_live_in: jnp.ndarray  # bool[R + 1]
    reg_live_out: jnp.ndarray  # bool[R + 1]: dummy True (never killed)
    live_through: jnp.ndarray  # int32[F]
    key_rp: jnp.ndarray  # f32[N + 1]: static heuristic key in [0, 1], RP pass (unit latencies)
    key_ilp: jnp.ndarray  # f32[N + 1]: static heuristic key in [0, 1], ILP pass
    init_ready: jnp.ndarray  # int32[K + 1]: initial candidates (roots), sentinel N
    init_count: jnp.ndarray  # int32[]: number of roots
    init_kill: jnp.ndarray  # int32[F, N + 1]: width each instruction would kill at the start


def prepare(dev: DeviceRegion, ready_slots: int, params: ColonyParams) -> Prepared:
    """Build the `Prepared` arrays of one region (jit-compatible; vmap over a batch)."""
    N = dev.valid.shape[0]
    R = dev.reg_width.shape[0]
    F = dev.live_through.shape[0]
    K = ready_slots

    def row_pad(a: jnp.ndarray, fill: int) -> jnp.ndarray:
        return jnp.concatenate([a, jnp.full((1, *a.shape[1:]), fill, a.dtype)], axis=0)

    def extend(a: jnp.ndarray, fill) -> jnp.ndarray:
        return jnp.concatenate([a, jnp.full((1,), fill, a.dtype)])

    reg_width = extend(dev.reg_width, 0)
    reg_file = extend(dev.reg_file, 0)
    reg_wf = jnp.where(reg_file[:, None] == jnp.arange(F)[None, :], reg_width[:, None], 0)
    uses = row_pad(dev.uses, R)
    defs = row_pad(dev.defs, R)
    def_wf = reg_wf[defs].sum(axis=1).T  # [F, N + 1]
    # XOR of user ids per register (no XOR scatter primitive: add bit planes, keep parity).
    ids = jnp.broadcast_to(jnp.arange(N + 1, dtype=jnp.int32)[:, None], uses.shape)
    bits = (ids[..., None] >> jnp.arange(31)) & 1  # [N + 1, U, 31]
    plane = jnp.zeros((R + 1, 31), jnp.int32).at[uses].add(bits)
    users_xor = ((plane & 1) << jnp.arange(31)).sum(axis=1).astype(jnp.int32)
    reg_live_out = extend(dev.reg_live_out, True)
    reg_live_in = extend(dev.reg_live_in, False)
    reg_num_uses = extend(dev.reg_num_uses, 0)

    def norm(x: jnp.ndarray) -> jnp.ndarray:
        x = x.astype(jnp.float32)
        return x / jnp.maximum(x.max(), 1.0)

    wsum = jnp.maximum(params.weight_cp + params.weight_successors, 1e-6)
    succ_key = params.weight_successors * norm(dev.num_succs)
    key_rp = (params.weight_cp * norm(dev.cp_unit) + succ_key) / wsum
    key_ilp = (params.weight_cp * norm(dev.cp) + succ_key) / wsum

    roots = dev.valid & (dev.num_preds == 0)
    slot = jnp.minimum(jnp.where(roots, jnp.cumsum(roots) - 1, K), K)
    init_ready = jnp.full(K + 1, N, jnp.int32).at[slot].set(jnp.arange(N, dtype=jnp.int32))
    init_ready = init_ready.at[K].set(N)

    # At the start a live-in register with one use (not live-out) dies at that use.
    kills = (reg_num_uses == 1) & reg_live_in & ~reg_live_out
    target = jnp.where(kills, users_xor, N)
    init_kill = jnp.zeros((F, N + 1), jnp.int32).at[:, target].add((reg_wf * kills[:, None]).T)
    return Prepared(
        n=dev.n,
        succ=row_pad(dev.succ, N),
        succ_lat=row_pad(dev.succ_lat, 0),
        num_preds=extend(dev.num_preds, BIG),
        uses=uses,
        defs=defs,
        def_wf=def_wf,
        reg_wf=reg_wf,
        reg_num_uses=reg_num_uses,
        reg_users_xor=users_xor,
        reg_live_in=reg_live_in,
        reg_live_out=reg_live_out,
        live_through=dev.live_through,
        key_rp=extend(key_rp, 0.0),
        key_ilp=extend(key_ilp, 0.0),
        init_ready=init_ready,
        init_count=roots.sum().astype(jnp.int32),
        init_kill=init_kill.at[:, N].set(0),
    )


class AntsState(NamedTuple):
    """Construction state of A ants (ant axis last). The ``ready*`` arrays are a structure of
    arrays over the compact ready list; slot K is a dummy."""

    ready: jnp.ndarray  # int32[K + 1, A]: candidate ids in slots [0, count), sentinel N after
    ready_e: jnp.ndarray  # int32[K + 1, A]: earliest cycle of each slot's candidate
    ready_key: jnp.ndarray  # f32[K + 1, A]: static heuristic key of each slot's candidate
    ready_def: jnp.ndarray  # int32[F, K + 1, A]: width the candidate defines, per file
    ready_kill: jnp.ndarray  # int32[F, K + 1, A]: width it would kill if issued now, per file
    count: jnp.ndarray  # int32[A]: number of candidates
    slot_of: jnp.ndarray  # int32[N + 1, A]: ready slot of an instruction (K: not in the list)
    preds_left: jnp.ndarray  # int32[N + 1, A]: unscheduled predecessors
    earliest: jnp.ndarray  # int32[N + 1, A]: earliest issue cycle (ILP pass; 0 in the RP pass)
    kill: jnp.ndarray  # int32[F, N + 1, A]: width an instruction would kill if issued now
    remaining: jnp.ndarray  # int32[R + 1, A]: uses not yet issued per register
    users_xor: jnp.ndarray  # int32[R + 1, A]: XOR of the ids of unscheduled users
    live: jnp.ndarray  # bool[R + 1, A]: register live now
    live_w: jnp.ndarray  # int32[F, A]: live width per file (without live-through)
    peak: jnp.ndarray  # int32[F, A]: peak RP per file (with live-through)
    last: jnp.ndarray  # int32[A]: last scheduled instruction (N: none yet)
    cycle: jnp.ndarray  # int32[A]: next cycle an instruction may issue in
    issued: jnp.ndarray  # int32[A]: instructions already issued in ``cycle``
    stalls: jnp.ndarray  # int32[A]: optional stall cycles taken (ILP pass)
    dead: jnp.ndarray  # bool[A]: RP cost exceeded the target
    order: jnp.ndarray  # int32[N, A]: instruction issued at each step, sentinel N


class AntResults(NamedTuple):
    order: jnp.ndarray  # int32[A, N]: issue order, sentinel N after the region's n
    peak: jnp.ndarray  # int32[A, F]
    length: jnp.ndarray  # int32[A]: cycles (ILP pass) or n (RP pass)
    stalls: jnp.ndarray  # int32[A]: optional stall cycles taken
    dead: jnp.ndarray  # bool[A]


class StepInputs(NamedTuple):
    """Per-iteration inputs shared by all ants of a region."""

    tau: jnp.ndarray  # f32[N + 1, N + 1]: pheromone; row N = start, column N = dummy
    q0: jnp.ndarray  # f32[]: exploitation probability
    rp_limit: jnp.ndarray  # int32[F]: largest RP per file within the RP cost target
    stall_budget: jnp.ndarray  # f32[]: G, the stall count of the best schedule so far (>= 1)
    timed: jnp.ndarray  # bool[]: ILP pass (latencies, stalls) vs RP pass


class AntSeeds(NamedTuple):
    seed: jnp.ndarray  # uint32[A]: roulette randomness
    coin: jnp.ndarray  # uint32[A]: exploitation coin (equal within a wavefront when uniform)
    may_stall: jnp.ndarray  # bool[A]: ant's wavefront may take optional stalls


def hash32(x: jnp.ndarray) -> jnp.ndarray:
    """A 32-bit integer mixer (lowbias32); uint32 -> uint32."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def uniform(seed: jnp.ndarray, step: jnp.ndarray) -> jnp.ndarray:
    """f32 in [0, 1) from uint32 seeds and a step counter (elementwise)."""
    bits = hash32(seed + step.astype(jnp.uint32) * jnp.uint32(0x9E3779B9))
    return (bits >> 8).astype(jnp.float32) * jnp.float32(1.0 / (1 << 24))


def rp_cost(peak: jnp.ndarray, lut: jnp.ndarray, target: jnp.ndarray) -> jnp.ndarray:
    """RP cost of per-file peaks ``int32[F, ...]`` -> ``int32[...]``."""
    F, T = lut.shape
    idx = jnp.clip(peak, 0, T - 1)
    occ = jnp.stack([lut[f][idx[f]] for f in range(F)]).min(axis=0)
    return jnp.maximum(0, target - occ)


def rp_limits(lut: jnp.ndarray, target_occupancy: jnp.ndarray, cost: jnp.ndarray) -> jnp.ndarray:
    """int32[F]: per file, the largest RP whose cost is at most ``cost`` (the cost of a peak
    vector is the max over files, each file's cost non-decreasing in its RP)."""
    T = lut.shape[1]
    ok = target_occupancy - lut <= cost  # [F, T]
    rp = jnp.arange(T, dtype=jnp.int32)
    return jnp.where(ok, rp, -1).max(axis=1).astype(jnp.int32)


def init_ants(prep: Prepared, ants: int, timed: jnp.ndarray) -> AntsState:
    N = prep.succ.shape[0] - 1
    K = prep.init_ready.shape[0] - 1

    def rep(x: jnp.ndarray) -> jnp.ndarray:
        return jnp.broadcast_to(x[..., None], (*x.shape, ants))

    live_w = (prep.reg_wf * prep.reg_live_in[:, None]).sum(axis=0).astype(jnp.int32)
    zeros = jnp.zeros(ants, jnp.int32)
    ids = prep.init_ready
    key = jnp.where(timed, prep.key_ilp, prep.key_rp)
    slot_of = jnp.full(N + 1, K, jnp.int32).at[ids].set(jnp.arange(K + 1, dtype=jnp.int32))
    return AntsState(
        ready=rep(ids),
        ready_e=jnp.zeros((K + 1, ants), jnp.int32),
        ready_key=rep(key[ids]),
        ready_def=rep(prep.def_wf[:, ids]),
        ready_kill=rep(prep.init_kill[:, ids]),
        count=rep(prep.init_count),
        slot_of=rep(slot_of.at[N].set(K)),
        preds_left=rep(prep.num_preds),
        earliest=jnp.zeros((N + 1, ants), jnp.int32),
        kill=rep(prep.init_kill),
        remaining=rep(prep.reg_num_uses),
        users_xor=rep(prep.reg_users_xor),
        live=rep(prep.reg_live_in),
        live_w=rep(live_w),
        peak=rep(live_w + prep.live_through),
        last=jnp.full(ants, N, jnp.int32),
        cycle=zeros,
        issued=zeros,
        stalls=zeros,
        dead=jnp.zeros(ants, bool),
        order=jnp.full((N, ants), N, jnp.int32),
    )


def _per_file(reg_wf: jnp.ndarray, regs: jnp.ndarray, mask: jnp.ndarray) -> jnp.ndarray:
    """Sum of widths of ``regs`` [M, A] where ``mask`` [M, A], per file -> int32[F, A]."""
    w = reg_wf[regs]  # [M, A, F]
    return (w * mask[..., None]).sum(axis=0).T


def slot_widths(slots: int) -> tuple[int, ...]:
    """Static widths a decision may look at: 8, 32, 128, ... (x4) below ``slots``, then
    ``slots``. Fewer widths compile faster; x4 wastes at most 4x on the slot work."""
    out, w = [], 8
    while w < slots:
        out.append(w)
        w *= 4
    return (*out, slots)


def _decide(
    w: int,
    t: jnp.ndarray,
    st: AntsState,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Pick a ready slot per ant, looking at the first ``w`` slots only (every ant's candidates
    are there). Returns (slot int32[A], cycle int32[A], issued int32[A])."""
    K = st.ready.shape[0] - 1
    slots = jnp.arange(w, dtype=jnp.int32)[:, None]
    cand = st.ready[:w]  # [w, A]
    valid = slots < st.count[None, :]

    # Ready vs semi-ready; with nothing ready the ant stalls to the first earliest cycle.
    e = st.ready_e[:w]
    ready_now = valid & (e <= st.cycle)
    min_e = jnp.where(valid, e, BIG).min(axis=0)
    stall = valid.any(axis=0) & ~ready_now.any(axis=0)  # nothing ready (and not done)
    cycle = jnp.where(stall, jnp.maximum(st.cycle, min_e), st.cycle)
    issued = jnp.where(cycle != st.cycle, 0, st.issued)
    ready = valid & (e <= cycle)
    semi = valid & ~ready
    eligible = ready | (semi & seeds.may_stall)

    # Register effect: RP after issuing each candidate, per file; whether it raises RP.
    kill = st.ready_kill[:, :w]  # [F, w, A]
    born = st.ready_def[:, :w]
    after = st.live_w[:, None, :] + born - kill + prep.live_through[:, None, None]
    over = (after > inp.rp_limit[:, None, None]).any(axis=0)  # would break the RP target
    raises = born.sum(axis=0) > kill.sum(axis=0)

    # Score = tau[last, j] * eta[j], eta = 1 + key in [1, 2], damped as in the spec.
    wl = jnp.where(inp.timed, params.weight_last_use, params.weight_last_use_rp)
    ws = params.weight_cp + params.weight_successors
    luc = kill.sum(axis=0).astype(jnp.float32)
    luc = luc / jnp.maximum(luc.max(axis=0), 1.0)
    key = (st.ready_key[:w] * ws + wl * luc) / jnp.maximum(ws + wl, 1e-6)
    score = inp.tau[st.last[None, :], cand] * (1.0 + key)
    calm_exists = (eligible & ~raises).any(axis=0)
    score = jnp.where(raises & calm_exists, score * params.rp_damping, score)
    safe_exists = (eligible & ~over).any(axis=0)
    score = jnp.where(over & safe_exists, score * params.overflow_damping, score)
    g = inp.stall_budget
    wait = (e - cycle).astype(jnp.float32)
    taken = st.stalls.astype(jnp.float32)
    damp_wait = jnp.where(wait < g, (g - 2 * wait) / g, 1.0 / g)
    damp_taken = jnp.where(taken < g, (g - 2 * taken) / g, 1.0 / g)
    score = jnp.where(semi, score * damp_wait * damp_taken, score)
    score = jnp.where(eligible, jnp.maximum(score, params.score_floor), 0.0)

    # Decide: exploit (argmax) with probability q0, else a roulette over the scores. The
    # roulette runs on integer weights (16 bits relative to the best score, at least 1), so
    # prefix sums are exact and a pick never depends on how many slots were looked at.
    exploit = uniform(seeds.coin, t) < inp.q0
    best = score.max(axis=0)
    weight = jnp.where(
        eligible, 1 + (score / jnp.maximum(best, 1e-30)[None, :] * 65535.0).astype(jnp.int32), 0
    )
    csum = lax.associative_scan(jnp.add, weight, axis=0)
    r = (uniform(seeds.seed, t) * csum[-1].astype(jnp.float32)).astype(jnp.int32)
    last_eligible = jnp.where(eligible, slots, 0).max(axis=0)
    pick_roulette = jnp.minimum((csum <= r[None, :]).sum(axis=0), last_eligible)
    # argmax as max + first match: XLA:CPU vectorises plain reductions, not (value, index) ones.
    pick_best = jnp.where((score == best[None, :]) & eligible, slots, K).min(axis=0)
    active = st.count > 0
    pick = jnp.where(active, jnp.where(exploit, pick_best, pick_roulette), K)
    return pick.astype(jnp.int32), cycle, issued


def ants_step(
    t: jnp.ndarray,
    st: AntsState,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
    *,
    issue_width: int,
    batch_axis: str | None = None,
) -> AntsState:
    """Every ant schedules one instruction (or nothing once its region is done).

    The whole step runs inside a `lax.switch` over `slot_widths` (state in, state out, so the
    buffers update in place), on the largest ready count. Under a `vmap` over regions named
    ``batch_axis`` that count is maximised over regions too, so the switch index stays unbatched
    and only one branch runs.
    """
    K = st.ready.shape[0] - 1
    widths = slot_widths(K)
    most = st.count.max()
    if batch_axis is not None:
        most = lax.pmax(most, batch_axis)
    branch = jnp.searchsorted(jnp.array(widths, jnp.int32), most).astype(jnp.int32)
    branch = jnp.minimum(branch, len(widths) - 1)
    step = partial(
        _step_at_width, t=t, prep=prep, inp=inp, params=params, seeds=seeds, issue_width=issue_width
    )
    return lax.switch(branch, [partial(step, w) for w in widths], st)


def _step_at_width(
    w: int,
    st: AntsState,
    *,
    t: jnp.ndarray,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
    issue_width: int,
) -> AntsState:
    """`ants_step` with the decision over the first ``w`` ready slots."""
    N = prep.succ.shape[0] - 1
    R = prep.reg_wf.shape[0] - 1
    K = st.ready.shape[0] - 1
    ant = jnp.arange(st.count.shape[0], dtype=jnp.int32)[None, :]
    a0 = ant[0]
    pick, cycle, issued = _decide(w, t, st, prep, inp, params, seeds)
    active = st.count > 0
    # The decision and every read of the old state happen behind optimization barriers; the
    # rest of the step only scatters into state arrays. XLA then updates them in place instead
    # of copying whole arrays that are read and written in the same step.
    pick, cycle, issued, j, e_pick = lax.optimization_barrier(
        (pick, cycle, issued, st.ready[pick, a0], st.ready_e[pick, a0])
    )  # j: [A], N when inactive

    # Issue cycle (in the RP pass every earliest cycle is 0, so c_j = cycle).
    e_j = jnp.where(active, e_pick, 0)
    c_j = jnp.maximum(cycle, e_j)
    was_semi = active & (e_j > cycle)
    issued = jnp.where(c_j != cycle, 0, issued) + active.astype(jnp.int32)
    full = issued >= issue_width
    next_cycle = jnp.where(full, c_j + 1, c_j)
    next_issued = jnp.where(full, 0, issued)
    stalls = st.stalls + jnp.where(was_semi, c_j - cycle, 0)

    last_slot = jnp.where(active, st.count - 1, K)
    s = prep.succ[j].T  # [D, A]
    u = prep.uses[j].T  # [U, A]
    d = prep.defs[j].T  # [V, A]
    old = lax.optimization_barrier(
        (
            st.ready[last_slot, a0],
            st.ready_e[last_slot, a0],
            st.ready_key[last_slot, a0],
            st.ready_def[:, last_slot, a0],
            st.ready_kill[:, last_slot, a0],
            st.kill[:, s, ant],
            st.remaining[u, ant],
            st.remaining[d, ant],
            st.users_xor[u, ant],
            st.users_xor[d, ant],
            st.live[u, ant],
            st.live[d, ant],
        )
    )
    (
        moved,
        moved_e,
        moved_key,
        moved_def,
        moved_kill,
        kill_s,
        rem_u0,
        rem_d0,
        xor_u0,
        xor_d0,
        live_u,
        live_d0,
    ) = old

    # Remove j from the ready list: the last candidate moves into its slot.
    def swap_remove(arr: jnp.ndarray, moved_val: jnp.ndarray, fill) -> jnp.ndarray:
        if arr.ndim == 3:
            return arr.at[:, pick, a0].set(moved_val).at[:, last_slot, a0].set(fill)
        return arr.at[pick, a0].set(moved_val).at[last_slot, a0].set(fill)

    ready_ids = swap_remove(st.ready, moved, N)
    ready_e = swap_remove(st.ready_e, moved_e, 0)
    ready_key = swap_remove(st.ready_key, moved_key, 0.0)
    ready_def = swap_remove(st.ready_def, moved_def, 0)
    ready_kill = swap_remove(st.ready_kill, moved_kill, 0)
    slot_of = st.slot_of.at[moved, a0].set(pick).at[j, a0].set(K)
    count = st.count - active.astype(jnp.int32)

    # Release successors; newly free ones enter the ready list.
    lat = jnp.where(inp.timed, prep.succ_lat[j].T, 0)
    preds_left = st.preds_left.at[s, ant].add(-1)
    new = (preds_left[s, ant] == 0) & (s != N)
    earliest = st.earliest.at[s, ant].max(c_j[None, :] + lat)
    pos = jnp.minimum(jnp.where(new, count[None, :] + jnp.cumsum(new, axis=0) - 1, K), K)
    s_new = jnp.where(new, s, N)
    ready_ids = ready_ids.at[pos, ant].set(s_new).at[K].set(N)
    ready_e = ready_e.at[pos, ant].set(earliest[s, ant])
    key_table = jnp.where(inp.timed, prep.key_ilp, prep.key_rp)
    ready_key = ready_key.at[pos, ant].set(key_table[s])
    ready_def = ready_def.at[:, pos, ant].set(prep.def_wf[:, s])
    ready_kill = ready_kill.at[:, pos, ant].set(kill_s)
    slot_of = slot_of.at[s_new, ant].set(pos).at[N].set(K)
    count = count + new.sum(axis=0).astype(jnp.int32)

    # Registers: uses first (last uses die), then defs are born, peak, then dead defs die.
    # A register both used and defined by j sees the effect of the use on its def.
    same = (d[:, None, :] == u[None, :, :]) & (d[:, None, :] != R)  # [V, U, A]
    rem_u = rem_u0 - 1
    out_u = prep.reg_live_out[u]
    die = (rem_u == 0) & live_u & ~out_u
    rem_d = rem_d0 - same.any(axis=1)
    live_d = live_d0 & ~(same & die[None]).any(axis=1)
    xor_u = xor_u0 ^ j[None, :]
    xor_d = jnp.where(same.any(axis=1), xor_d0 ^ j[None, :], xor_d0)
    born = ~live_d & (d != R)
    dead_def = (rem_d == 0) & (live_d | born) & ~prep.reg_live_out[d]
    remaining = st.remaining.at[u, ant].set(rem_u)
    users_xor = st.users_xor.at[u, ant].set(xor_u)
    live = st.live.at[u, ant].set(live_u & ~die).at[d, ant].set((live_d | born) & ~dead_def)
    live_w = st.live_w - _per_file(prep.reg_wf, u, die) + _per_file(prep.reg_wf, d, born)
    peak = jnp.maximum(st.peak, live_w + prep.live_through[:, None])
    live_w = live_w - _per_file(prep.reg_wf, d, dead_def)

    # Last-use bookkeeping: a live register with one use left is killed by that last user;
    # its kill width grows, in its ready slot too when it is already a candidate.
    k_user = jnp.concatenate(
        [
            jnp.where((rem_u == 1) & live_u & ~out_u, xor_u, N),
            jnp.where((rem_d == 1) & born & ~prep.reg_live_out[d], xor_d, N),
        ]
    )  # [U + V, A]
    k_width = jnp.concatenate([prep.reg_wf[u], prep.reg_wf[d]]).transpose(2, 0, 1)
    kill = st.kill.at[:, k_user, ant].add(k_width).at[:, N].set(0)
    ready_kill = ready_kill.at[:, slot_of[k_user, ant], ant].add(k_width).at[:, K].set(0)

    dead = st.dead | (peak > inp.rp_limit[:, None]).any(axis=0)
    return AntsState(
        ready=ready_ids,
        ready_e=ready_e,
        ready_key=ready_key,
        ready_def=ready_def,
        ready_kill=ready_kill,
        count=count,
        slot_of=slot_of,
        preds_left=preds_left,
        earliest=earliest,
        kill=kill,
        remaining=remaining,
        users_xor=users_xor,
        live=live,
        live_w=live_w,
        peak=peak,
        last=jnp.where(active, j, st.last),
        cycle=next_cycle,
        issued=next_issued,
        stalls=stalls,
        dead=dead,
        order=st.order.at[t].set(j),
    )


def make_seeds(
    key: jax.Array,
    params: ColonyParams,
    *,
    wavefronts: int,
    wavefront_size: int,
    uniform_exploration: jnp.ndarray | bool,
) -> AntSeeds:
    """Per-ant seeds for one iteration (three small draws from ``key``)."""
    ants = wavefronts * wavefront_size
    k_ant, k_coin, k_wave = jax.random.split(key, 3)
    wave = jnp.arange(ants) // wavefront_size
    coin = jnp.where(
        uniform_exploration,
        jax.random.bits(k_wave, (wavefronts,), jnp.uint32)[wave],
        jax.random.bits(k_coin, (ants,), jnp.uint32),
    )
    n_stall_waves = jnp.floor(params.stall_fraction * wavefronts + 0.5).astype(jnp.int32)
    return AntSeeds(
        seed=jax.random.bits(k_ant, (ants,), jnp.uint32), coin=coin, may_stall=wave < n_stall_waves
    )


def construct_ants(
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    key: jax.Array,
    num_steps: jnp.ndarray,
    *,
    wavefronts: int,
    wavefront_size: int,
    uniform_exploration: jnp.ndarray | bool,
    issue_width: int,
    batch_axis: str | None = None,
) -> AntResults:
    """All ants of one region build a schedule each.

    ``num_steps`` must not be batched (pass the batch's largest n): the step loop then stays a
    plain loop, and steps past a region's own n are no-ops through the sentinels. An ant whose
    peak breaks ``inp.rp_limit`` is dead.
    """
    seeds = make_seeds(
        key,
        params,
        wavefronts=wavefronts,
        wavefront_size=wavefront_size,
        uniform_exploration=uniform_exploration,
    )
    ants = wavefronts * wavefront_size

    def body(t: jnp.ndarray, st: AntsState) -> AntsState:
        return ants_step(
            t, st, prep, inp, params, seeds, issue_width=issue_width, batch_axis=batch_axis
        )

    st = lax.fori_loop(0, num_steps, body, init_ants(prep, ants, inp.timed))
    length = jnp.where(st.issued > 0, st.cycle + 1, st.cycle)
    return AntResults(
        order=st.order.T, peak=st.peak.T, length=length, stalls=st.stalls, dead=st.dead
    )
