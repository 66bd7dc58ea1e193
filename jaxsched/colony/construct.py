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

from jaxsched.colony.antshard import local_ants
from jaxsched.colony.params import ColonyParams
from jaxsched.problem.padded import DeviceRegion

BIG = 2**30


class Prepared(NamedTuple):
    """A region's constant arrays for construction, with dummy rows for the sentinels.

    Independent of the parameters (built once per region). Shapes: N instructions (bucket),
    K ready slots, D successors, U uses, V defs, R registers, F register files.
    """

    n: jax.Array  # int32[]: real instruction count
    succ: jax.Array  # int32[N + 1, D]: successors, sentinel N; row N all sentinels
    succ_lat: jax.Array  # int32[N + 1, D]
    num_preds: jax.Array  # int32[N + 1]: in-degree (dummy: BIG, never ready)
    uses: jax.Array  # int32[N + 1, U]: sentinel R
    defs: jax.Array  # int32[N + 1, V]: sentinel R
    def_wf: jax.Array  # int32[F, N + 1]: width an instruction defines, per file
    reg_wf: jax.Array  # int32[R + 1, F]: width of register r in its file's column, else 0
    reg_num_uses: jax.Array  # int32[R + 1]
    reg_users_xor: jax.Array  # int32[R + 1]: XOR of the ids of the register's users
    reg_live_in: jax.Array  # bool[R + 1]
    reg_live_out: jax.Array  # bool[R + 1]: dummy True (never killed)
    live_through: jax.Array  # int32[F]
    cp: jax.Array  # f32[N + 1]: latency-weighted critical path / its max, in [0, 1]; dummy 0
    cp_unit: jax.Array  # f32[N + 1]: unit-latency critical path / its max; dummy 0
    successors: jax.Array  # f32[N + 1]: successor count / its max; dummy 0
    init_ready: jax.Array  # int32[K + 1]: initial candidates (roots), sentinel N
    init_count: jax.Array  # int32[]: number of roots
    init_kill: jax.Array  # int32[F, N + 1]: width each instruction would kill at the start


def _row_pad(a: jax.Array, fill) -> jax.Array:
    """``a`` with one extra leading-axis row of ``fill`` (the sentinel's dummy row)."""
    a = jnp.asarray(a)
    return jnp.concatenate([a, jnp.full((1, *a.shape[1:]), fill, a.dtype)], axis=0)


def _users_xor(uses: jax.Array, num_regs: int) -> jax.Array:
    """int32[R + 1]: XOR of the ids of each register's users (``uses`` int32[N + 1, U]).

    There is no XOR scatter primitive: add the id bit planes and keep each plane's parity.
    """
    ids = jnp.broadcast_to(jnp.arange(uses.shape[0], dtype=jnp.int32)[:, None], uses.shape)
    bits = (ids[..., None] >> jnp.arange(31)) & 1  # [N + 1, U, 31]
    plane = jnp.zeros((num_regs, 31), jnp.int32).at[uses].add(bits)
    return ((plane & 1) << jnp.arange(31)).sum(axis=1).astype(jnp.int32)


def _normalized(x: jax.Array) -> jax.Array:
    """f32[N + 1]: ``x`` (int[N]) divided by its maximum (at least 1), dummy 0 appended."""
    x = jnp.asarray(x).astype(jnp.float32)
    return _row_pad(x / jnp.maximum(x.max(), 1.0), 0.0)


def prepare(dev: DeviceRegion, ready_slots: int) -> Prepared:
    """Build the `Prepared` arrays of one region (jit-compatible; vmap over a batch)."""
    N = dev.valid.shape[0]
    R = dev.reg_width.shape[0]
    F = dev.live_through.shape[0]
    K = ready_slots
    reg_width = _row_pad(dev.reg_width, 0)
    reg_file = _row_pad(dev.reg_file, 0)
    reg_wf = jnp.where(reg_file[:, None] == jnp.arange(F)[None, :], reg_width[:, None], 0)
    uses = _row_pad(dev.uses, R)
    defs = _row_pad(dev.defs, R)
    users_xor = _users_xor(uses, R + 1)
    reg_live_out = _row_pad(dev.reg_live_out, True)
    reg_live_in = _row_pad(dev.reg_live_in, False)
    reg_num_uses = _row_pad(dev.reg_num_uses, 0)

    roots = dev.valid & (dev.num_preds == 0)
    slot = jnp.minimum(jnp.where(roots, jnp.cumsum(roots) - 1, K), K)
    init_ready = jnp.full(K + 1, N, jnp.int32).at[slot].set(jnp.arange(N, dtype=jnp.int32))
    # At the start a live-in register with one use (not live-out) dies at that use.
    kills = (reg_num_uses == 1) & reg_live_in & ~reg_live_out
    target = jnp.where(kills, users_xor, N)
    init_kill = jnp.zeros((F, N + 1), jnp.int32).at[:, target].add((reg_wf * kills[:, None]).T)
    return Prepared(
        n=jnp.asarray(dev.n, jnp.int32),
        succ=_row_pad(dev.succ, N),
        succ_lat=_row_pad(dev.succ_lat, 0),
        num_preds=_row_pad(dev.num_preds, BIG),
        uses=uses,
        defs=defs,
        def_wf=reg_wf[defs].sum(axis=1).T,
        reg_wf=reg_wf,
        reg_num_uses=reg_num_uses,
        reg_users_xor=users_xor,
        reg_live_in=reg_live_in,
        reg_live_out=reg_live_out,
        live_through=jnp.asarray(dev.live_through, jnp.int32),
        cp=_normalized(dev.cp),
        cp_unit=_normalized(dev.cp_unit),
        successors=_normalized(dev.num_succs),
        init_ready=init_ready.at[K].set(N),
        init_count=roots.sum().astype(jnp.int32),
        init_kill=init_kill.at[:, N].set(0),
    )


