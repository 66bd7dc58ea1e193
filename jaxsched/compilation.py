"""Compiled-executable caches (lowest layer: imports nothing from jaxsched but its sibling
`jaxsched.store`).

`CompileCache` keeps ahead-of-time compiled executables by (function, static arguments,
argument shapes and dtypes), in memory and in an executable store on disk
(`jaxsched.store.ExecutableStore`: by default `jaxsched.store.default_store`, in
``$JAXSCHED_CACHE_DIR`` or ``~/.cache/jaxsched/executables``), so a later process loads them
instead of compiling. It counts and times compilations and loads, so every solver can report
compile time apart from run time. `COMPILED` is the process-wide instance used by the host
drivers (`jaxsched.schedule`, `jaxsched.makespan.estimate`).
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxsched.store import ExecutableStore, default_store, executable_key, open_store

#: Events a `CompileCache` keeps (the latest).
EVENTS_KEPT = 10_000


class CompileEvent(NamedTuple):
    """How one executable was obtained (`CompileCache.events`)."""

    function: str  # the jitted function's qualified name
    source: str  # "memory" (this process had it), "store" (loaded) or "compiled"
    trace_s: float  # seconds tracing (compiled only)
    lower_s: float  # seconds lowering (compiled only)
    compile_s: float  # seconds in XLA's compiler (compiled only)
    load_s: float  # seconds reading, checking and loading the store entry (store only)
    save_s: float  # seconds serializing and writing the store entry (compiled only)
    size: int  # bytes of the store entry read or written (0: none)


class CompileCache:
    """Compiled executables by (function, static arguments, argument shapes and dtypes): in
    memory, then in ``store``, else traced, lowered and compiled (and written to ``store``).

    Args:
      store: an `ExecutableStore`, None (memory only) or ``"default"``: `default_store` as
        the environment says at each miss (``$JAXSCHED_CACHE_DIR``).

    Attributes:
      compilations: number of executables compiled so far (loads not counted).
      compile_seconds: wall time spent compiling (tracing and lowering included).
      loads: number of executables loaded from the store.
      load_seconds: wall time spent loading them.
      saves / save_seconds / saved_bytes: entries written to the store, the time serializing
        and writing them, their bytes.
      events: the latest `CompileEvent` of each `compiled` call and of each miss of
        ``__call__`` (at most `EVENTS_KEPT`).
    """

    def __init__(self, store: ExecutableStore | str | None = "default") -> None:
        self._cache: dict = {}
        self.store = store
        self.compilations = 0
        self.compile_seconds = 0.0
        self.loads = 0
        self.load_seconds = 0.0
        self.saves = 0
        self.save_seconds = 0.0
        self.saved_bytes = 0
        self.events: deque[CompileEvent] = deque(maxlen=EVENTS_KEPT)

    def compiled(self, fn: Callable, static: dict, *args: Any) -> tuple[Callable, float]:
        """(the executable of jitted ``fn`` for ``args``, seconds spent getting it now:
        compiling or loading; 0.0 when this process had it). ``static`` holds ``fn``'s static
        keyword arguments."""
        return self._get(fn, static, args, record_hit=True)

    def __call__(self, fn: Callable, static: dict, *args: Any) -> Any:
        """Run jitted ``fn`` on ``args``, compiling (or loading) it first if needed."""
        exe, _ = self._get(fn, static, args, record_hit=False)
        return exe(*args)

    def _get(self, fn: Callable, static: dict, args: tuple, record_hit: bool):
        sig = jax.tree.map(lambda x: (jnp.shape(x), str(jnp.result_type(x))), args)
        key = (fn, tuple(sorted(static.items())), jax.tree.structure(args), str(sig))
        name = getattr(fn, "__qualname__", repr(fn))
        exe = self._cache.get(key)
        if exe is not None:
            if record_hit:
                self.events.append(
                    CompileEvent(
                        function=name,
                        source="memory",
                        trace_s=0.0,
                        lower_s=0.0,
                        compile_s=0.0,
                        load_s=0.0,
                        save_s=0.0,
                        size=0,
                    )
                )
            return exe, 0.0
        relieve_map_pressure()  # loaded executables hold memory maps too
        store = default_store() if self.store == "default" else self.store
        skey = None if store is None else executable_key(fn, static, args)
        loaded = None if skey is None else store.load(skey)
        if loaded is not None:
            exe, dt, event = self._loaded(loaded, name)
        else:
            exe, dt, event = self._compiled(fn, static, args, name, store, skey)
        self.events.append(event)
        self._cache[key] = exe
        return exe, dt

    def _loaded(self, loaded, name: str) -> tuple[Any, float, CompileEvent]:
        """Count an executable loaded from the store: (executable, seconds, event)."""
        self.loads += 1
        self.load_seconds += loaded.seconds
        event = CompileEvent(
            function=name,
            source="store",
            trace_s=0.0,
            lower_s=0.0,
            compile_s=0.0,
            load_s=loaded.seconds,
            save_s=0.0,
            size=loaded.size,
        )
        return loaded.executable, loaded.seconds, event

    def _compiled(
        self, fn: Callable, static: dict, args: tuple, name: str, store, skey
    ) -> tuple[Any, float, CompileEvent]:
        """Compile ``fn`` for ``args`` and save it to ``store`` under ``skey`` (if any):
        (executable, seconds, event)."""
        exe, (trace_s, lower_s, compile_s) = _compile(fn, static, args)
        dt = trace_s + lower_s + compile_s
        self.compilations += 1
        self.compile_seconds += dt
        t0 = time.perf_counter()
        size = 0 if skey is None else store.save(skey, exe)
        save_s = time.perf_counter() - t0 if size else 0.0
        self.saves += bool(size)
        self.save_seconds += save_s
        self.saved_bytes += size
        event = CompileEvent(
            function=name,
            source="compiled",
            trace_s=trace_s,
            lower_s=lower_s,
            compile_s=compile_s,
            load_s=0.0,
            save_s=save_s,
            size=size,
        )
        return exe, dt, event

    def clear(self) -> None:
        """Forget the executables held in memory (the store keeps its entries)."""
        self._cache.clear()


def _compile(fn: Callable, static: dict, args: tuple) -> tuple[Any, tuple[float, float, float]]:
    """(``fn`` compiled for ``args``, (trace, lower, compile) seconds)."""
    t0 = time.perf_counter()
    traced = fn.trace(*args, **static)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    exe = lowered.compile()
    t3 = time.perf_counter()
    return exe, (t1 - t0, t2 - t1, t3 - t2)


def use_store(path: str | None) -> ExecutableStore | None:
    """Point `COMPILED` at the store in ``path`` (`jaxsched.store.open_store`; None: the
    default store of the environment); the store in use, or None when there is none."""
    COMPILED.store = "default" if path is None else open_store(path)
    return default_store() if path is None else COMPILED.store


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
    ("LLVM compilation error: Cannot allocate memory") or crashes the process. Executables
    loaded from the store are mapped the same way. Dropped executables are loaded or compiled
    again when next needed."""
    usage = map_usage()
    if usage is None or usage <= threshold:
        return False
    COMPILED.clear()
    jax.clear_caches()
    gc.collect()  # executables in reference cycles unmap only when collected
    return True
