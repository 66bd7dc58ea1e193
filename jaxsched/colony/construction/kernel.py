"""The fused construction: one Pallas (Triton) kernel runs a whole construction of a region's
ants, all steps, with the same rules and random stream as `construct.construct_ants`.

Layout (the `lax` path's, see `construct`): a program owns a block of ``B`` ants (lanes) of one
region; under `jax.vmap` over regions the grid is (regions, ant blocks), one launch for a batch.

  * **Registers**: each ant's scalars (ready count, last instruction, cycle, issue count, stall
    cycles, death, live width and peak per file) are the step loop's carry.
  * **Device memory, this block's columns**: the ready lists (structure of arrays, slot K a
    dummy), ``slot_of``, predecessor counts, earliest cycles, kill widths, register state and
    the order; read and written with per-lane gathers and scatters (index ``(x, lane)``). The
    Triton backend has no block-local scratch memory: these live in the kernel's outputs, which
    alias the initial state built by `construct.init_ants`.
  * **Read only**: the region's tables (`prepared.Prepared`), the pheromone and the step inputs.

Shared with the `lax` step (`construct`): the initial state, the seeds, the whole decision
(`decision.decide`: candidates, scores, pick), the issue timing, the release and register
update math and the death rule. This module only loads and stores. Within a step a lane's
writes may be read back by another thread of the program, so phases are separated by
``debug_barrier`` (a CTA barrier); scatter-adds that may repeat an address use atomics.

The decision looks at the first ``w`` ready slots, ``w`` the smallest of `kernel_widths` holding
the block's candidates (a pick never depends on ``w``), with masked loads past each ant's count.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

from jaxsched import fused
from jaxsched.colony.construction import antstate, construct, decision, draws, issue, prepared
from jaxsched.colony.params import ColonyParams
from jaxsched.fused import load as _load
from jaxsched.fused import store as _store

#: Ants per program (a power of two; smaller when the ant count has no such divisor).
DEFAULT_BLOCK = 32
#: Triton warps per program.
NUM_WARPS = 4


def kernel_widths(slots: int) -> tuple[int, ...]:
    """Static decision widths of the kernel: powers of two from 8 below ``slots``, then
    ``slots`` (a program picks the smallest holding its ants' candidates)."""
    out, w = [], 8
    while w < slots:
        out.append(w)
        w *= 2
    return (*out, slots)


def block_size(ants: int, block: int = DEFAULT_BLOCK) -> int:
    """The largest power of two <= ``block`` dividing ``ants``."""
    return fused.block_size(ants, block)


def unsupported(prep: prepared.Prepared) -> str | None:
    """Why the kernel cannot run this shape (None: it can). Triton tensors need power-of-two
    sizes: the per-instruction widths (successors, uses, defs), the register files and the
    ready slots (the decision widths) must be powers of two (`PaddedShape` pads them so)."""
    dims = {
        "successors": prep.succ.shape[-1],
        "uses": prep.uses.shape[-1],
        "defs": prep.defs.shape[-1],
        "register files": prep.live_through.shape[-1],
        "ready slots": prep.init_ready.shape[-1] - 1,
    }
    bad = [f"{k} {v}" for k, v in dims.items() if v & (v - 1)]
    return f"not powers of two: {', '.join(bad)}" if bad else None


class _Tables(NamedTuple):
    """Read-only inputs of one region (refs in the kernel)."""

    succ: Any  # int32[N + 1, D]
    succ_lat: Any  # int32[N + 1, D]
    uses: Any  # int32[N + 1, U]
    defs: Any  # int32[N + 1, V]
    def_wf: Any  # int32[F, N + 1]
    reg_wf: Any  # int32[R + 1, F]
    reg_live_out: Any  # bool[R + 1]
    live_through: Any  # int32[F]
    key: Any  # f32[N + 1]: static heuristic key of this pass
    tau: Any  # f32|f16[N + 1, N + 1]
    rp_limit: Any  # int32[F]: an ant above it dies
    soft_limit: Any  # int32[F]: candidates are steered below it
    num_steps: Any  # int32[]
    q0: Any  # f32[]
    stall_budget: Any  # f32[]
    timed: Any  # bool[]
    issue_width: Any  # int32[]

    @property
    def instr_sentinel(self) -> int:
        """N: the padded instruction count, also the id of the dummy instruction."""
        return self.succ.shape[0] - 1

    @property
    def reg_sentinel(self) -> int:
        """R: the padded register count, also the id of the dummy register."""
        return self.reg_wf.shape[0] - 1


class _Lanes(NamedTuple):
    """Per-ant scalars held in registers (the step loop's carry), ``[B]`` / ``[F, B]``."""

    count: jax.Array
    last: jax.Array
    cycle: jax.Array
    issued: jax.Array
    stalls: jax.Array
    dead: jax.Array
    live_w: jax.Array
    peak: jax.Array


def _lanes_of(state: antstate.AntsState) -> _Lanes:
    return _Lanes(
        count=state.ready.count,
        last=state.last,
        cycle=state.cycle,
        issued=state.issued,
        stalls=state.stalls,
        dead=state.dead,
        live_w=state.live_w,
        peak=state.peak,
    )


def _row(table, index: jax.Array, width: int) -> jax.Array:
    """[width, B]: row ``index`` [B] of a per-instruction table [N + 1, width], transposed."""
    col = lax.broadcasted_iota(jnp.int32, (width, index.shape[0]), 0)
    return table[jnp.broadcast_to(index[None], col.shape), col]


def _fill(field: str, sentinel: int):
    """Value of an empty ready slot (``ids``: the instruction sentinel, else 0)."""
    return sentinel if field == "ids" else 0


def _as_computed(*products: jax.Array) -> tuple[jax.Array, ...]:
    """The kernel's `antstate.rounded` under Triton, which has no barrier to lower: products
    as its compiler rounds them (it may fuse multiply-adds; the interpreter rounds apart)."""
    return products


def _decide_at(
    width: int,
    step_index,
    lanes: _Lanes,
    ant_refs: antstate.AntsState,
    tables: _Tables,
    inp,
    params,
    seeds,
    sentinel,
    rounding,
):
    """`decision.decide` on the first ``width`` slots, loaded with a mask past each count."""
    B = lanes.count.shape[0]
    valid = lax.broadcasted_iota(jnp.int32, (width, B), 0) < lanes.count[None, :]
    view = {}
    for f in antstate.SLOT_FIELDS:
        ref = getattr(ant_refs.ready, f)
        lead = ref.shape[:-2]
        mask = jnp.broadcast_to(valid, (*lead, width, B))
        window = ref.at[(*(slice(None),) * len(lead), pl.ds(0, width), slice(None))]
        view[f] = plgpu.load(window, mask=mask, other=jnp.asarray(_fill(f, sentinel), ref.dtype))
    ready = ant_refs.ready._replace(**view, count=lanes.count, slot_of=None)
    tau = tables.tau[jnp.broadcast_to(lanes.last[None, :], (width, B)), ready.ids]
    ant = antstate.AntView(
        cycle=lanes.cycle, issued=lanes.issued, stalls=lanes.stalls, live_w=lanes.live_w
    )
    K = ant_refs.ready.dummy_slot
    scan = partial(jnp.cumsum, axis=0)
    return decision.decide(
        ready,
        tau,
        ant,
        tables.live_through,
        step_index,
        inp,
        params,
        seeds,
        dummy_slot=K,
        scan=scan,
        rounding=rounding,
    )


def _step(
    step_index,
    lanes: _Lanes,
    ant_refs: antstate.AntsState,
    tables: _Tables,
    inp,
    params,
    seeds,
    barrier,
    rounding,
) -> _Lanes:
    """One step of the block's ants (the kernel's `construct.ants_step`): decide, read the old
    values, remove the pick from the ready list, release its successors, update registers."""
    B = lanes.count.shape[0]
    N, D = tables.instr_sentinel, tables.succ.shape[1]
    K = ant_refs.ready.dummy_slot
    lane = lax.broadcasted_iota(jnp.int32, (B,), 0)
    widths = kernel_widths(K)
    most = lanes.count.max()
    branch = sum((most > w).astype(jnp.int32) for w in widths[:-1]) if len(widths) > 1 else 0
    decide = [
        partial(_decide_at, w, step_index, lanes, ant_refs, tables, inp, params, seeds, N, rounding)
        for w in widths
    ]
    pick, cycle, issued = lax.switch(branch, decide) if len(widths) > 1 else decide[0]()

    active = lanes.count > 0
    chosen = _load(ant_refs.ready.ids, pick, lane)  # N when inactive (slot K)
    pick_earliest = _load(ant_refs.ready.earliest, pick, lane)
    timing = issue.issue_timing(active, cycle, issued, pick_earliest, lanes.stalls, inp.issue_width)
    last_slot = jnp.where(active, lanes.count - 1, K)
    succs = _row(tables.succ, chosen, D)
    used, defined = (
        _row(tables.uses, chosen, tables.uses.shape[1]),
        _row(tables.defs, chosen, tables.defs.shape[1]),
    )
    moved, old = _read_old(ant_refs, lane, last_slot, succs, used, defined)
    barrier()
    _remove(ant_refs, lane, step_index, chosen, pick, last_slot, moved, old, N)
    barrier()
    rel = _release(
        ant_refs,
        tables,
        inp,
        lane,
        chosen,
        succs,
        old,
        timing,
        lanes.count - active.astype(jnp.int32),
    )
    up = _registers(ant_refs, tables, lanes, lane, chosen, used, defined, old, barrier)
    return _Lanes(
        count=rel.count,
        last=jnp.where(active, chosen, lanes.last),
        cycle=timing.cycle,
        issued=timing.issued,
        stalls=timing.stalls,
        dead=issue.now_dead(lanes.dead, up.peak, tables.rp_limit),
        live_w=up.live_w,
        peak=up.peak,
    )


def _read_old(
    ant_refs: antstate.AntsState, lane, last_slot, succs, used, defined
) -> tuple[dict, issue.OldValues]:
    """The values the step overwrites, read before any write: the last ready slot's fields
    (it moves into the pick's slot) and the state of the pick's successors and registers."""
    moved = {f: _load(getattr(ant_refs.ready, f), last_slot, lane) for f in antstate.SLOT_FIELDS}
    old = issue.OldValues(
        moved=moved["ids"],
        moved_earliest=moved["earliest"],
        moved_key=moved["key"],
        moved_born=moved["born"],
        moved_kill=moved["kill"],
        kill_s=_load(ant_refs.kill, succs, lane),
        preds_s=_load(ant_refs.preds_left, succs, lane),
        earliest_s=_load(ant_refs.earliest, succs, lane),
        rem_u=_load(ant_refs.remaining, used, lane),
        rem_d=_load(ant_refs.remaining, defined, lane),
        xor_u=_load(ant_refs.users_xor, used, lane),
        xor_d=_load(ant_refs.users_xor, defined, lane),
        live_u=_load(ant_refs.live, used, lane),
        live_d=_load(ant_refs.live, defined, lane),
    )
    return moved, old


def _remove(
    ant_refs: antstate.AntsState,
    lane,
    step_index,
    chosen,
    pick,
    last_slot,
    moved: dict,
    old,
    instr_sentinel: int,
) -> None:
    """Remove the chosen instruction from the ready list (the last candidate moves into its slot;
    nothing moves when it is the last) and write it at position ``step_index`` of the order."""
    K = ant_refs.ready.dummy_slot
    moves = pick != last_slot
    for f in antstate.SLOT_FIELDS:
        ref = getattr(ant_refs.ready, f)
        _store(ref, pick, lane, moved[f], mask=moves)
        _store(ref, last_slot, lane, _fill(f, instr_sentinel))
    _store(ant_refs.ready.slot_of, old.moved, lane, pick, mask=moves)
    _store(ant_refs.ready.slot_of, chosen, lane, K)
    _store(ant_refs.order, step_index, lane, chosen)


def _release(
    ant_refs: antstate.AntsState, tables: _Tables, inp, lane, chosen, succs, old, timing, count
):
    """Release the chosen instruction's successors ``succs``; the new candidates enter the ready
    list. Returns `issue.released`'s result (the new candidate count among it)."""
    N, D = tables.instr_sentinel, tables.succ.shape[1]
    K = ant_refs.ready.dummy_slot
    F = tables.reg_wf.shape[1]
    lat = jnp.where(inp.timed, _row(tables.succ_lat, chosen, D), 0)
    rel = issue.released(
        succs, old.preds_s, old.earliest_s, lat, timing.issue_cycle, count, sentinel=N, dummy_slot=K
    )
    real = succs != N
    _store(ant_refs.preds_left, succs, lane, rel.preds_left, mask=real)
    _store(ant_refs.earliest, succs, lane, rel.earliest, mask=real)
    fF = lax.broadcasted_iota(jnp.int32, (F, *succs.shape), 0)
    entry = {
        "ids": succs,
        "earliest": rel.earliest,
        "key": tables.key[succs],
        "born": tables.def_wf[fF, jnp.broadcast_to(succs[None], fF.shape)],
        "kill": old.kill_s,
    }
    for f in antstate.SLOT_FIELDS:
        _store(getattr(ant_refs.ready, f), rel.pos, lane, entry[f], mask=rel.new)
    _store(ant_refs.ready.slot_of, succs, lane, rel.pos, mask=rel.new)
    return rel


def _registers(
    ant_refs: antstate.AntsState,
    tables: _Tables,
    lanes: _Lanes,
    lane,
    chosen,
    used,
    defined,
    old,
    barrier,
):
    """the chosen instruction's registers: remaining users, liveness and the kill counts of the last
    users (`issue.register_update`). Returns its result (live widths and peaks among it)."""
    N = tables.instr_sentinel
    R = tables.reg_sentinel
    K = ant_refs.ready.dummy_slot
    regs = issue.IssuedRegisters(
        chosen=chosen,
        used=used,
        defined=defined,
        used_live_out=tables.reg_live_out[used],
        defined_live_out=tables.reg_live_out[defined],
        used_widths=_widths(tables.reg_wf, used),
        defined_widths=_widths(tables.reg_wf, defined),
    )
    up = issue.register_update(
        regs, old, lanes.live_w, lanes.peak, tables.live_through, n_sentinel=N, r_sentinel=R
    )
    _store(ant_refs.remaining, used, lane, up.rem_u, mask=used != R)
    _store(ant_refs.users_xor, used, lane, up.xor_u, mask=used != R)
    _store(ant_refs.live, used, lane, up.live_u, mask=(used != R) & ~up.u_in_d)
    _store(ant_refs.live, defined, lane, up.live_d, mask=defined != R)
    barrier()
    for killer, killed in ((up.kill_u, used), (up.kill_d, defined)):
        wf = _widths(tables.reg_wf, killed)  # [F, M, B]
        _add(ant_refs.kill, killer, lane, wf, mask=killer != N)
        slot = _load(ant_refs.ready.slot_of, killer, lane)
        _add(ant_refs.ready.kill, slot, lane, wf, mask=(killer != N) & (slot != K))
    barrier()
    return up


def _widths(reg_wf, regs: jax.Array) -> jax.Array:
    """int32[F, M, B]: width of registers ``regs`` [M, B] in each file."""
    F = reg_wf.shape[1]
    f = lax.broadcasted_iota(jnp.int32, (F, *regs.shape), 0)
    return reg_wf[jnp.broadcast_to(regs[None], f.shape), f]


def _add(ref, idx, lane, val, mask) -> None:
    """``ref[idx, lane] += val`` where ``mask`` (an index may repeat: an atomic add on the GPU;
    masked entries add 0 at their index, a dummy row)."""
    index = fused.lane_index(ref, idx, lane)
    shape = index[0].shape
    val = jnp.where(jnp.broadcast_to(mask, shape), jnp.broadcast_to(val, shape), 0)
    jax.ref.addupdate(ref, index, val.astype(ref.dtype))


def _kernel(tables, params, seeds, _, state, _scratch, *, interpret: bool):
    """The whole construction of one block of ants (all steps)."""
    T = tables
    inp = antstate.StepInputs(
        tau=None,
        q0=T.q0[...],
        rp_limit=T.rp_limit[...],
        soft_limit=T.soft_limit[...],
        stall_budget=T.stall_budget[...],
        timed=T.timed[...],
        key=None,
        issue_width=T.issue_width[...],
    )
    T = T._replace(live_through=T.live_through[...], rp_limit=inp.rp_limit)
    params = jax.tree.map(lambda ref: ref[...], params)
    seeds = jax.tree.map(lambda ref: ref[...], seeds)
    S = state
    barrier = fused.barrier(interpret)
    rounding = antstate.rounded if interpret else _as_computed

    def body(step_index, lanes):
        return _step(step_index, lanes, S, T, inp, params, seeds, barrier, rounding)

    lanes0 = jax.tree.map(lambda ref: ref[...], _lanes_of(S))
    L = lax.fori_loop(0, T.num_steps[...], body, lanes0)
    for ref, val in zip(_lanes_of(S), L, strict=True):
        ref[...] = val


def fused_construction(
    state: antstate.AntsState,
    prep: prepared.Prepared,
    inp: antstate.StepInputs,
    params: ColonyParams,
    seeds: draws.AntSeeds,
    num_steps: jax.Array,
    *,
    block: int = DEFAULT_BLOCK,
    interpret: bool = False,
) -> antstate.AntsState:
    """Run all ``num_steps`` steps of the ants of ``state`` in one `pallas_call` (grid over ant
    blocks; `vmap` it over regions for a grid over regions x blocks). Returns the final state."""
    ants = state.last.shape[0]
    B = block_size(ants, block)
    tables = _Tables(
        succ=prep.succ,
        succ_lat=prep.succ_lat,
        uses=prep.uses,
        defs=prep.defs,
        def_wf=prep.def_wf,
        reg_wf=prep.reg_wf,
        reg_live_out=prep.reg_live_out,
        live_through=prep.live_through,
        key=inp.key,
        tau=inp.tau,
        rp_limit=inp.rp_limit,
        soft_limit=inp.soft_limit,
        num_steps=jnp.asarray(num_steps, jnp.int32),
        q0=jnp.asarray(inp.q0, jnp.float32),
        stall_budget=jnp.asarray(inp.stall_budget, jnp.float32),
        timed=jnp.asarray(inp.timed, bool),
        issue_width=jnp.asarray(inp.issue_width, jnp.int32),
    )
    params = jax.tree.map(lambda leaf: jnp.asarray(leaf, jnp.float32), params)
    state, _ = fused.call_in_place(
        partial(_kernel, interpret=interpret),
        (tables, params, seeds),
        (fused.specs(tables, None), fused.specs(params, None), fused.specs(seeds, B)),
        state,
        block=B,
        num_warps=NUM_WARPS,
        interpret=interpret,
        name="colony_construction",
    )
    return state


def construct_ants_fused(
    prep: prepared.Prepared,
    inp: antstate.StepInputs,
    params: ColonyParams,
    key: jax.Array,
    num_steps: jax.Array,
    *,
    wavefronts: int,
    wavefront_size: int,
    uniform_exploration: jax.Array | bool,
    batch_axis: str | None = None,
    active: jax.Array | bool = True,
    block: int = DEFAULT_BLOCK,
    interpret: bool = False,
) -> antstate.AntResults:
    """`construct.construct_ants` as one fused kernel: identical results for identical inputs
    (same initial state, seeds and decision code).

    Each region runs only its own n steps (steps past n are no-ops in the `lax` loop), none
    when ``active`` is False (its results are then the initial state's: the caller discards
    them). ``batch_axis`` is accepted for the same call signature (each program picks its own
    decision width, no cross-region maximum needed); ``interpret`` runs the kernel with the
    Pallas interpreter (any backend; tests)."""
    del batch_axis
    reason = unsupported(prep)
    if reason:
        raise ValueError(f"the fused construction cannot run this shape ({reason})")
    seeds = draws.make_seeds(
        key,
        params,
        wavefronts=wavefronts,
        wavefront_size=wavefront_size,
        uniform_exploration=uniform_exploration,
    )
    st = construct.init_ants(prep, wavefronts * wavefront_size, inp.key)
    num_steps = jnp.where(active, jnp.minimum(num_steps, prep.n), 0)
    st = fused_construction(
        st, prep, inp, params, seeds, num_steps, block=block, interpret=interpret
    )
    return construct.ant_results(st)