#: `ColonyParams` weights of the static features (`static_features`), in order.
STATIC_WEIGHTS = ("weight_cp", "weight_successors", "weight_latency", "weight_position")


def static_features(prep: Prepared, timed: jax.Array) -> tuple[jax.Array, ...]:
    """f32[N + 1] each, in [0, 1], dummy 0: critical path (latency-weighted in the ILP pass,
    unit in the RP pass), successor count, largest latency to a successor, and earliness in
    the input order (1 for the first instruction, 0 for the last); maxima normalised to 1."""
    N = prep.succ.shape[0] - 1
    lat = prep.succ_lat.max(axis=1).astype(jnp.float32)
    idx = jnp.arange(N + 1, dtype=jnp.float32)
    early = 1.0 - idx / jnp.maximum(prep.n - 1, 1).astype(jnp.float32)
    return (
        jnp.where(timed, prep.cp, prep.cp_unit),
        prep.successors,
        lat / jnp.maximum(lat.max(), 1.0),
        jnp.where(idx < prep.n, early, 0.0),
    )


def static_weight_sum(params: ColonyParams) -> jax.Array:
    """f32[]: the sum of the magnitudes of the `STATIC_WEIGHTS` (pass parameters)."""
    total = jnp.abs(params.weight_cp)
    for name in STATIC_WEIGHTS[1:]:
        total = total + jnp.abs(getattr(params, name))
    return total


def static_key(prep: Prepared, params: ColonyParams, timed: jax.Array) -> jax.Array:
    """f32[N + 1]: the static part of the guiding heuristic's key: the weighted mean of
    `static_features` (weights `STATIC_WEIGHTS` of the pass parameters, `params.pass_params`,
    divided by the sum of their magnitudes), in [0, 1] for non-negative weights (default: the
    critical path alone)."""
    feats = static_features(prep, timed)
    num = params.weight_cp * feats[0]
    for name, f in zip(STATIC_WEIGHTS[1:], feats[1:], strict=True):
        num = num + getattr(params, name) * f
    return num / jnp.maximum(static_weight_sum(params), 1e-6)


class ReadyList(NamedTuple):
    """Compact ready lists of A ants (structure of arrays; slot K is a dummy)."""

    ids: jax.Array  # int32[K + 1, A]: candidate ids in slots [0, count), sentinel N after
    e: jax.Array  # int32[K + 1, A]: earliest cycle of each slot's candidate
    key: jax.Array  # f32[K + 1, A]: static heuristic key of each slot's candidate
    born: jax.Array  # int32[F, K + 1, A]: width the candidate defines, per file
    kill: jax.Array  # int32[F, K + 1, A]: width it would kill if issued now, per file
    count: jax.Array  # int32[A]: number of candidates
    slot_of: jax.Array  # int32[N + 1, A]: ready slot of an instruction (K: not in the list)


class AntsState(NamedTuple):
    """Construction state of A ants (ant axis last)."""

    ready: ReadyList
    preds_left: jax.Array  # int32[N + 1, A]: unscheduled predecessors
    earliest: jax.Array  # int32[N + 1, A]: earliest issue cycle (ILP pass; 0 in the RP pass)
    kill: jax.Array  # int32[F, N + 1, A]: width an instruction would kill if issued now
    remaining: jax.Array  # int32[R + 1, A]: uses not yet issued per register
    users_xor: jax.Array  # int32[R + 1, A]: XOR of the ids of unscheduled users
    live: jax.Array  # bool[R + 1, A]: register live now
    live_w: jax.Array  # int32[F, A]: live width per file (without live-through)
    peak: jax.Array  # int32[F, A]: peak RP per file (with live-through)
    last: jax.Array  # int32[A]: last scheduled instruction (N: none yet)
    cycle: jax.Array  # int32[A]: next cycle an instruction may issue in
    issued: jax.Array  # int32[A]: instructions already issued in ``cycle``
    stalls: jax.Array  # int32[A]: optional stall cycles taken (ILP pass)
    dead: jax.Array  # bool[A]: RP cost exceeded the target
    order: jax.Array  # int32[N, A]: instruction issued at each step, sentinel N


class AntResults(NamedTuple):
    order: jax.Array  # int32[A, N]: issue order, sentinel N after the region's n
    peak: jax.Array  # int32[A, F]
    length: jax.Array  # int32[A]: cycles (ILP pass) or n (RP pass)
    stalls: jax.Array  # int32[A]: optional stall cycles taken
    dead: jax.Array  # bool[A]


class StepInputs(NamedTuple):
    """Per-iteration inputs shared by all ants of a region."""

    tau: jax.Array  # f32|f16[N + 1, N + 1]: pheromone; row N = start, column N = dummy
    q0: jax.Array  # f32[]: exploitation probability
    rp_limit: jax.Array  # int32[F]: largest RP per file within the RP cost target (an ant
    #                        above it is dead)
    soft_limit: jax.Array  # int32[F]: the RP per file candidates are steered below (at most
    #                          rp_limit; lower after iterations in which every ant died)
    stall_budget: jax.Array  # f32[]: G, the stall count of the best schedule so far (>= 1)
    timed: jax.Array  # bool[]: ILP pass (latencies, stalls) vs RP pass
    key: jax.Array  # f32[N + 1]: static heuristic key (`static_key` of this pass)
    issue_width: jax.Array  # int32[]: instructions per cycle


