"""All ants of a region building one schedule each: fixed-shape state, one `lax` step per
instruction.

This module is the loop; each job it runs has its own module: the region's constant tables
(`prepared`), the state records (`antstate`), the random numbers (`draws`), the decision
(`decision`) and what issuing does to an ant (`updates`). The fused kernel
(`jaxsched.colony.construction.kernel`) runs the same decision and updates on its own memory layout.

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
  * Randomness: per-ant seeds hashed with the step number (`draws`); no key splitting in the
    loop.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxsched.colony.construction.antstate import (
    AntResults,
    AntsState,
    AntView,
    ReadyList,
    StepInputs,
    first_slots,
)
from jaxsched.colony.construction.decision import (
    decide,
    slot_widths,
)
from jaxsched.colony.construction.draws import AntSeeds, make_seeds
from jaxsched.colony.construction.issue import (
    IssuedRegisters,
    OldValues,
    issue_timing,
    now_dead,
    register_update,
    released,
)
from jaxsched.colony.construction.prepared import (
    Prepared,
)
from jaxsched.colony.drivers.antshard import local_ants
from jaxsched.colony.params import ColonyParams


def init_ants(prep: Prepared, ants: int, key: jax.Array) -> AntsState:
    """Every ant at the start: roots ready, live-in registers live. ``key`` f32[N + 1]."""
    N = prep.instr_sentinel
    K = prep.dummy_slot

    def rep(per_region: jax.Array) -> jax.Array:
        return jnp.broadcast_to(per_region[..., None], (*per_region.shape, ants))

    live_w = (prep.reg_wf * prep.reg_live_in[:, None]).sum(axis=0).astype(jnp.int32)
    zeros = jnp.zeros(ants, jnp.int32)
    ids = prep.init_ready
    slot_of = jnp.full(N + 1, K, jnp.int32).at[ids].set(jnp.arange(K + 1, dtype=jnp.int32))
    ready = ReadyList(
        ids=rep(ids),
        earliest=jnp.zeros((K + 1, ants), jnp.int32),
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


def _decide(
    width: int,
    step_index: jax.Array,
    state: AntsState,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`decide` over the first ``width`` slots of the `lax` state (every ant's candidates are
    there)."""
    ready = first_slots(state.ready, width)
    tau = inp.tau[state.last[None, :], ready.ids]
    ant = AntView(cycle=state.cycle, issued=state.issued, stalls=state.stalls, live_w=state.live_w)
    K = state.ready.dummy_slot
    return decide(ready, tau, ant, prep.live_through, step_index, inp, params, seeds, dummy_slot=K)


def _read_old(state: AntsState, last_slot, succs, used, defined, ant, ant_ids) -> OldValues:
    r = state.ready
    old = OldValues(
        moved=r.ids[last_slot, ant_ids],
        moved_earliest=r.earliest[last_slot, ant_ids],
        moved_key=r.key[last_slot, ant_ids],
        moved_born=r.born[:, last_slot, ant_ids],
        moved_kill=r.kill[:, last_slot, ant_ids],
        kill_s=state.kill[:, succs, ant],
        preds_s=state.preds_left[succs, ant],
        earliest_s=state.earliest[succs, ant],
        rem_u=state.remaining[used, ant],
        rem_d=state.remaining[defined, ant],
        xor_u=state.users_xor[used, ant],
        xor_d=state.users_xor[defined, ant],
        live_u=state.live[used, ant],
        live_d=state.live[defined, ant],
    )
    return lax.optimization_barrier(old)


