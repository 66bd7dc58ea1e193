"""What issuing an instruction does to an ant, as pure math on values read from the old state
(`OldValues`): its timing, the release of its successors and its registers' update. The `lax`
step (`construct`) and the fused kernel (`construction.kernel`) both call these."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsched.colony.construction.antstate import (
    any_,
)


class IssueTiming(NamedTuple):
    """Timing of the instruction each ant issues this step."""

    issue_cycle: jax.Array  # int32[A]: its issue cycle
    cycle: jax.Array  # int32[A]: the ant's next cycle
    issued: jax.Array  # int32[A]: instructions issued in that cycle
    stalls: jax.Array  # int32[A]: optional stalls taken so far


def issue_timing(
    active: jax.Array,
    cycle: jax.Array,
    issued: jax.Array,
    pick_earliest: jax.Array,
    stalls: jax.Array,
    issue_width: jax.Array,
) -> IssueTiming:
    """The issue cycle (in the RP pass every earliest cycle is 0, so ``issue_cycle = cycle``), the
    next cycle and issue count, and optional stall cycles taken (waiting for a semi-ready pick)."""
    earliest = jnp.where(active, pick_earliest, 0)
    issue_cycle = jnp.maximum(cycle, earliest)
    was_semi = active & (earliest > cycle)
    issued = jnp.where(issue_cycle != cycle, 0, issued) + active.astype(jnp.int32)
    full = issued >= issue_width
    return IssueTiming(
        issue_cycle=issue_cycle,
        cycle=jnp.where(full, issue_cycle + 1, issue_cycle),
        issued=jnp.where(full, 0, issued),
        stalls=stalls + jnp.where(was_semi, issue_cycle - cycle, 0),
    )


class OldValues(NamedTuple):
    """Values of the old state a step reads before it writes anything (in the `lax` step behind
    an optimization barrier, see `_step_at_width`; the kernel reads them first too)."""

    moved: (
        jax.Array
    )  # int32[A]: candidate in the last ready slot (moves into the chosen instruction's slot)
    moved_earliest: jax.Array  # int32[A]
    moved_key: jax.Array  # f32[A]
    moved_born: jax.Array  # int32[F, A]
    moved_kill: jax.Array  # int32[F, A]
    kill_s: jax.Array  # int32[F, D, A]: kill widths of the chosen instruction's successors
    preds_s: jax.Array  # int32[D, A]: their unscheduled predecessors
    earliest_s: jax.Array  # int32[D, A]: their earliest cycles
    rem_u: jax.Array  # int32[U, A]: remaining uses of the chosen instruction's uses
    rem_d: jax.Array  # int32[V, A]: ... of the chosen instruction's defs
    xor_u: jax.Array  # int32[U, A]
    xor_d: jax.Array  # int32[V, A]
    live_u: jax.Array  # bool[U, A]
    live_d: jax.Array  # bool[V, A]


class Released(NamedTuple):
    """the chosen instruction's successors after its issue (``[D, A]``, pure math shared with the
    kernel)."""

    preds_left: jax.Array  # int32[D, A]: their unscheduled predecessors now
    earliest: jax.Array  # int32[D, A]: their earliest cycle now
    new: jax.Array  # bool[D, A]: became ready (enter the ready list)
    pos: jax.Array  # int32[D, A]: their ready slot (K: not new)
    count: jax.Array  # int32[A]: ready candidates after them


def released(
    succs, preds_s, earliest_s, lat, issue_cycle, count, *, sentinel: int, dummy_slot: int
) -> Released:
    """Release the chosen instruction's successors ``succs`` [D, A] (unique, sentinel padding) given
    their old predecessor counts and earliest cycles and the edge latencies ``lat`` (0 in the RP
    pass): the newly free ones get the next slots after ``count``."""
    left = preds_s - 1
    new = (left == 0) & (succs != sentinel)
    pos = jnp.where(new, count[None, :] + jnp.cumsum(new.astype(jnp.int32), axis=0) - 1, 0)
    return Released(
        preds_left=left,
        earliest=jnp.maximum(earliest_s, issue_cycle[None, :] + lat),
        new=new,
        pos=jnp.where(new, jnp.minimum(pos, dummy_slot), dummy_slot),
        count=count + new.astype(jnp.int32).sum(axis=0),
    )


class RegisterUpdate(NamedTuple):
    """the chosen instruction's registers after its issue (pure math shared with the kernel)."""

    rem_u: jax.Array  # int32[U, A]: remaining uses of the chosen instruction's uses
    xor_u: jax.Array  # int32[U, A]: XOR of their unscheduled users
    live_u: jax.Array  # bool[U, A]: still live (a register it also defines: see live_d)
    live_d: (
        jax.Array
    )  # bool[V, A]: the chosen instruction's defs live after its issue (wins over live_u)
    live_w: jax.Array  # int32[F, A]: live width per file after its issue
    peak: jax.Array  # int32[F, A]
    kill_u: jax.Array  # int32[U, A]: instruction now killing each used register (N: none)
    kill_d: jax.Array  # int32[V, A]: ... each defined register
    u_in_d: jax.Array  # bool[U, A]: the used register is also defined by it


class IssuedRegisters(NamedTuple):
    """The registers of the instruction each ant issues, with what the tables say of them
    (loaded by the caller: the `lax` step gathers them, the kernel loads them)."""

    chosen: jax.Array  # int32[A]: the issued instruction (N: none)
    used: jax.Array  # int32[U, A]: its uses (unique per instruction, sentinel R)
    defined: jax.Array  # int32[V, A]: its defs (unique per instruction, sentinel R)
    used_live_out: jax.Array  # bool[U, A]: a use is live-out (never dies)
    defined_live_out: jax.Array  # bool[V, A]
    used_widths: jax.Array  # int32[F, U, A]: each use's width in its file's row, else 0
    defined_widths: jax.Array  # int32[F, V, A]


def register_update(
    regs: IssuedRegisters,
    old: OldValues,
    live_w: jax.Array,
    peak: jax.Array,
    live_through: jax.Array,
    *,
    n_sentinel: int,
    r_sentinel: int,
) -> RegisterUpdate:
    """Issue the chosen instructions' registers ``regs`` given their old state (``old``:
    rem/xor/live of the uses and defs), the live width per file ``live_w`` and ``peak``
    (int32[F, A]) and ``live_through`` (int32[F]): uses first (last uses die), then defs are
    born, the peak is recorded, then dead defs die; then the last-use bookkeeping (a live
    register with one use left is killed by that last user)."""
    chosen, used, defined = regs.chosen, regs.used, regs.defined
    out_u, out_d = regs.used_live_out, regs.defined_live_out
    wf_u, wf_d = regs.used_widths, regs.defined_widths
    # A register both used and defined by the instruction sees the effect of the use on its def.
    same = (defined[:, None, :] == used[None, :, :]) & (defined[:, None, :] != r_sentinel)
    rem_u = old.rem_u - 1
    die = (rem_u == 0) & old.live_u & ~out_u
    d_in_u = any_(same, 1)
    rem_d = old.rem_d - d_in_u.astype(jnp.int32)
    live_d = old.live_d & ~any_(same & die[None], 1)
    xor_u = old.xor_u ^ chosen[None, :]
    xor_d = jnp.where(d_in_u, old.xor_d ^ chosen[None, :], old.xor_d)
    born = ~live_d & (defined != r_sentinel)
    dead_def = (rem_d == 0) & (live_d | born) & ~out_d

    def per_file(widths, mask):  # [F, M, A] widths where mask [M, A], summed -> [F, A]
        return (widths * mask[None].astype(jnp.int32)).sum(axis=1)

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