class AntSeeds(NamedTuple):
    seed: jax.Array  # uint32[A]: roulette randomness
    coin: jax.Array  # uint32[A]: exploitation coin (equal within a wavefront when uniform)
    may_stall: jax.Array  # bool[A]: ant's wavefront may take optional stalls


def hash32(x: jax.Array) -> jax.Array:
    """A 32-bit integer mixer (lowbias32); uint32 -> uint32."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def uniform(seed: jax.Array, step: jax.Array) -> jax.Array:
    """f32 in [0, 1) from uint32 seeds and a step counter (elementwise)."""
    bits = hash32(seed + step.astype(jnp.uint32) * jnp.uint32(0x9E3779B9))
    return (bits >> 8).astype(jnp.float32) * jnp.float32(1.0 / (1 << 24))


def init_ants(prep: Prepared, ants: int, key: jax.Array) -> AntsState:
    """Every ant at the start: roots ready, live-in registers live. ``key`` f32[N + 1]."""
    N = prep.succ.shape[0] - 1
    K = prep.init_ready.shape[0] - 1

    def rep(x: jax.Array) -> jax.Array:
        return jnp.broadcast_to(x[..., None], (*x.shape, ants))

    live_w = (prep.reg_wf * prep.reg_live_in[:, None]).sum(axis=0).astype(jnp.int32)
    zeros = jnp.zeros(ants, jnp.int32)
    ids = prep.init_ready
    slot_of = jnp.full(N + 1, K, jnp.int32).at[ids].set(jnp.arange(K + 1, dtype=jnp.int32))
    ready = ReadyList(
        ids=rep(ids),
        e=jnp.zeros((K + 1, ants), jnp.int32),
        key=rep(key[ids]),
        born=rep(prep.def_wf[:, ids]),
        kill=rep(prep.init_kill[:, ids]),
        count=rep(prep.init_count),
        slot_of=rep(slot_of.at[N].set(K)),
    )
    return AntsState(
        ready=ready,
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


def slot_widths(slots: int) -> tuple[int, ...]:
    """Static widths a decision may look at: 8, 32, 128, ... (x4) below ``slots``, then
    ``slots``. Fewer widths compile faster; x4 wastes at most 4x on the slot work."""
    out, w = [], 8
    while w < slots:
        out.append(w)
        w *= 4
    return (*out, slots)


class Candidates(NamedTuple):
    """The first ``w`` ready slots of every ant at the decision (``[w, A]`` arrays)."""

    eligible: jax.Array  # bool[w, A]: may be chosen now
    semi: jax.Array  # bool[w, A]: semi-ready (choosing it means waiting)
    wait: jax.Array  # f32[w, A]: cycles to wait for it (<= 0 when ready)
    over: jax.Array  # bool[w, A]: issuing it would put the RP above the soft limit
    raises: jax.Array  # bool[w, A]: issuing it raises the RP (defines more than it kills)
    cycle: jax.Array  # int32[A]: the ant's cycle (after a necessary stall)
    issued: jax.Array  # int32[A]: instructions already issued in ``cycle``


class AntView(NamedTuple):
    """What a decision reads of each ant besides its ready slots (loaded values)."""

    cycle: jax.Array  # int32[A]: next cycle an instruction may issue in
    issued: jax.Array  # int32[A]: instructions already issued in ``cycle``
    stalls: jax.Array  # int32[A]: optional stall cycles taken
    live_w: jax.Array  # int32[F, A]: live width per file (without live-through)


#: `ReadyList` fields with a slot axis (second to last); a decision reads their first w slots.
SLOT_FIELDS = ("ids", "e", "key", "born", "kill")


def first_slots(ready: ReadyList, w: int) -> ReadyList:
    """The first ``w`` slots of every slot field (``slot_of`` dropped): a decision's view."""
    cut = {f: getattr(ready, f)[..., :w, :] for f in SLOT_FIELDS}
    return ready._replace(**cut, slot_of=None)


def any_(x: jax.Array, axis: int) -> jax.Array:
    """``x.any(axis)`` as an integer max (a Pallas Triton kernel has no boolean reduction)."""
    return jnp.max(x.astype(jnp.int32), axis=axis) > 0


def prefix_sum(x: jax.Array) -> jax.Array:
    """Inclusive prefix sum over axis 0 (`lax.associative_scan`: fastest under XLA:CPU)."""
    return lax.associative_scan(jnp.add, x, axis=0)


