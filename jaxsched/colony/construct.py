"""All ants of a region building one schedule each: fixed-shape state, one `lax` step per
instruction.

Data layout (chosen for XLA:CPU and GPUs alike, measured in ``benchmarks/colony.py``):
  * The ant axis is explicit and **minor** (last): every per-ant array is ``[..., A]``. Scoring,
    prefix sums and reductions over ready slots then run as elementwise operations over rows of
    A ants, which vectorise; per-ant indexing is a gather/scatter with indices ``(idx, ant)``.
  * The ready list is compact: ``K + 1`` slots (K = padded ready-list bound; slot K is a dummy)
    holding candidate ids, so a step costs O(K + D + U + V) per ant, not O(N). The earliest cycle
    of a candidate is final when it enters the list and is stored in its slot.
  * Every ant schedules exactly one instruction per step in both passes. In the ILP pass stalls
    are not steps: choosing a semi-ready candidate (or having none ready) moves the ant's cycle
    forward to the candidate's earliest cycle. So all ants take the same number of steps and the
    step loop has an unbatched trip count (a plain loop, no lane freezing).
  * Sentinels index dummy slots (instruction ``N``, register ``R``, ready slot ``K``), so padding
    and inactive steps are harmless writes, not selects.
  * The registers a candidate would kill now (its "last uses") are kept per instruction and
    updated incrementally: each register keeps the XOR of the ids of its unscheduled users, so when
    one use remains the XOR *is* that user, found in O(1).
  * Randomness: two 32-bit hashes per ant-step of a per-ant seed (drawn once per iteration from
    the caller's key with `jax.random.bits`) and the step number; no key splitting in the loop.
    The pass-1 exploration coin hashes a per-wavefront seed, so all ants of a wavefront share it.
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
    def_width: jnp.ndarray  # int32[N + 1]: total width of the registers an instruction defines
    reg_wf: jnp.ndarray  # int32[R + 1, F]: width of register r in its file's column, else 0
    reg_width: jnp.ndarray  # int32[R + 1]
    reg_num_uses: jnp.ndarray  # int32[R + 1]
    reg_users_xor: jnp.ndarray  # int32[R + 1]: XOR of the ids of the register's users
    reg_live_in: jnp.ndarray  # bool[R + 1]
    reg_live_out: jnp.ndarray  # bool[R + 1]: dummy True (never killed)
    live_through: jnp.ndarray  # int32[F]
    key_rp: jnp.ndarray  # f32[N + 1]: static heuristic key in [0, 1], RP pass (unit latencies)
    key_ilp: jnp.ndarray  # f32[N + 1]: static heuristic key in [0, 1], ILP pass
    init_ready: jnp.ndarray  # int32[K + 1]: initial candidates (roots), sentinel N
    init_count: jnp.ndarray  # int32[]: number of roots
    init_kill: jnp.ndarray  # int32[N + 1]: width each instruction would kill at the start


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
    def_width = reg_width[defs].sum(axis=1)
    ids = jnp.broadcast_to(jnp.arange(N + 1, dtype=jnp.int32)[:, None], uses.shape)
    users_xor = jnp.zeros(R + 1, jnp.int32)
    # XOR-accumulate user ids per register (scatter of XOR is not a primitive: use bit planes).
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
    slot = jnp.where(roots, jnp.cumsum(roots) - 1, K)
    init_ready = (
        jnp.full(K + 1, N, jnp.int32).at[jnp.minimum(slot, K)].set(jnp.arange(N, dtype=jnp.int32))
    )
    init_ready = init_ready.at[K].set(N)

    # Initially a register with one use that is live (live-in) and not live-out dies at it.
    kills = (reg_num_uses == 1) & reg_live_in & ~reg_live_out
    init_kill = (
        jnp.zeros(N + 1, jnp.int32)
        .at[jnp.where(kills, users_xor, N)]
        .add(jnp.where(kills, reg_width, 0))
    )
    return Prepared(
        n=dev.n,
        succ=row_pad(dev.succ, N),
        succ_lat=row_pad(dev.succ_lat, 0),
        num_preds=extend(dev.num_preds, BIG),
        uses=uses,
        defs=defs,
        def_width=def_width,
        reg_wf=reg_wf,
        reg_width=reg_width,
        reg_num_uses=reg_num_uses,
        reg_users_xor=users_xor,
        reg_live_in=reg_live_in,
        reg_live_out=reg_live_out,
        live_through=dev.live_through,
        key_rp=extend(key_rp, 0.0),
        key_ilp=extend(key_ilp, 0.0),
        init_ready=init_ready,
        init_count=roots.sum().astype(jnp.int32),
        init_kill=init_kill.at[N].set(0),
    )


class AntsState(NamedTuple):
    """Construction state of A ants (ant axis last). Slot arrays ``ready*`` are a structure of
    arrays over the compact ready list; slot K is a dummy."""

    ready: jnp.ndarray  # int32[K + 1, A]: candidate ids in slots [0, count), sentinel N after
    ready_e: jnp.ndarray  # int32[K + 1, A]: earliest cycle of each slot's candidate
    ready_key: jnp.ndarray  # f32[K + 1, A]: static heuristic key of each slot's candidate
    ready_defw: jnp.ndarray  # int32[K + 1, A]: width the candidate defines
    ready_kill: jnp.ndarray  # int32[K + 1, A]: width the candidate would kill if issued now
    count: jnp.ndarray  # int32[A]: number of candidates
    slot_of: jnp.ndarray  # int32[N + 1, A]: ready slot of an instruction (K: not in the list)
    preds_left: jnp.ndarray  # int32[N + 1, A]: unscheduled predecessors
    earliest: jnp.ndarray  # int32[N + 1, A]: earliest issue cycle (ILP pass)
    kill: jnp.ndarray  # int32[N + 1, A]: width an instruction would kill if issued now
    remaining: jnp.ndarray  # int32[R + 1, A]: uses not yet issued per register
    users_xor: jnp.ndarray  # int32[R + 1, A]: XOR of the ids of unscheduled users
    live: jnp.ndarray  # bool[R + 1, A]: register live now
    live_w: jnp.ndarray  # int32[F, A]: live width per file (without live-through)
    peak: jnp.ndarray  # int32[F, A]: peak RP per file (with live-through)
    last: jnp.ndarray  # int32[A]: last scheduled instruction (N: none yet)
    cycle: jnp.ndarray  # int32[A]: next cycle an instruction may issue in (ILP pass)
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
    rp_target: jnp.ndarray  # int32[]: an ant whose RP cost exceeds this dies
    stall_budget: jnp.ndarray  # f32[]: G, the stall count of the best schedule so far (>= 1)
    lut: jnp.ndarray  # int32[F, T]: occupancy lookup
    target_occupancy: jnp.ndarray  # int32[]


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


def init_ants(prep: Prepared, ants: int, timed: bool) -> AntsState:
    N = prep.succ.shape[0] - 1
    K = prep.init_ready.shape[0] - 1

    def rep(x: jnp.ndarray) -> jnp.ndarray:
        return jnp.broadcast_to(x[..., None], (*x.shape, ants))

    live_w = (prep.reg_wf * prep.reg_live_in[:, None]).sum(axis=0).astype(jnp.int32)
    zeros = jnp.zeros(ants, jnp.int32)
    ids = prep.init_ready
    key = prep.key_ilp if timed else prep.key_rp
    slot_of = jnp.full(N + 1, K, jnp.int32).at[ids].set(jnp.arange(K + 1, dtype=jnp.int32))
    return AntsState(
        ready=rep(ids),
        ready_e=jnp.zeros((K + 1, ants), jnp.int32),
        ready_key=rep(key[ids]),
        ready_defw=rep(prep.def_width[ids]),
        ready_kill=rep(prep.init_kill[ids]),
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
    """Static widths the decision step may run at: powers of two from 8 up to ``slots``."""
    out, w = [], 8
    while w < slots:
        out.append(w)
        w *= 2
    return (*out, slots)


def _decide(
    w: int,
    t: jnp.ndarray,
    st: AntsState,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
    *,
    timed: bool,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Pick a ready slot per ant, looking at the first ``w`` slots only (all candidates of
    every ant are there). Returns (slot int32[A], cycle int32[A], issued int32[A])."""
    K = st.ready.shape[0] - 1
    slots = jnp.arange(w, dtype=jnp.int32)[:, None]
    cand = st.ready[:w]  # [w, A]
    valid = slots < st.count[None, :]

    # Ready vs semi-ready (ILP pass); a necessary stall jumps to the first earliest cycle.
    if timed:
        e = st.ready_e[:w]
        ready_now = valid & (e <= st.cycle)
        min_e = jnp.where(valid, e, BIG).min(axis=0)
        cycle = jnp.where(ready_now.any(axis=0), st.cycle, jnp.maximum(st.cycle, min_e))
        issued = jnp.where(cycle != st.cycle, 0, st.issued)
        ready = valid & (e <= cycle)
        semi = valid & ~ready
        eligible = ready | (semi & seeds.may_stall)
    else:
        cycle, issued = st.cycle, st.issued
        eligible = valid

    # Score = tau[last, j] * eta[j] with eta = 1 + key in [1, 2], damped as in the spec.
    kill = st.ready_kill[:w]
    raises = st.ready_defw[:w] > kill
    wl = params.weight_last_use
    ws = params.weight_cp + params.weight_successors
    luc = kill.astype(jnp.float32)
    luc = luc / jnp.maximum(luc.max(axis=0), 1.0)
    key = (st.ready_key[:w] * ws + wl * luc) / jnp.maximum(ws + wl, 1e-6)
    score = inp.tau[st.last[None, :], cand] * (1.0 + key)
    calm_exists = (eligible & ~raises).any(axis=0)
    score = jnp.where(raises & calm_exists, score * params.rp_damping, score)
    if timed:
        g = inp.stall_budget
        wait = (e - cycle).astype(jnp.float32)
        taken = st.stalls.astype(jnp.float32)
        damp_wait = jnp.where(wait < g, (g - 2 * wait) / g, 1.0 / g)
        damp_taken = jnp.where(taken < g, (g - 2 * taken) / g, 1.0 / g)
        score = jnp.where(semi, score * damp_wait * damp_taken, score)
    score = jnp.where(eligible, jnp.maximum(score, params.score_floor), 0.0)

    # Decide: exploit (argmax) with probability q0, else a roulette over the scores.
    exploit = uniform(seeds.coin, t) < inp.q0
    csum = lax.associative_scan(jnp.add, score, axis=0)
    r = uniform(seeds.seed, t) * csum[-1]
    last_eligible = jnp.where(eligible, slots, 0).max(axis=0)
    pick_roulette = jnp.minimum((csum <= r[None, :]).sum(axis=0), last_eligible)
    # argmax as max + first match: XLA:CPU vectorises plain reductions, not (value, index) ones.
    best = score.max(axis=0)
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
    timed: bool,
    issue_width: int,
    batch_axis: str | None = None,
) -> AntsState:
    """Every ant schedules one instruction (or nothing once its region is done).

    The decision looks only at the first ``w`` ready slots, ``w`` the smallest of
    `slot_widths` holding every ant's candidates: a `lax.switch` on the largest count over the
    whole step (state in, state out, so buffers update in place). Under a `vmap` over regions
    named ``batch_axis`` the count is maximised over regions too, so the switch index stays
    unbatched and only one branch runs.
    """
    K = st.ready.shape[0] - 1
    widths = slot_widths(K)
    most = st.count.max()
    if batch_axis is not None:
        most = lax.pmax(most, batch_axis)
    branch = jnp.searchsorted(jnp.array(widths, jnp.int32), most).astype(jnp.int32)
    branch = jnp.minimum(branch, len(widths) - 1)
    branches = [
        partial(
            _step_at_width,
            w,
            t,
            prep=prep,
            inp=inp,
            params=params,
            seeds=seeds,
            timed=timed,
            issue_width=issue_width,
        )
        for w in widths
    ]
    return lax.switch(branch, branches, st)


