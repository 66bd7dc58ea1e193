"""Compiled-executable caches (lowest layer: imports nothing from jaxsched).

`CompileCache` keeps ahead-of-time compiled executables by (function, static arguments,
argument shapes and dtypes), and counts and times compilations, so every solver can report
compile time apart from run time. `COMPILED` is the process-wide instance used by the host
drivers (`jaxsched.schedule`, `jaxsched.makespan.estimate`). `enable_persistent_cache` keeps
compiled XLA executables on disk across processes (`jaxsched.schedule` and the CLI turn it on
by default: `ensure_persistent_cache`).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


class CompileCache:
    """Compiled executables by (function, static arguments, argument shapes and dtypes).

    Attributes:
      compilations: number of compilations so far.
      compile_seconds: wall time spent compiling (lowering included).
    """

    def __init__(self) -> None:
        self._cache: dict = {}
        self.compilations = 0
        self.compile_seconds = 0.0

    def compiled(self, fn: Callable, static: dict, *args: Any) -> tuple[Callable, float]:
        """(the executable of jitted ``fn`` for ``args``, seconds spent compiling it now: 0.0
        on a cache hit). ``static`` holds ``fn``'s static keyword arguments."""
        sig = jax.tree.map(lambda x: (jnp.shape(x), str(jnp.result_type(x))), args)
        key = (fn, tuple(sorted(static.items())), jax.tree.structure(args), str(sig))
        exe = self._cache.get(key)
        if exe is not None:
            return exe, 0.0
        relieve_map_pressure()
        t0 = time.perf_counter()
        exe = fn.lower(*args, **static).compile()
        dt = time.perf_counter() - t0
        self.compile_seconds += dt
        self.compilations += 1
        self._cache[key] = exe
        return exe, dt

    def __call__(self, fn: Callable, static: dict, *args: Any) -> Any:
        """Run jitted ``fn`` on ``args``, compiling it first if needed."""
        exe, _ = self.compiled(fn, static, *args)
        return exe(*args)

    def clear(self) -> None:
        self._cache.clear()


#: The process-wide cache of the host drivers.
COMPILED = CompileCache()

#: The share of the kernel's per-process memory-map limit above which cached executables go.
MAP_PRESSURE = 0.5


def map_usage() -> float | None:
    """The share of the per-process memory-map limit (Linux ``vm.max_map_count``) in use,
    or None where the platform does not say."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            limit = int(f.read())
        with open("/proc/self/maps", "rb") as f:
            used = sum(1 for _ in f)
    except (OSError, ValueError):
        return None
    return used / limit if limit > 0 else None


def relieve_map_pressure(threshold: float = MAP_PRESSURE) -> bool:
    """Drop every cached executable (`COMPILED` and jax's caches) when the process uses more
    than ``threshold`` of its memory-map limit; True when it did.

    XLA:CPU maps each compiled kernel's code and data apart (about three maps per kernel,
    thousands per colony executable), and the maps live as long as the executable. A process
    that keeps compiling new shapes (a long benchmark, a training run with validation, a test
    worker) reaches Linux's default limit of 65,530 maps, and its next compile fails
    ("LLVM compilation error: Cannot allocate memory") or crashes the process. Dropped
    executables are compiled again when next needed."""
    usage = map_usage()
    if usage is None or usage <= threshold:
        return False
    COMPILED.clear()
    jax.clear_caches()
    gc.collect()  # executables in reference cycles unmap only when collected
    return True


def enable_persistent_cache(path: str | None = None) -> str | None:
    """Keep compiled XLA executables across processes in ``path``.

    Without ``path``: ``$JAXSCHED_CACHE_DIR`` when set (``off`` disables the cache), else
    ``~/.cache/jaxsched/xla`` on GPU and TPU backends. On the CPU backend the cache is opt-in
    (an explicit ``path`` or ``$JAXSCHED_CACHE_DIR``): loading XLA:CPU executables from disk
    has crashed processes with a segmentation fault (jax 0.12), a price a recompile never costs.

    Returns the directory in use, or None when disabled or not writable.
    """
    if path is None:
        path = os.environ.get("JAXSCHED_CACHE_DIR")
        if path is None:
            if jax.default_backend() == "cpu":
                return None
            path = os.path.expanduser("~/.cache/jaxsched/xla")
    if path.lower() in ("", "off", "none", "0"):
        return None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path


def ensure_persistent_cache() -> str | None:
    """`enable_persistent_cache` with the defaults unless a cache directory is already set
    (by the caller or an earlier call); returns the directory in use."""
    current = jax.config.jax_compilation_cache_dir
    return current if current else enable_persistent_cache()