# The decision functions below are pure math on loaded values (a `first_slots` view, the
# pheromone of each slot, `AntView`): the `lax` step and the fused kernel (`colony.kernel`) both
# call them, so a change of the rules reaches both.
def _candidates(
    ready: ReadyList, ant: AntView, live_through: jax.Array, inp: StepInputs, seeds: AntSeeds
) -> Candidates:
    """Ready vs semi-ready in the view's slots (with nothing ready the ant stalls to the first
    earliest cycle: a necessary stall), and their register effect (``live_through``
    int32[F]). A semi-ready candidate is eligible in the wavefronts allowed optional stalls,
    and in every wavefront when no ready candidate stays within the soft RP limit (waiting
    beats dying)."""
    w = ready.e.shape[0]
    slots = lax.broadcasted_iota(jnp.int32, (w, 1), 0)
    valid = slots < ready.count[None, :]
    e = ready.e
    ready_now = valid & (e <= ant.cycle)
    min_e = jnp.where(valid, e, BIG).min(axis=0)
    stall = any_(valid, 0) & ~any_(ready_now, 0)  # nothing ready (and not done)
    cycle = jnp.where(stall, jnp.maximum(ant.cycle, min_e), ant.cycle)
    issued = jnp.where(cycle != ant.cycle, 0, ant.issued)
    is_ready = valid & (e <= cycle)
    semi = valid & ~is_ready
    kill, born = ready.kill, ready.born  # [F, w, A]
    after = ant.live_w[:, None, :] + born - kill + live_through[:, None, None]
    over = any_(after > inp.soft_limit[:, None, None], 0)
    safe_ready = any_(is_ready & ~over, 0)
    eligible = is_ready | (semi & (seeds.may_stall | ~safe_ready))
    raises = born.sum(axis=0) > kill.sum(axis=0)
    wait = (e - cycle).astype(jnp.float32)
    return Candidates(
        eligible=eligible,
        semi=semi,
        wait=wait,
        over=over,
        raises=raises,
        cycle=cycle,
        issued=issued,
    )


def _scores(
    ready: ReadyList,
    tau: jax.Array,
    c: Candidates,
    ant: AntView,
    inp: StepInputs,
    params: ColonyParams,
) -> jax.Array:
    """f32[w, A]: score of each eligible slot (0 elsewhere), as in the spec:
    ``tau[last, j] * (1 + key[j])``, damped for RP increase, soft-limit overflow and stalls.
    ``tau`` [w, A] (f32 or f16, scored in f32): the pheromone of each slot's candidate after
    the ant's last choice; ``params``: pass parameters (`params.pass_params`).

    The key is the weighted mean of the candidate's features, weights divided by the sum of
    their magnitudes: the static key (`static_key`), the last-use count (width killed, all
    files) and, per file, the width killed and the width defined, and the cycles until it is
    ready; each dynamic feature divided by its maximum over the ant's slots (at least 1)."""
    over, raises = c.over, c.raises
    wl = jnp.where(inp.timed, params.weight_last_use, params.weight_last_use_rp)
    ws = static_weight_sum(params)
    luc = ready.kill.sum(axis=0).astype(jnp.float32)
    luc = luc / jnp.maximum(luc.max(axis=0), 1.0)
    extra, w_extra = _dynamic_terms(ready.kill, ready.born, c.wait, params)
    key = (ready.key * ws + wl * luc + extra) / jnp.maximum(ws + jnp.abs(wl) + w_extra, 1e-6)
    score = tau.astype(jnp.float32) * (1.0 + key)
    calm_exists = any_(c.eligible & ~raises, 0)
    score = jnp.where(raises & calm_exists, score * params.rp_damping, score)
    safe_exists = any_(c.eligible & ~over, 0)
    score = jnp.where(over & safe_exists, score * params.overflow_damping, score)
    g = inp.stall_budget
    taken = ant.stalls.astype(jnp.float32)
    damp_wait = _stall_damping(c.wait, g)
    damp_taken = _stall_damping(taken, g)
    score = jnp.where(c.semi, score * damp_wait * damp_taken, score)
    return jnp.where(c.eligible, jnp.maximum(score, params.score_floor), 0.0)


def _dynamic_terms(
    kill: jax.Array, born: jax.Array, wait: jax.Array, params: ColonyParams
) -> tuple[jax.Array, jax.Array]:
    """(f32[w, A] weighted sum, f32[] sum of weight magnitudes) of the per-file width killed
    and defined (``kill``, ``born`` int32[F, w, A]) and the cycles to wait (``wait`` f32[w, A],
    <= 0 when ready), each divided by its maximum over the slots (at least 1). The per-file
    weights are scalars or ``[F]`` (pass parameters)."""
    F = kill.shape[0]
    wk = jnp.broadcast_to(params.weight_kill, (F,))
    wb = jnp.broadcast_to(params.weight_born, (F,))

    def scaled(x: jax.Array) -> jax.Array:
        x = x.astype(jnp.float32)
        return x * (1.0 / jnp.maximum(x.max(axis=-2, keepdims=True), 1.0))

    terms = (wk[:, None, None] * scaled(kill) + wb[:, None, None] * scaled(born)).sum(axis=0)
    terms = terms + params.weight_wait * scaled(jnp.maximum(wait, 0.0))
    return terms, jnp.abs(wk).sum() + jnp.abs(wb).sum() + jnp.abs(params.weight_wait)


def _stall_damping(stalls: jax.Array, g: jax.Array) -> jax.Array:
    """Score factor for waiting ``stalls`` cycles against the stall budget G: the spec's
    ``(G - 2w) / G`` below G and ``1 / G`` from G on, kept at least ``1 / G`` (the spec's
    linear part turns negative for G/2 < w < G, which floored such waits below longer ones)."""
    return jnp.maximum((g - 2 * stalls) / g, 1.0 / g)