def _remove(
    ready: ReadyList, old: OldValues, pick, last_slot, chosen, active, ant_ids
) -> ReadyList:
    """Remove the chosen instruction (slot ``pick``) from the ready lists: the last candidate moves
    into its slot."""
    N = ready.slot_of.shape[0] - 1
    K = ready.dummy_slot

    def swap(arr: jax.Array, moved_val: jax.Array, fill) -> jax.Array:
        if arr.ndim == 3:
            return arr.at[:, pick, ant_ids].set(moved_val).at[:, last_slot, ant_ids].set(fill)
        return arr.at[pick, ant_ids].set(moved_val).at[last_slot, ant_ids].set(fill)

    return ReadyList(
        ids=swap(ready.ids, old.moved, N),
        earliest=swap(ready.earliest, old.moved_earliest, 0),
        key=swap(ready.key, old.moved_key, 0.0),
        born=swap(ready.born, old.moved_born, 0),
        kill=swap(ready.kill, old.moved_kill, 0),
        count=ready.count - active.astype(jnp.int32),
        slot_of=ready.slot_of.at[old.moved, ant_ids].set(pick).at[chosen, ant_ids].set(K),
    )


def _release(
    ready: ReadyList,
    state: AntsState,
    prep: Prepared,
    inp: StepInputs,
    old: OldValues,
    chosen,
    issue_cycle,
    succs,
    ant,
) -> tuple[ReadyList, jax.Array, jax.Array]:
    """Release the chosen instruction's successors ``succs`` [D, A]; newly free ones enter the ready
    lists. Returns (ready lists, preds_left, earliest)."""
    N = prep.instr_sentinel
    K = ready.dummy_slot
    lat = jnp.where(inp.timed, prep.succ_lat[chosen].T, 0)
    rel = released(
        succs, old.preds_s, old.earliest_s, lat, issue_cycle, ready.count, sentinel=N, dummy_slot=K
    )
    pos = rel.pos
    s_new = jnp.where(rel.new, succs, N)
    ready = ReadyList(
        ids=ready.ids.at[pos, ant].set(s_new).at[K].set(N),
        earliest=ready.earliest.at[pos, ant].set(rel.earliest),
        key=ready.key.at[pos, ant].set(inp.key[succs]),
        born=ready.born.at[:, pos, ant].set(prep.def_wf[:, succs]),
        kill=ready.kill.at[:, pos, ant].set(old.kill_s),
        count=rel.count,
        slot_of=ready.slot_of.at[s_new, ant].set(pos).at[N].set(K),
    )
    preds_left = state.preds_left.at[succs, ant].set(rel.preds_left)
    earliest = state.earliest.at[succs, ant].set(rel.earliest)
    return ready, preds_left, earliest


class _Regs(NamedTuple):
    remaining: jax.Array  # int32[R + 1, A]
    users_xor: jax.Array  # int32[R + 1, A]
    live: jax.Array  # bool[R + 1, A]
    live_w: jax.Array  # int32[F, A]
    peak: jax.Array  # int32[F, A]
    kill: jax.Array  # int32[F, N + 1, A]
    ready_kill: jax.Array  # int32[F, K + 1, A]


def _registers(
    state: AntsState, ready: ReadyList, prep: Prepared, old: OldValues, chosen, used, defined, ant
) -> _Regs:
    """`register_update` on the `lax` state: scatter the new register state, and add the width
    a register's last user now kills to that user (in its ready slot too)."""
    N = prep.instr_sentinel
    R = prep.reg_sentinel
    K = ready.dummy_slot
    regs = IssuedRegisters(
        chosen=chosen,
        used=used,
        defined=defined,
        used_live_out=prep.reg_live_out[used],
        defined_live_out=prep.reg_live_out[defined],
        used_widths=prep.reg_wf[used].transpose(2, 0, 1),  # [F, U, A]
        defined_widths=prep.reg_wf[defined].transpose(2, 0, 1),
    )
    up = register_update(
        regs, old, state.live_w, state.peak, prep.live_through, n_sentinel=N, r_sentinel=R
    )
    k_user = jnp.concatenate([up.kill_u, up.kill_d])  # [U + V, A]
    k_width = jnp.concatenate([regs.used_widths, regs.defined_widths], axis=1)  # [F, U + V, A]
    return _Regs(
        remaining=state.remaining.at[used, ant].set(up.rem_u),
        users_xor=state.users_xor.at[used, ant].set(up.xor_u),
        live=state.live.at[used, ant].set(up.live_u).at[defined, ant].set(up.live_d),
        live_w=up.live_w,
        peak=up.peak,
        kill=state.kill.at[:, k_user, ant].add(k_width).at[:, N].set(0),
        ready_kill=ready.kill.at[:, ready.slot_of[k_user, ant], ant].add(k_width).at[:, K].set(0),
    )


