"""The ants' random numbers: two 32-bit hashes per ant-step of a per-ant seed (drawn once per
iteration from the caller's key with `jax.random.bits`) and the step number; no key splitting
in the loop. The RP pass's exploration coin hashes a per-wavefront seed, so a wavefront shares
it."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsched.colony.construction.antstate import rounded
from jaxsched.colony.params import ColonyParams


class AntSeeds(NamedTuple):
    seed: jax.Array  # uint32[A]: roulette randomness
    coin: jax.Array  # uint32[A]: exploitation coin (equal within a wavefront when uniform)
    may_stall: jax.Array  # bool[A]: ant's wavefront may take optional stalls


def hash32(bits: jax.Array) -> jax.Array:
    """A 32-bit integer mixer (lowbias32); uint32 -> uint32."""
    bits = bits ^ (bits >> 16)
    bits = bits * jnp.uint32(0x7FEB352D)
    bits = bits ^ (bits >> 15)
    bits = bits * jnp.uint32(0x846CA68B)
    return bits ^ (bits >> 16)


def uniform(seed: jax.Array, step: jax.Array) -> jax.Array:
    """f32 in [0, 1) from uint32 seeds and a step counter (elementwise)."""
    bits = hash32(seed + step.astype(jnp.uint32) * jnp.uint32(0x9E3779B9))
    return (bits >> 8).astype(jnp.float32) * jnp.float32(1.0 / (1 << 24))


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
    (stall_waves,) = rounded(params.stall_fraction * wavefronts)
    n_stall_waves = jnp.floor(stall_waves + 0.5).astype(jnp.int32)
    return AntSeeds(
        seed=jax.random.bits(k_ant, (ants,), jnp.uint32), coin=coin, may_stall=wave < n_stall_waves
    )