def pick_slot(
    score: jax.Array,
    eligible: jax.Array,
    t: jax.Array,
    q0: jax.Array,
    seeds: AntSeeds,
    scan=prefix_sum,
) -> jax.Array:
    """int32[A]: the chosen slot per ant (K... the caller masks finished ants).

    Exploit (argmax) with probability q0, else a roulette over the scores. The roulette runs on
    integer weights (16 bits relative to the best score, at least 1), so prefix sums (``scan``,
    inclusive over axis 0) are exact and a pick never depends on how many slots were looked at.
    """
    w = score.shape[0]
    slots = lax.broadcasted_iota(jnp.int32, (w, 1), 0)
    exploit = uniform(seeds.coin, t) < q0
    weight = roulette_weights(score, eligible)
    csum = scan(weight)
    total = weight.sum(axis=0)  # csum[-1] (a Triton kernel cannot slice a value)
    r = (uniform(seeds.seed, t) * total.astype(jnp.float32)).astype(jnp.int32)
    last_eligible = jnp.where(eligible, slots, 0).max(axis=0)
    below = (csum <= r[None, :]).astype(jnp.int32)
    pick_roulette = jnp.minimum(below.sum(axis=0), last_eligible)
    return jnp.where(exploit, best_slot(score, eligible), pick_roulette).astype(jnp.int32)


def roulette_weights(score: jax.Array, eligible: jax.Array) -> jax.Array:
    """int32[w, A]: the roulette's weights: 16 bits relative to the best score, at least 1 for
    an eligible slot, 0 elsewhere (a slot's roulette probability is its share of the sum)."""
    best = score.max(axis=0)
    rel = score / jnp.maximum(best, 1e-30)[None, :] * 65535.0
    return jnp.where(eligible, 1 + rel.astype(jnp.int32), 0)


def best_slot(score: jax.Array, eligible: jax.Array) -> jax.Array:
    """int32[A]: the exploiting choice, the first eligible slot of the best score (``w`` when
    none). Max then first match: XLA:CPU vectorises plain reductions, not (value, index)."""
    w = score.shape[0]
    slots = lax.broadcasted_iota(jnp.int32, (w, 1), 0)
    best = score.max(axis=0)
    return jnp.where((score == best[None, :]) & eligible, slots, w).min(axis=0)


def step_scores(
    ready: ReadyList,
    tau: jax.Array,
    ant: AntView,
    live_through: jax.Array,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
) -> tuple[Candidates, jax.Array]:
    """The candidates of a `first_slots` view and their scores (f32[w, A], 0 where not
    eligible): everything a decision weighs before the pick (`decide`, and the replay of
    given orders in `jaxsched.tune`)."""
    c = _candidates(ready, ant, live_through, inp, seeds)
    return c, _scores(ready, tau, c, ant, inp, params)


def decide(
    ready: ReadyList,
    tau: jax.Array,
    ant: AntView,
    live_through: jax.Array,
    t: jax.Array,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
    *,
    dummy_slot: int,
    scan=prefix_sum,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Pick a slot per ant from a `first_slots` view holding every ant's candidates (``tau``
    f32|f16[w, A]: pheromone of each slot's candidate after the ant's last choice). Returns (slot
    int32[A], ``dummy_slot`` for finished ants; cycle int32[A]; issued int32[A]).

    Pure math on loaded values, shared by the `lax` step and the fused kernel; ``scan`` is the
    prefix sum (the kernel passes `jnp.cumsum`, which Pallas lowers; sums are exact)."""
    c, score = step_scores(ready, tau, ant, live_through, inp, params, seeds)
    pick = pick_slot(score, c.eligible, t, inp.q0, seeds, scan)
    return jnp.where(ready.count > 0, pick, dummy_slot), c.cycle, c.issued


def _decide(
    w: int,
    t: jax.Array,
    st: AntsState,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`decide` over the first ``w`` slots of the `lax` state (every ant's candidates are
    there)."""
    ready = first_slots(st.ready, w)
    tau = inp.tau[st.last[None, :], ready.ids]
    ant = AntView(cycle=st.cycle, issued=st.issued, stalls=st.stalls, live_w=st.live_w)
    K = st.ready.ids.shape[0] - 1
    return decide(ready, tau, ant, prep.live_through, t, inp, params, seeds, dummy_slot=K)


class _Issue(NamedTuple):
    """Timing of the instruction each ant issues this step."""

    c_j: jax.Array  # int32[A]: its issue cycle
    cycle: jax.Array  # int32[A]: the ant's next cycle
    issued: jax.Array  # int32[A]: instructions issued in that cycle
    stalls: jax.Array  # int32[A]: optional stalls taken so far


def issue_timing(
    active: jax.Array,
    cycle: jax.Array,
    issued: jax.Array,
    e_pick: jax.Array,
    stalls: jax.Array,
    issue_width: jax.Array,
) -> _Issue:
    """The issue cycle (in the RP pass every earliest cycle is 0, so ``c_j = cycle``), the next
    cycle and issue count, and optional stall cycles taken (waiting for a semi-ready pick)."""
    e_j = jnp.where(active, e_pick, 0)
    c_j = jnp.maximum(cycle, e_j)
    was_semi = active & (e_j > cycle)
    issued = jnp.where(c_j != cycle, 0, issued) + active.astype(jnp.int32)
    full = issued >= issue_width
    return _Issue(
        c_j=c_j,
        cycle=jnp.where(full, c_j + 1, c_j),
        issued=jnp.where(full, 0, issued),
        stalls=stalls + jnp.where(was_semi, c_j - cycle, 0),
    )