def ants_step(
    step_index: jax.Array,
    state: AntsState,
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
    K = state.ready.dummy_slot
    widths = slot_widths(K)
    most = state.ready.count.max()
    if batch_axis is not None:
        most = lax.pmax(most, batch_axis)
    branch = jnp.searchsorted(jnp.array(widths, jnp.int32), most).astype(jnp.int32)
    branch = jnp.minimum(branch, len(widths) - 1)
    step = partial(
        _step_at_width, step_index=step_index, prep=prep, inp=inp, params=params, seeds=seeds
    )
    return lax.switch(branch, [partial(step, w) for w in widths], state)


def _step_at_width(
    width: int,
    state: AntsState,
    *,
    step_index: jax.Array,
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    seeds: AntSeeds,
) -> AntsState:
    """`ants_step` with the decision over the first ``width`` ready slots."""
    pick, cycle, issued = _decide(width, step_index, state, prep, inp, params, seeds)
    return apply_pick(state, pick, cycle, issued, step_index=step_index, prep=prep, inp=inp)


def apply_pick(
    state: AntsState,
    pick: jax.Array,
    cycle: jax.Array,
    issued: jax.Array,
    *,
    step_index: jax.Array,
    prep: Prepared,
    inp: StepInputs,
) -> AntsState:
    """Every ant with candidates issues the one in ready slot ``pick`` (int32[A]; K for
    finished ants) at step ``step_index``; ``cycle`` and ``issued`` (int32[A]) as `Candidates`
    has them (a replay of given orders calls this too, `jaxsched.tune`).

    The decision and every read of the old state happen behind optimization barriers; the rest
    of the step only scatters into state arrays. XLA then updates them in place instead of
    copying whole arrays that are read and written in the same step.
    """
    K = state.ready.dummy_slot
    ant = jnp.arange(state.last.shape[0], dtype=jnp.int32)[None, :]
    ant_ids = ant[0]
    active = state.ready.count > 0
    pick, cycle, issued, chosen, pick_earliest = lax.optimization_barrier(
        (pick, cycle, issued, state.ready.ids[pick, ant_ids], state.ready.earliest[pick, ant_ids])
    )  # chosen: [A], N when inactive
    timing = issue_timing(active, cycle, issued, pick_earliest, state.stalls, inp.issue_width)
    last_slot = jnp.where(active, state.ready.count - 1, K)
    succs, used, defined = (
        prep.succ[chosen].T,
        prep.uses[chosen].T,
        prep.defs[chosen].T,
    )  # [D, A], [U, A], [V, A]
    old = _read_old(state, last_slot, succs, used, defined, ant, ant_ids)
    ready = _remove(state.ready, old, pick, last_slot, chosen, active, ant_ids)
    ready, preds_left, earliest = _release(
        ready, state, prep, inp, old, chosen, timing.issue_cycle, succs, ant
    )
    regs = _registers(state, ready, prep, old, chosen, used, defined, ant)
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
        last=jnp.where(active, chosen, state.last),
        cycle=timing.cycle,
        issued=timing.issued,
        stalls=timing.stalls,
        dead=now_dead(state.dead, regs.peak, inp.rp_limit),
        order=state.order.at[step_index].set(chosen),
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

    def body(step_index: jax.Array, state: AntsState) -> AntsState:
        return ants_step(step_index, state, prep, inp, params, seeds, batch_axis=batch_axis)

    st = lax.fori_loop(0, num_steps, body, init_ants(prep, ants, inp.key))
    return ant_results(st)


def ant_results(state: AntsState) -> AntResults:
    """The results of finished ants (any state with the `AntsState` per-ant fields)."""
    length = jnp.where(state.issued > 0, state.cycle + 1, state.cycle)
    return AntResults(
        order=state.order.T, peak=state.peak.T, length=length, stalls=state.stalls, dead=state.dead
    )
