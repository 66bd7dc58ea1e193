"""The records a construction step reads and writes: the ants' ready lists and state (ant axis
last, sentinels index dummy rows), the per-iteration step inputs, the results, and the view a
decision takes of them; with the array helpers every layer uses (`any_`, `prefix_sum`,
`rounded`)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax


class ReadyList(NamedTuple):
    """Compact ready lists of A ants (structure of arrays; slot K is a dummy)."""

    ids: jax.Array  # int32[K + 1, A]: candidate ids in slots [0, count), sentinel N after
    earliest: jax.Array  # int32[K + 1, A]: earliest cycle of each slot's candidate
    key: jax.Array  # f32[K + 1, A]: static heuristic key of each slot's candidate
    born: jax.Array  # int32[F, K + 1, A]: width the candidate defines, per file
    kill: jax.Array  # int32[F, K + 1, A]: width it would kill if issued now, per file
    count: jax.Array  # int32[A]: number of candidates
    slot_of: jax.Array  # int32[N + 1, A]: ready slot of an instruction (K: not in the list)

    @property
    def dummy_slot(self) -> int:
        """K: the padded ready-list bound, also the index of the dummy ready slot."""
        return self.ids.shape[0] - 1


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


class AntView(NamedTuple):
    """What a decision reads of each ant besides its ready slots (loaded values)."""

    cycle: jax.Array  # int32[A]: next cycle an instruction may issue in
    issued: jax.Array  # int32[A]: instructions already issued in ``cycle``
    stalls: jax.Array  # int32[A]: optional stall cycles taken
    live_w: jax.Array  # int32[F, A]: live width per file (without live-through)


#: `ReadyList` fields with a slot axis (second to last); a decision reads their first w slots.
SLOT_FIELDS = ("ids", "earliest", "key", "born", "kill")


def first_slots(ready: ReadyList, width: int) -> ReadyList:
    """The first ``width`` slots of every slot field (``slot_of`` dropped): a decision's view."""
    cut = {f: getattr(ready, f)[..., :width, :] for f in SLOT_FIELDS}
    return ready._replace(**cut, slot_of=None)


def any_(values: jax.Array, axis: int) -> jax.Array:
    """``x.any(axis)`` as an integer max (a Pallas Triton kernel has no boolean reduction)."""
    return jnp.max(values.astype(jnp.int32), axis=axis) > 0


def rounded(*products: jax.Array) -> tuple[jax.Array, ...]:
    """``products``, each rounded to its dtype before any addition uses it.

    XLA (CPU and GPU) fuses a product into the addition that follows it (a fused multiply-add,
    one rounding) where the fusion and vectorisation of the computation allow, and those
    depend on the batch's shape: the same region could score differently in a batch of 64
    and alone on one of 8 devices. Behind this barrier every batch, device count and back end
    rounds alike (the native construction is compiled without contraction). Differentiable and
    batched like its operands."""
    return lax.optimization_barrier(products)


def prefix_sum(values: jax.Array) -> jax.Array:
    """Inclusive prefix sum over axis 0 (`lax.associative_scan`: fastest under XLA:CPU)."""
    return lax.associative_scan(jnp.add, values, axis=0)