class OldValues(NamedTuple):
    """Values of the old state a step reads before it writes anything (in the `lax` step behind
    an optimization barrier, see `_step_at_width`; the kernel reads them first too)."""

    moved: jax.Array  # int32[A]: candidate in the last ready slot (moves into j's slot)
    moved_e: jax.Array  # int32[A]
    moved_key: jax.Array  # f32[A]
    moved_born: jax.Array  # int32[F, A]
    moved_kill: jax.Array  # int32[F, A]
    kill_s: jax.Array  # int32[F, D, A]: kill widths of j's successors
    preds_s: jax.Array  # int32[D, A]: their unscheduled predecessors
    earliest_s: jax.Array  # int32[D, A]: their earliest cycles
    rem_u: jax.Array  # int32[U, A]: remaining uses of j's uses
    rem_d: jax.Array  # int32[V, A]: ... of j's defs
    xor_u: jax.Array  # int32[U, A]
    xor_d: jax.Array  # int32[V, A]
    live_u: jax.Array  # bool[U, A]
    live_d: jax.Array  # bool[V, A]


def _read_old(st: AntsState, last_slot, s, u, d, ant, a0) -> OldValues:
    r = st.ready
    old = OldValues(
        moved=r.ids[last_slot, a0],
        moved_e=r.e[last_slot, a0],
        moved_key=r.key[last_slot, a0],
        moved_born=r.born[:, last_slot, a0],
        moved_kill=r.kill[:, last_slot, a0],
        kill_s=st.kill[:, s, ant],
        preds_s=st.preds_left[s, ant],
        earliest_s=st.earliest[s, ant],
        rem_u=st.remaining[u, ant],
        rem_d=st.remaining[d, ant],
        xor_u=st.users_xor[u, ant],
        xor_d=st.users_xor[d, ant],
        live_u=st.live[u, ant],
        live_d=st.live[d, ant],
    )
    return lax.optimization_barrier(old)


def _remove(r: ReadyList, old: OldValues, pick, last_slot, j, active, a0) -> ReadyList:
    """Remove j (slot ``pick``) from the ready lists: the last candidate moves into its slot."""
    N = r.slot_of.shape[0] - 1
    K = r.ids.shape[0] - 1

    def swap(arr: jax.Array, moved_val: jax.Array, fill) -> jax.Array:
        if arr.ndim == 3:
            return arr.at[:, pick, a0].set(moved_val).at[:, last_slot, a0].set(fill)
        return arr.at[pick, a0].set(moved_val).at[last_slot, a0].set(fill)

    return ReadyList(
        ids=swap(r.ids, old.moved, N),
        e=swap(r.e, old.moved_e, 0),
        key=swap(r.key, old.moved_key, 0.0),
        born=swap(r.born, old.moved_born, 0),
        kill=swap(r.kill, old.moved_kill, 0),
        count=r.count - active.astype(jnp.int32),
        slot_of=r.slot_of.at[old.moved, a0].set(pick).at[j, a0].set(K),
    )


class Released(NamedTuple):
    """j's successors after its issue (``[D, A]``, pure math shared with the kernel)."""

    preds_left: jax.Array  # int32[D, A]: their unscheduled predecessors now
    earliest: jax.Array  # int32[D, A]: their earliest cycle now
    new: jax.Array  # bool[D, A]: became ready (enter the ready list)
    pos: jax.Array  # int32[D, A]: their ready slot (K: not new)
    count: jax.Array  # int32[A]: ready candidates after them


def released(
    s, preds_s, earliest_s, lat, c_j, count, *, sentinel: int, dummy_slot: int
) -> Released:
    """Release j's successors ``s`` [D, A] (unique, sentinel padding) given their old
    predecessor counts and earliest cycles and the edge latencies ``lat`` (0 in the RP pass):
    the newly free ones get the next slots after ``count``."""
    left = preds_s - 1
    new = (left == 0) & (s != sentinel)
    pos = jnp.where(new, count[None, :] + jnp.cumsum(new.astype(jnp.int32), axis=0) - 1, 0)
    return Released(
        preds_left=left,
        earliest=jnp.maximum(earliest_s, c_j[None, :] + lat),
        new=new,
        pos=jnp.where(new, jnp.minimum(pos, dummy_slot), dummy_slot),
        count=count + new.astype(jnp.int32).sum(axis=0),
    )


def _release(
    r: ReadyList, st: AntsState, prep: Prepared, inp: StepInputs, old: OldValues, j, c_j, s, ant
) -> tuple[ReadyList, jax.Array, jax.Array]:
    """Release j's successors ``s`` [D, A]; newly free ones enter the ready lists.
    Returns (ready lists, preds_left, earliest)."""
    N = prep.succ.shape[0] - 1
    K = r.ids.shape[0] - 1
    lat = jnp.where(inp.timed, prep.succ_lat[j].T, 0)
    rel = released(s, old.preds_s, old.earliest_s, lat, c_j, r.count, sentinel=N, dummy_slot=K)
    pos = rel.pos
    s_new = jnp.where(rel.new, s, N)
    r = ReadyList(
        ids=r.ids.at[pos, ant].set(s_new).at[K].set(N),
        e=r.e.at[pos, ant].set(rel.earliest),
        key=r.key.at[pos, ant].set(inp.key[s]),
        born=r.born.at[:, pos, ant].set(prep.def_wf[:, s]),
        kill=r.kill.at[:, pos, ant].set(old.kill_s),
        count=rel.count,
        slot_of=r.slot_of.at[s_new, ant].set(pos).at[N].set(K),
    )
    preds_left = st.preds_left.at[s, ant].set(rel.preds_left)
    earliest = st.earliest.at[s, ant].set(rel.earliest)
    return r, preds_left, earliest


