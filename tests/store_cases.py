"""Executable-store cases run in fresh processes by tests/test_store.py.

``python tests/store_cases.py CASE STORE`` prints one JSON object: per call the result's bytes
(hex) and the process's `CompileCache` counters after it, and the warnings seen.

Cases: ``fill`` (`poly` for every shape of `SHAPES`), ``one`` (`poly` for shape 3, then
``fill``), ``colony`` (`jaxsched.schedule` on one small region that reaches the colony,
checked by the verifier; the store is then ``$JAXSCHED_CACHE_DIR``).
"""

from __future__ import annotations

import json
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.compilation import COMPILED, CompileCache
from jaxsched.store import ExecutableStore

#: Argument lengths of the ``fill`` case (one executable each).
SHAPES = (1, 2, 3, 4, 5, 6)


@jax.jit
def poly(x: jax.Array, y: jax.Array) -> jax.Array:
    """float32[n], float32[n] -> float32[n]."""
    return jnp.sin(x) * y + x**3 - jnp.cumsum(y)


def _args(n: int) -> tuple[jax.Array, jax.Array]:
    x = jnp.linspace(-1.0, 1.0, n, dtype=jnp.float32)
    return x, jnp.cos(3.0 * x)


def _counts(cache: CompileCache) -> dict:
    return {"compilations": cache.compilations, "loads": cache.loads, "saves": cache.saves}


def small(case: str, store: str) -> list[dict]:
    cache = CompileCache(store=ExecutableStore(store))
    out = []
    for n in (3, *SHAPES) if case == "one" else SHAPES:
        result = np.asarray(cache(poly, {}, *_args(n)))
        out.append({"n": n, "bytes": result.tobytes().hex(), **_counts(cache)})
    return out


def colony() -> list[dict]:
    import jaxsched
    from jaxsched.problem.generate import generate_region

    region, machine = generate_region(3, 24), jaxsched.gfx906()
    # the colony runs (no filters, the input order as the only start): a settled region
    # would need no executable at all
    kw = dict(ants=64, max_iterations=4, filters=False, starts=("input",))
    res = jaxsched.schedule([region], machine, seed=1, **kw)
    for r in res:
        jaxsched.verify(region, machine, r.cycles, order=r.order)
        assert sum(r.iterations) > 0
    timing = ("compile_seconds", "run_seconds")
    records = [{k: v for k, v in r.to_dict().items() if k not in timing} for r in res]
    return [{"records": records, **_counts(COMPILED)}]


def main(case: str, store: str) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        calls = colony() if case == "colony" else small(case, store)
    print(json.dumps({"calls": calls, "warnings": [str(w.message) for w in seen]}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
