"""One decision of every ant: which ready candidates are eligible, their scores, the pick.

Pure math on loaded values (a `antstate.first_slots` view, the pheromone of each slot,
`antstate.AntView`): the `lax` step (`construct`), the fused kernel (`construction.kernel`) and the
tuning replay (`jaxsched.tune`) all call it, so a change of the rules reaches all three."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxsched.colony.construction.antstate import (
    AntView,
    ReadyList,
    StepInputs,
    any_,
    prefix_sum,
    rounded,
)
from jaxsched.colony.construction.draws import AntSeeds, uniform
from jaxsched.colony.construction.prepared import (
    BIG,
    static_weight_sum,
)
from jaxsched.colony.params import ColonyParams


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


# The decision functions below are pure math on loaded values (a `first_slots` view, the
# pheromone of each slot, `AntView`): the `lax` step and the fused kernel
# (`construction.kernel`) both call them, so a change of the rules reaches both.
def _candidates(
    ready: ReadyList, ant: AntView, live_through: jax.Array, inp: StepInputs, seeds: AntSeeds
) -> Candidates:
    """Ready vs semi-ready in the view's slots (with nothing ready the ant stalls to the first
    earliest cycle: a necessary stall), and their register effect (``live_through``
    int32[F]). A semi-ready candidate is eligible in the wavefronts allowed optional stalls,
    and in every wavefront when no ready candidate stays within the soft RP limit (waiting
    beats dying)."""
    w = ready.earliest.shape[0]
    slots = lax.broadcasted_iota(jnp.int32, (w, 1), 0)
    valid = slots < ready.count[None, :]
    e = ready.earliest
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
    cands: Candidates,
    ant: AntView,
    inp: StepInputs,
    params: ColonyParams,
    rounding=rounded,
) -> jax.Array:
    """f32[w, A]: score of each eligible slot (0 elsewhere), as in the spec:
    ``tau[last, j] * (1 + key[j])``, damped for RP increase, soft-limit overflow and stalls.
    ``tau`` [w, A] (f32 or f16, scored in f32): the pheromone of each slot's candidate after
    the ant's last choice; ``params``: pass parameters (`params.pass_params`).

    The key is the weighted mean of the candidate's features, weights divided by the sum of
    their magnitudes: the static key (`static_key`), the last-use count (width killed, all
    files) and, per file, the width killed and the width defined, and the cycles until it is
    ready; each dynamic feature divided by its maximum over the ant's slots (at least 1)."""
    over, raises = cands.over, cands.raises
    wl = jnp.where(inp.timed, params.weight_last_use, params.weight_last_use_rp)
    ws = static_weight_sum(params)
    luc = ready.kill.sum(axis=0).astype(jnp.float32)
    luc = luc / jnp.maximum(luc.max(axis=0), 1.0)
    extra, w_extra = _dynamic_terms(ready.kill, ready.born, cands.wait, params, rounding)
    static, last_use = rounding(ready.key * ws, wl * luc)
    # XLA may turn the division into a product with the reciprocal: rounded before the sum.
    (key,) = rounding((static + last_use + extra) / jnp.maximum(ws + jnp.abs(wl) + w_extra, 1e-6))
    score = tau.astype(jnp.float32) * (1.0 + key)
    calm_exists = any_(cands.eligible & ~raises, 0)
    score = jnp.where(raises & calm_exists, score * params.rp_damping, score)
    safe_exists = any_(cands.eligible & ~over, 0)
    score = jnp.where(over & safe_exists, score * params.overflow_damping, score)
    g = inp.stall_budget
    taken = ant.stalls.astype(jnp.float32)
    damp_wait = _stall_damping(cands.wait, g)
    damp_taken = _stall_damping(taken, g)
    score = jnp.where(cands.semi, score * damp_wait * damp_taken, score)
    return jnp.where(cands.eligible, jnp.maximum(score, params.score_floor), 0.0)


def _dynamic_terms(
    kill: jax.Array, born: jax.Array, wait: jax.Array, params: ColonyParams, rounding=rounded
) -> tuple[jax.Array, jax.Array]:
    """(f32[w, A] weighted sum, f32[] sum of weight magnitudes) of the per-file width killed
    and defined (``kill``, ``born`` int32[F, w, A]) and the cycles to wait (``wait`` f32[w, A],
    <= 0 when ready), each divided by its maximum over the slots (at least 1). The per-file
    weights are scalars or ``[F]`` (pass parameters)."""
    F = kill.shape[0]
    wk = jnp.broadcast_to(params.weight_kill, (F,))
    wb = jnp.broadcast_to(params.weight_born, (F,))

    def scaled(values: jax.Array) -> jax.Array:
        values = values.astype(jnp.float32)
        return values * (1.0 / jnp.maximum(values.max(axis=-2, keepdims=True), 1.0))

    killed, defined, waited = rounding(
        wk[:, None, None] * scaled(kill),
        wb[:, None, None] * scaled(born),
        params.weight_wait * scaled(jnp.maximum(wait, 0.0)),
    )
    terms = (killed + defined).sum(axis=0) + waited
    return terms, jnp.abs(wk).sum() + jnp.abs(wb).sum() + jnp.abs(params.weight_wait)


def _stall_damping(stalls: jax.Array, budget: jax.Array) -> jax.Array:
    """Score factor for waiting ``stalls`` cycles against the stall budget G: the spec's
    ``(G - 2w) / G`` below G and ``1 / G`` from G on, kept at least ``1 / G`` (the spec's
    linear part turns negative for G/2 < w < G, which floored such waits below longer ones)."""
    return jnp.maximum((budget - 2 * stalls) / budget, 1.0 / budget)


def pick_slot(
    score: jax.Array,
    eligible: jax.Array,
    step_index: jax.Array,
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
    exploit = uniform(seeds.coin, step_index) < q0
    weight = roulette_weights(score, eligible)
    csum = scan(weight)
    total = weight.sum(axis=0)  # csum[-1] (a Triton kernel cannot slice a value)
    r = (uniform(seeds.seed, step_index) * total.astype(jnp.float32)).astype(jnp.int32)
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
    rounding=rounded,
) -> tuple[Candidates, jax.Array]:
    """The candidates of a `first_slots` view and their scores (f32[w, A], 0 where not
    eligible): everything a decision weighs before the pick (`decide`, and the replay of
    given orders in `jaxsched.tune`). ``rounding``: `antstate.rounded` (products rounded
    before they are added), or the identity where the barrier cannot lower (Triton)."""
    c = _candidates(ready, ant, live_through, inp, seeds)
    return c, _scores(ready, tau, c, ant, inp, params, rounding)


def decide(
    ready: ReadyList,
    tau: jax.Array,
    ant: AntView,
    live_through: jax.Array,
    step_index: jax.Array,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
    *,
    dummy_slot: int,
    scan=prefix_sum,
    rounding=rounded,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Pick a slot per ant from a `first_slots` view holding every ant's candidates (``tau``
    f32|f16[w, A]: pheromone of each slot's candidate after the ant's last choice). Returns (slot
    int32[A], ``dummy_slot`` for finished ants; cycle int32[A]; issued int32[A]).

    Pure math on loaded values, shared by the `lax` step and the fused kernel; ``scan`` is the
    prefix sum (the kernel passes `jnp.cumsum`, which Pallas lowers; sums are exact);
    ``rounding`` as in `step_scores`."""
    c, score = step_scores(ready, tau, ant, live_through, inp, params, seeds, rounding)
    pick = pick_slot(score, c.eligible, step_index, inp.q0, seeds, scan)
    return jnp.where(ready.count > 0, pick, dummy_slot), c.cycle, c.issued
