"""A region's constant construction tables (`Prepared`, built once per region with dummy rows
for the sentinels) and the static part of the guiding heuristic's key."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

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

    @property
    def instr_sentinel(self) -> int:
        """N: the padded instruction count, also the id of the dummy instruction."""
        return self.succ.shape[0] - 1

    @property
    def reg_sentinel(self) -> int:
        """R: the padded register count, also the id of the dummy register."""
        return self.reg_wf.shape[0] - 1

    @property
    def dummy_slot(self) -> int:
        """K: the padded ready-list bound, also the index of the dummy ready slot."""
        return self.init_ready.shape[0] - 1


def _row_pad(values: jax.Array, fill) -> jax.Array:
    """``values`` with one extra leading-axis row of ``fill`` (the sentinel's dummy row)."""
    values = jnp.asarray(values)
    return jnp.concatenate([values, jnp.full((1, *values.shape[1:]), fill, values.dtype)], axis=0)


def _users_xor(uses: jax.Array, num_regs: int) -> jax.Array:
    """int32[R + 1]: XOR of the ids of each register's users (``uses`` int32[N + 1, U]).

    There is no XOR scatter primitive: add the id bit planes and keep each plane's parity.
    """
    ids = jnp.broadcast_to(jnp.arange(uses.shape[0], dtype=jnp.int32)[:, None], uses.shape)
    bits = (ids[..., None] >> jnp.arange(31)) & 1  # [N + 1, U, 31]
    plane = jnp.zeros((num_regs, 31), jnp.int32).at[uses].add(bits)
    return ((plane & 1) << jnp.arange(31)).sum(axis=1).astype(jnp.int32)


def _normalized(values: jax.Array) -> jax.Array:
    """f32[N + 1]: ``values`` (int[N]) divided by its maximum (at least 1), dummy 0 appended."""
    values = jnp.asarray(values).astype(jnp.float32)
    return _row_pad(values / jnp.maximum(values.max(), 1.0), 0.0)


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
    N = prep.instr_sentinel
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