def _step_at_width(
    w: int,
    t: jnp.ndarray,
    st: AntsState,
    *,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
    timed: bool,
    issue_width: int,
) -> AntsState:
    """`ants_step` with the decision over the first ``w`` ready slots."""
    N = prep.succ.shape[0] - 1
    R = prep.reg_width.shape[0] - 1
    K = st.ready.shape[0] - 1
    A = st.count.shape[0]
    ant = jnp.arange(A, dtype=jnp.int32)[None, :]
    a0 = ant[0]
    pick, cycle, issued = _decide(w, t, st, inp, params, seeds, timed=timed)
    active = st.count > 0
    j = st.ready[pick, a0]  # [A], N when inactive

    # Issue cycle.
    if timed:
        e_j = st.ready_e[pick, a0]
        c_j = jnp.maximum(cycle, e_j)
        was_semi = active & (e_j > cycle)
        issued = jnp.where(c_j != cycle, 0, issued) + active.astype(jnp.int32)
        full = issued >= issue_width
        next_cycle = jnp.where(full, c_j + 1, c_j)
        next_issued = jnp.where(full, 0, issued)
        stalls = st.stalls + jnp.where(was_semi, c_j - cycle, 0)
    else:
        c_j = jnp.broadcast_to(t, (A,))
        next_cycle, next_issued, stalls = cycle, issued, st.stalls

    # Remove j from the ready list: the last candidate moves into its slot.
    last_slot = jnp.where(active, st.count - 1, K)

    def swap_remove(arr: jnp.ndarray, fill) -> jnp.ndarray:
        moved_val = arr[last_slot, a0]
        return arr.at[pick, a0].set(moved_val).at[last_slot, a0].set(fill)

    moved = st.ready[last_slot, a0]
    ready_ids = swap_remove(st.ready, N)
    ready_e = swap_remove(st.ready_e, 0) if timed else st.ready_e
    ready_key = swap_remove(st.ready_key, 0.0)
    ready_defw = swap_remove(st.ready_defw, 0)
    ready_kill = swap_remove(st.ready_kill, 0)
    slot_of = st.slot_of.at[moved, a0].set(pick).at[j, a0].set(K)
    count = st.count - active.astype(jnp.int32)

    # Release successors; newly free ones enter the ready list.
    s = prep.succ[j].T  # [D, A]
    lat = prep.succ_lat[j].T
    preds_left = st.preds_left.at[s, ant].add(-1)
    new = (preds_left[s, ant] == 0) & (s != N)
    earliest = st.earliest.at[s, ant].max(c_j[None, :] + lat) if timed else st.earliest
    pos = jnp.minimum(jnp.where(new, count[None, :] + jnp.cumsum(new, axis=0) - 1, K), K)
    ready_ids = ready_ids.at[pos, ant].set(jnp.where(new, s, N)).at[K].set(N)
    if timed:
        ready_e = ready_e.at[pos, ant].set(earliest[s, ant])
    key_table = prep.key_ilp if timed else prep.key_rp
    ready_key = ready_key.at[pos, ant].set(key_table[s])
    ready_defw = ready_defw.at[pos, ant].set(prep.def_width[s])
    ready_kill = ready_kill.at[pos, ant].set(st.kill[s, ant])
    slot_of = slot_of.at[jnp.where(new, s, N), ant].set(pos).at[N].set(K)
    count = count + new.sum(axis=0).astype(jnp.int32)

    # Registers: uses first (last uses die), then defs are born, peak, then dead defs die.
    u = prep.uses[j].T  # [U, A]
    remaining = st.remaining.at[u, ant].add(-1)
    users_xor = st.users_xor.at[u, ant].set(st.users_xor[u, ant] ^ j[None, :])
    live_u = st.live[u, ant]
    rem_u = remaining[u, ant]
    out_u = prep.reg_live_out[u]
    die = (rem_u == 0) & live_u & ~out_u
    live = st.live.at[u, ant].set(live_u & ~die)
    live_w = st.live_w - _per_file(prep.reg_wf, u, die)
    d = prep.defs[j].T  # [V, A]
    live_d = live[d, ant]
    born = ~live_d & (d != R)
    live = live.at[d, ant].set(live_d | born)
    live_w = live_w + _per_file(prep.reg_wf, d, born)
    peak = jnp.maximum(st.peak, live_w + prep.live_through[:, None])
    dead_def = (remaining[d, ant] == 0) & (live_d | born) & ~prep.reg_live_out[d]
    live = live.at[d, ant].set((live_d | born) & ~dead_def)
    live_w = live_w - _per_file(prep.reg_wf, d, dead_def)

    # Last-use bookkeeping: a live register with one use left is killed by that last user;
    # its kill width grows, in the ready slot too when it is already a candidate.
    k_user = jnp.concatenate(
        [
            jnp.where((rem_u == 1) & live_u & ~out_u, users_xor[u, ant], N),
            jnp.where(
                (remaining[d, ant] == 1) & born & ~prep.reg_live_out[d], users_xor[d, ant], N
            ),
        ]
    )
    k_width = jnp.concatenate([prep.reg_width[u], prep.reg_width[d]])
    kill = st.kill.at[k_user, ant].add(k_width).at[N].set(0)
    ready_kill = ready_kill.at[slot_of[k_user, ant], ant].add(k_width).at[K].set(0)

    dead = st.dead | (rp_cost(peak, inp.lut, inp.target_occupancy) > inp.rp_target)
    return AntsState(
        ready=ready_ids,
        ready_e=ready_e,
        ready_key=ready_key,
        ready_defw=ready_defw,
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
    uniform_exploration: bool,
) -> AntSeeds:
    """Per-ant seeds for one iteration (3 small draws from ``key``)."""
    ants = wavefronts * wavefront_size
    k_ant, k_coin = jax.random.split(key)
    wave = jnp.arange(ants) // wavefront_size
    if uniform_exploration:
        coin = jax.random.bits(k_coin, (wavefronts,), jnp.uint32)[wave]
    else:
        coin = jax.random.bits(k_coin, (ants,), jnp.uint32)
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
    timed: bool,
    uniform_exploration: bool,
    issue_width: int,
    batch_axis: str | None = None,
) -> AntResults:
    """All ants of one region build a schedule each.

    ``num_steps`` must not be batched (pass the batch's largest n): the step loop then stays a
    plain loop, and steps past a region's own n are no-ops through the sentinels.
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
            t,
            st,
            prep,
            inp,
            params,
            seeds,
            timed=timed,
            issue_width=issue_width,
            batch_axis=batch_axis,
        )

    st = lax.fori_loop(0, num_steps, body, init_ants(prep, ants, timed))
    if timed:
        length = jnp.where(st.issued > 0, st.cycle + 1, st.cycle)
    else:
        length = jnp.broadcast_to(prep.n, (ants,))
    return AntResults(
        order=st.order.T, peak=st.peak.T, length=length, stalls=st.stalls, dead=st.dead
    )
