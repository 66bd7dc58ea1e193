"""A region's constant construction tables (`Prepared`, built once per region with dummy rows
for the sentinels) and the static part of the guiding heuristic's key.

`prepare` is written once over an array namespace ``xp``: `jax.numpy` (traceable) or `numpy`
(the host, `jaxsched.colony.derive`), with bit for bit the same tables on both."""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsched.colony.construction.antstate import rounded
from jaxsched.colony.params import ColonyParams
from jaxsched.heuristics.tables import BIG, Array, append_row, scatter_add, scatter_set
from jaxsched.problem.padded import DeviceRegion


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


def _users_xor(uses: Array, num_regs: int, xp: ModuleType) -> Array:
    """int32[num_regs]: XOR of the ids of each register's users (``uses`` int32[N + 1, U],
    row ids as user ids; sentinel uses count for the register they name).

    There is no XOR scatter primitive: add the id bit planes and keep each plane's parity.
    """
    ids = xp.broadcast_to(xp.arange(uses.shape[0], dtype=xp.int32)[:, None], uses.shape)
    planes = xp.arange(31, dtype=xp.int32)
    bits = (ids[..., None] >> planes) & 1  # int32[N + 1, U, 31]
    plane = scatter_add(xp.zeros((num_regs, 31), xp.int32), uses, bits, xp)
    return ((plane & 1) << planes).sum(axis=1, dtype=xp.int32)


def _normalized(values: Array, xp: ModuleType) -> Array:
    """f32[N + 1]: ``values`` (int[N]) divided by its maximum (at least 1), dummy 0 appended.

    The division is a multiplication by the maximum's rounded float32 reciprocal, written out:
    the arithmetic XLA compiles a division by a scalar to, here on both namespaces."""
    values = xp.asarray(values).astype(xp.float32)
    scale = xp.float32(1.0) / xp.maximum(values.max(), xp.float32(1.0))
    return append_row(values * scale, xp.float32(0.0), xp)


def _initial_ready(dev: DeviceRegion, ready_slots: int, xp: ModuleType) -> tuple[Array, Array]:
    """(int32[K + 1]: the roots in id order in the first slots, sentinel N after them and in
    slot K; int32[]: their count)."""
    N, K = dev.valid.shape[0], ready_slots
    roots = xp.asarray(dev.valid) & (xp.asarray(dev.num_preds) == 0)
    slot = xp.minimum(xp.where(roots, xp.cumsum(roots) - 1, K), K)
    ready = scatter_set(xp.full(K + 1, N, xp.int32), slot, xp.arange(N, dtype=xp.int32), xp)
    ready = scatter_set(ready, K, N, xp)
    return ready, xp.int32(roots.sum())


def _initial_kill(
    reg_wf: Array, users_xor: Array, kills: Array, num_instrs: int, xp: ModuleType
) -> Array:
    """int32[F, N + 1]: the width each instruction (N = ``num_instrs``) kills at the start,
    per file: each register of ``kills`` (bool[R + 1]) dies at its one user (``users_xor``
    int32[R + 1]; widths ``reg_wf`` int32[R + 1, F]); the dummy column N is 0."""
    N = num_instrs
    target = xp.where(kills, users_xor, N)  # [R + 1]
    width = (reg_wf * kills[:, None]).T  # int32[F, R + 1]
    kill = xp.zeros((reg_wf.shape[1], N + 1), xp.int32)
    kill = scatter_add(kill, (slice(None), target), width, xp)
    return scatter_set(kill, (slice(None), N), 0, xp)


def prepare(dev: DeviceRegion, ready_slots: int, xp: ModuleType = jnp) -> Prepared:
    """The `Prepared` arrays of one padded region (no batch axis) with ``ready_slots`` (K)
    ready slots. ``xp = jax.numpy``: traceable (`jit`, `vmap` over a batch); ``xp = numpy``:
    on the host from a NumPy ``dev`` (`derive.derive_host`), with the same dtypes, shapes and
    values, and nothing to compile."""
    N, R, F = dev.valid.shape[0], dev.reg_width.shape[0], dev.live_through.shape[0]
    reg_width, reg_file = append_row(dev.reg_width, 0, xp), append_row(dev.reg_file, 0, xp)
    files = xp.arange(F, dtype=xp.int32)
    reg_wf = xp.where(reg_file[:, None] == files[None, :], reg_width[:, None], 0).astype(xp.int32)
    uses, defs = append_row(dev.uses, R, xp), append_row(dev.defs, R, xp)
    users_xor = _users_xor(uses, R + 1, xp)
    reg_live_out = append_row(dev.reg_live_out, True, xp)
    reg_live_in = append_row(dev.reg_live_in, False, xp)
    reg_num_uses = append_row(dev.reg_num_uses, 0, xp)
    init_ready, init_count = _initial_ready(dev, ready_slots, xp)
    # At the start a live-in register with one use (not live-out) dies at that use.
    kills = (reg_num_uses == 1) & reg_live_in & ~reg_live_out
    return Prepared(
        n=xp.int32(dev.n),
        succ=append_row(dev.succ, N, xp),
        succ_lat=append_row(dev.succ_lat, 0, xp),
        num_preds=append_row(dev.num_preds, BIG, xp),
        uses=uses,
        defs=defs,
        def_wf=reg_wf.T[:, defs].sum(axis=2, dtype=xp.int32),
        reg_wf=reg_wf,
        reg_num_uses=reg_num_uses,
        reg_users_xor=users_xor,
        reg_live_in=reg_live_in,
        reg_live_out=reg_live_out,
        live_through=xp.asarray(dev.live_through, xp.int32),
        cp=_normalized(dev.cp, xp),
        cp_unit=_normalized(dev.cp_unit, xp),
        successors=_normalized(dev.num_succs, xp),
        init_ready=init_ready,
        init_count=init_count,
        init_kill=_initial_kill(reg_wf, users_xor, kills, N, xp),
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
    terms = rounded(
        *(getattr(params, name) * f for name, f in zip(STATIC_WEIGHTS, feats, strict=True))
    )
    num = terms[0]
    for term in terms[1:]:
        num = num + term
    return num / jnp.maximum(static_weight_sum(params), 1e-6)
