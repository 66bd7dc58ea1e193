"""What the fused Pallas (Triton) kernels share: the colony's construction kernel
(`jaxsched.colony.construction.kernel`) and the makespan annealing kernel
(`jaxsched.makespan.kernel`).

Lowest layer (imports only `jaxsched.errors`):

* the mode switch of both solvers, `MODES` (``auto``/``lax``/``pallas``/``interpret``), with
  `resolve` (what ``auto`` becomes here) and `check` (``pallas`` needs a GPU);
* lanes per program (`block_size`) and `BlockSpec`s of whole arrays or lane blocks (`specs`);
* the launch (`call_in_place`): a grid over lane blocks, a state updated in place (inputs
  aliased to outputs) and per-lane scratch memory in extra outputs;
* per-lane gathers and scatters on a block whose LAST axis is the lane axis (`load`, `store`:
  element ``(idx[lane], lane)`` of a ``[X, B]`` ref, optionally with one leading axis), and
  the CTA barrier between phases of a step (`barrier`, a no-op in the interpreter).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

from jaxsched.errors import InputError

#: How a solver runs its inner loop: "lax" (the reference: XLA ops; CPU, TPU), "pallas" (the
#: fused Triton kernel; CUDA GPUs), "interpret" (that kernel in the Pallas interpreter, any
#: backend: tests), "auto" (pallas on a CUDA GPU when the kernel supports the shapes, else lax).
MODES = ("auto", "lax", "pallas", "interpret")


def gpu_platform() -> str | None:
    """ "cuda" or "rocm" when the default backend is a GPU, else None."""
    if jax.default_backend() != "gpu":
        return None
    version = str(getattr(jax.devices()[0].client, "platform_version", "")).lower()
    return "rocm" if "rocm" in version else "cuda"


def resolve(mode: str, why_not: Callable[[], str | None] | None = None) -> str:
    """The mode that runs: "auto" becomes "pallas" on a CUDA GPU unless ``why_not()`` names a
    reason the kernel cannot run the shapes, else "lax"; other modes stay."""
    if mode != "auto":
        return mode
    if gpu_platform() != "cuda":
        return "lax"
    return "pallas" if why_not is None or why_not() is None else "lax"


def check(mode: str, option: str, error: type[InputError] = InputError) -> None:
    """Raise ``error`` when ``mode`` is not in `MODES` or cannot run on the default backend
    ("pallas" needs a GPU; "interpret" runs anywhere). ``option`` names the setting."""
    if mode not in MODES:
        raise error(f"{option} must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "pallas" and gpu_platform() is None:
        raise error(
            f"{option} 'pallas' needs a GPU (the JAX backend is {jax.default_backend()}); "
            "use 'lax', 'auto' or 'interpret' (the kernel in the Pallas interpreter: slow)"
        )


def block_size(count: int, block: int) -> int:
    """Lanes per program: the largest power of two <= ``block`` dividing ``count``."""
    b = 1
    while b * 2 <= block and count % (b * 2) == 0:
        b *= 2
    return b


def specs(tree, block: int | None):
    """BlockSpecs: whole arrays (``block`` None) or blocks of ``block`` on the last axis."""

    def spec(x):
        if block is None:
            return pl.BlockSpec(x.shape, lambda i, nd=x.ndim: (0,) * nd)
        shape = (*x.shape[:-1], block)
        return pl.BlockSpec(shape, lambda i, nd=x.ndim: (*(0,) * (nd - 1), i))

    return jax.tree.map(spec, tree)


def call_in_place(
    body: Callable[..., None],
    inputs: tuple,
    in_specs: tuple,
    state,
    *,
    block: int,
    scratch=(),
    num_warps: int,
    interpret: bool,
    name: str,
):
    """One `pallas_call` over blocks of ``block`` lanes (the last axis of every ``state`` leaf).

    ``body(*input_refs, state_in_refs, state_refs, scratch_refs)`` gets refs in the trees of
    ``inputs`` (read only, BlockSpecs ``in_specs``), ``state`` twice (the outputs alias the
    inputs: read and update ``state_refs`` in place) and ``scratch`` (ShapeDtypeStructs, lanes
    last: extra outputs used as memory, since the Triton backend has no addressable
    block-local memory). Returns (the updated state, the scratch arrays)."""
    leaves, treedef = jax.tree.flatten((*inputs, state, state, scratch))
    n_in = len(jax.tree.leaves((inputs, state)))
    n_state = len(jax.tree.leaves(state))
    out_tree = (state, scratch)
    lanes = jax.tree.leaves(state)[0].shape[-1]

    def kernel(*refs):
        body(*jax.tree.unflatten(treedef, refs))

    out = pl.pallas_call(
        kernel,
        grid=(lanes // block,),
        in_specs=jax.tree.leaves((in_specs, specs(state, block))),
        out_specs=jax.tree.leaves(specs(out_tree, block)),
        out_shape=[jax.ShapeDtypeStruct(x.shape, x.dtype) for x in jax.tree.leaves(out_tree)],
        input_output_aliases={n_in - n_state + k: k for k in range(n_state)},
        compiler_params=plgpu.CompilerParams(num_warps=num_warps, num_stages=1),
        interpret=interpret,
        name=name,
    )(*leaves[:n_in])
    return jax.tree.unflatten(jax.tree.structure(out_tree), out)


def lane_index(ref, idx: jax.Array, lane: jax.Array) -> tuple:
    """Index of ``ref`` [*lead, X, B] at rows ``idx`` [..., B] (or a scalar) of each lane: a
    tuple of broadcast index arrays giving [*lead, ..., B] (at most one leading axis)."""
    lead = ref.shape[:-2]
    idx = jnp.broadcast_to(idx, jnp.broadcast_shapes(jnp.shape(idx), lane.shape))
    lane = jnp.broadcast_to(lane, idx.shape)
    if not lead:
        return (idx, lane)
    (F,) = lead
    shape = (F, *idx.shape)
    f = lax.broadcasted_iota(jnp.int32, shape, 0)
    return (f, jnp.broadcast_to(idx[None], shape), jnp.broadcast_to(lane[None], shape))


def load(ref, idx, lane):
    """``ref[idx[lane], lane]`` per lane (see `lane_index`)."""
    return ref[lane_index(ref, idx, lane)]


def store(ref, idx, lane, val, mask=None) -> None:
    """``ref[idx[lane], lane] = val`` per lane, only where ``mask`` (None: everywhere)."""
    index = lane_index(ref, idx, lane)
    val = jnp.broadcast_to(jnp.asarray(val, ref.dtype), index[0].shape)
    if mask is None:
        ref[index] = val
    else:
        plgpu.store(ref.at[index], val, mask=jnp.broadcast_to(mask, index[0].shape))


def barrier(interpret: bool) -> Callable[[], None]:
    """The barrier between a step's phases: a CTA barrier on the GPU (a lane's writes may be
    read back by another thread of the program), nothing in the interpreter."""
    return (lambda: None) if interpret else plgpu.debug_barrier