class RegisterUpdate(NamedTuple):
    """j's registers after its issue (pure math shared with the kernel)."""

    rem_u: jax.Array  # int32[U, A]: remaining uses of j's uses
    xor_u: jax.Array  # int32[U, A]: XOR of their unscheduled users
    live_u: jax.Array  # bool[U, A]: still live (a register also defined by j: see live_d)
    live_d: jax.Array  # bool[V, A]: j's defs live after j (wins over live_u)
    live_w: jax.Array  # int32[F, A]: live width per file after j
    peak: jax.Array  # int32[F, A]
    kill_u: jax.Array  # int32[U, A]: instruction now killing each used register (N: none)
    kill_d: jax.Array  # int32[V, A]: ... each defined register
    u_in_d: jax.Array  # bool[U, A]: the used register is also defined by j


def register_update(
    j,
    u,
    d,
    old: OldValues,
    out_u,
    out_d,
    wf_u,
    wf_d,
    live_w,
    peak,
    live_through,
    *,
    n_sentinel,
    r_sentinel,
) -> RegisterUpdate:
    """Issue j's registers ``u`` [U, A] and ``d`` [V, A] (unique per instruction, sentinel
    ``r_sentinel``) given their old state (``old``: rem/xor/live of u and d), live-out flags
    and per-file widths ``wf_u`` [F, U, A], ``wf_d`` [F, V, A]: uses first (last uses die),
    then defs are born, the peak is recorded, then dead defs die; then the last-use bookkeeping
    (a live register with one use left is killed by that last user)."""
    # A register both used and defined by j sees the effect of the use on its def.
    same = (d[:, None, :] == u[None, :, :]) & (d[:, None, :] != r_sentinel)  # [V, U, A]
    rem_u = old.rem_u - 1
    die = (rem_u == 0) & old.live_u & ~out_u
    d_in_u = any_(same, 1)
    rem_d = old.rem_d - d_in_u.astype(jnp.int32)
    live_d = old.live_d & ~any_(same & die[None], 1)
    xor_u = old.xor_u ^ j[None, :]
    xor_d = jnp.where(d_in_u, old.xor_d ^ j[None, :], old.xor_d)
    born = ~live_d & (d != r_sentinel)
    dead_def = (rem_d == 0) & (live_d | born) & ~out_d

    def per_file(wf, mask):  # [F, M, A] widths where mask [M, A], summed -> [F, A]
        return (wf * mask[None].astype(jnp.int32)).sum(axis=1)

    live_w = live_w - per_file(wf_u, die) + per_file(wf_d, born)
    peak = jnp.maximum(peak, live_w + live_through[:, None])
    return RegisterUpdate(
        rem_u=rem_u,
        xor_u=xor_u,
        live_u=old.live_u & ~die,
        live_d=(live_d | born) & ~dead_def,
        live_w=live_w - per_file(wf_d, dead_def),
        peak=peak,
        kill_u=jnp.where((rem_u == 1) & old.live_u & ~out_u, xor_u, n_sentinel),
        kill_d=jnp.where((rem_d == 1) & born & ~out_d, xor_d, n_sentinel),
        u_in_d=any_(same, 0),
    )


def now_dead(dead: jax.Array, peak: jax.Array, rp_limit: jax.Array) -> jax.Array:
    """bool[A]: an ant dies once its peak (int32[F, A]) breaks the RP limit (int32[F])."""
    return dead | any_(peak > rp_limit[:, None], 0)


class _Regs(NamedTuple):
    remaining: jax.Array  # int32[R + 1, A]
    users_xor: jax.Array  # int32[R + 1, A]
    live: jax.Array  # bool[R + 1, A]
    live_w: jax.Array  # int32[F, A]
    peak: jax.Array  # int32[F, A]
    kill: jax.Array  # int32[F, N + 1, A]
    ready_kill: jax.Array  # int32[F, K + 1, A]


def _registers(st: AntsState, r: ReadyList, prep: Prepared, old: OldValues, j, u, d, ant) -> _Regs:
    """`register_update` on the `lax` state: scatter the new register state, and add the width
    a register's last user now kills to that user (in its ready slot too)."""
    N = prep.succ.shape[0] - 1
    R = prep.reg_wf.shape[0] - 1
    K = r.ids.shape[0] - 1
    wf_u = prep.reg_wf[u].transpose(2, 0, 1)  # [F, U, A]
    wf_d = prep.reg_wf[d].transpose(2, 0, 1)
    out_u, out_d = prep.reg_live_out[u], prep.reg_live_out[d]
    up = register_update(
        j, u, d, old, out_u, out_d, wf_u, wf_d, st.live_w, st.peak, prep.live_through,
        n_sentinel=N, r_sentinel=R,
    )  # fmt: skip
    k_user = jnp.concatenate([up.kill_u, up.kill_d])  # [U + V, A]
    k_width = jnp.concatenate([wf_u, wf_d], axis=1)  # [F, U + V, A]
    return _Regs(
        remaining=st.remaining.at[u, ant].set(up.rem_u),
        users_xor=st.users_xor.at[u, ant].set(up.xor_u),
        live=st.live.at[u, ant].set(up.live_u).at[d, ant].set(up.live_d),
        live_w=up.live_w,
        peak=up.peak,
        kill=st.kill.at[:, k_user, ant].add(k_width).at[:, N].set(0),
        ready_kill=r.kill.at[:, r.slot_of[k_user, ant], ant].add(k_width).at[:, K].set(0),
    )


