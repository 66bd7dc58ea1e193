"""The compile cache under memory-map pressure: XLA:CPU maps every compiled kernel apart, so a
long-lived process must drop cached executables before it reaches the kernel's map limit."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import pytest

from jaxsched import compilation
from jaxsched.compilation import COMPILED, map_usage, relieve_map_pressure


@jax.jit
def _poly(x):
    return jnp.sin(x) * jnp.cos(x) + x**3


def test_map_usage_is_a_share_of_the_limit():
    usage = map_usage()
    if sys.platform.startswith("linux"):
        assert usage is not None and 0.0 < usage < 1.0
    else:
        assert usage is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_pressure_drops_cached_executables_and_their_maps():
    before = map_usage()
    for n in range(1, 9):  # eight executables, each with its own mapped kernels
        COMPILED(_poly, {}, jnp.ones(n))
    grown = map_usage()
    assert grown > before and len(COMPILED._cache) >= 8
    assert not relieve_map_pressure(threshold=1.0)  # under the threshold: nothing dropped
    assert len(COMPILED._cache) >= 8
    assert relieve_map_pressure(threshold=0.0)
    assert len(COMPILED._cache) == 0 and map_usage() < grown
    assert float(COMPILED(_poly, {}, jnp.ones(2))[0]) == pytest.approx(
        float(_poly(jnp.ones(2))[0])
    )  # compiled again on demand


def test_a_compile_under_pressure_clears_first(monkeypatch):
    COMPILED(_poly, {}, jnp.ones(3))
    monkeypatch.setattr(compilation, "map_usage", lambda: 0.99)
    before = COMPILED.compilations + COMPILED.loads
    COMPILED.compiled(_poly, {}, jnp.ones(5))  # a miss: relieves, then compiles (or loads)
    assert COMPILED.compilations + COMPILED.loads == before + 1 and len(COMPILED._cache) == 1