def ants_step(
    t: jax.Array,
    st: AntsState,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
    *,
    batch_axis: str | None = None,
) -> AntsState:
    """Every ant schedules one instruction (or nothing once its region is done).

    The whole step runs inside a `lax.switch` over `slot_widths` (state in, state out, so the
    buffers update in place), on the largest ready count. Under a `vmap` over regions named
    ``batch_axis`` that count is maximised over regions too, so the switch index stays unbatched
    and only one branch runs.
    """
    K = st.ready.ids.shape[0] - 1
    widths = slot_widths(K)
    most = st.ready.count.max()
    if batch_axis is not None:
        most = lax.pmax(most, batch_axis)
    branch = jnp.searchsorted(jnp.array(widths, jnp.int32), most).astype(jnp.int32)
    branch = jnp.minimum(branch, len(widths) - 1)
    step = partial(_step_at_width, t=t, prep=prep, inp=inp, params=params, seeds=seeds)
    return lax.switch(branch, [partial(step, w) for w in widths], st)


def _step_at_width(
    w: int,
    st: AntsState,
    *,
    t: jax.Array,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
) -> AntsState:
    """`ants_step` with the decision over the first ``w`` ready slots."""
    pick, cycle, issued = _decide(w, t, st, prep, inp, params, seeds)
    return apply_pick(st, pick, cycle, issued, t=t, prep=prep, inp=inp)


def apply_pick(
    st: AntsState,
    pick: jax.Array,
    cycle: jax.Array,
    issued: jax.Array,
    *,
    t: jax.Array,
    prep: Prepared,
    inp: StepInputs,
) -> AntsState:
    """Every ant with candidates issues the one in ready slot ``pick`` (int32[A]; K for
    finished ants) at step ``t``; ``cycle`` and ``issued`` (int32[A]) as `Candidates` has them
    (a replay of given orders calls this too, `jaxsched.tune`).

    The decision and every read of the old state happen behind optimization barriers; the rest
    of the step only scatters into state arrays. XLA then updates them in place instead of
    copying whole arrays that are read and written in the same step.
    """
    K = st.ready.ids.shape[0] - 1
    ant = jnp.arange(st.last.shape[0], dtype=jnp.int32)[None, :]
    a0 = ant[0]
    active = st.ready.count > 0
    pick, cycle, issued, j, e_pick = lax.optimization_barrier(
        (pick, cycle, issued, st.ready.ids[pick, a0], st.ready.e[pick, a0])
    )  # j: [A], N when inactive
    timing = issue_timing(active, cycle, issued, e_pick, st.stalls, inp.issue_width)
    last_slot = jnp.where(active, st.ready.count - 1, K)
    s, u, d = prep.succ[j].T, prep.uses[j].T, prep.defs[j].T  # [D, A], [U, A], [V, A]
    old = _read_old(st, last_slot, s, u, d, ant, a0)
    ready = _remove(st.ready, old, pick, last_slot, j, active, a0)
    ready, preds_left, earliest = _release(ready, st, prep, inp, old, j, timing.c_j, s, ant)
    regs = _registers(st, ready, prep, old, j, u, d, ant)
    return AntsState(
        ready=ready._replace(kill=regs.ready_kill),
        preds_left=preds_left,
        earliest=earliest,
        kill=regs.kill,
        remaining=regs.remaining,
        users_xor=regs.users_xor,
        live=regs.live,
        live_w=regs.live_w,
        peak=regs.peak,
        last=jnp.where(active, j, st.last),
        cycle=timing.cycle,
        issued=timing.issued,
        stalls=timing.stalls,
        dead=now_dead(st.dead, regs.peak, inp.rp_limit),
        order=st.order.at[t].set(j),
    )


def make_seeds(
    key: jax.Array,
    params: ColonyParams,
    *,
    wavefronts: int,
    wavefront_size: int,
    uniform_exploration: jax.Array | bool,
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
    num_steps: jax.Array,
    *,
    wavefronts: int,
    wavefront_size: int,
    uniform_exploration: jax.Array | bool,
    batch_axis: str | None = None,
    ant_axis: str | None = None,
) -> AntResults:
    """All ants of one region build a schedule each.

    ``num_steps`` must not be batched (pass the batch's largest n): the step loop then stays a
    plain loop, and steps past a region's own n are no-ops through the sentinels. An ant whose
    peak breaks ``inp.rp_limit`` is dead. With ``ant_axis`` (a `jax.shard_map` mesh axis) this
    device builds only its slice of the ants (`antshard.local_ants`), with their own seeds.
    """
    seeds = make_seeds(
        key,
        params,
        wavefronts=wavefronts,
        wavefront_size=wavefront_size,
        uniform_exploration=uniform_exploration,
    )
    seeds = local_ants(seeds, ant_axis)
    ants = seeds.seed.shape[0]

    def body(t: jax.Array, st: AntsState) -> AntsState:
        return ants_step(t, st, prep, inp, params, seeds, batch_axis=batch_axis)

    st = lax.fori_loop(0, num_steps, body, init_ants(prep, ants, inp.key))
    return ant_results(st)


def ant_results(st: AntsState) -> AntResults:
    """The results of finished ants (any state with the `AntsState` per-ant fields)."""
    length = jnp.where(st.issued > 0, st.cycle + 1, st.cycle)
    return AntResults(
        order=st.order.T, peak=st.peak.T, length=length, stalls=st.stalls, dead=st.dead
    )
