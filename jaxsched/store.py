"""Compiled XLA executables on disk (lowest layer: imports nothing from jaxsched).

An `ExecutableStore` keeps the executables `jaxsched.compilation.CompileCache` compiles, so a
later process loads them (a fraction of a second) instead of tracing, lowering and compiling
them again (seconds each for the colony). An entry is found by a key computed from the call
alone, without tracing (`executable_key`): the jitted function's identity and source, its
static arguments, the arguments' structure, shapes, dtypes, weak types and multi-device
shardings, and the environment (`environment`: jaxsched's source, jax and jaxlib versions,
backend, devices, host CPU, ``XLA_FLAGS`` and the jax options that change compiled code). A
stale entry is never hit: its key differs.

Entry file ``<key>.xla``: `HEADER` (magic, format version, JSON and payload lengths, sha256 of
JSON and payload), a JSON of the key's parts (for people), and the payload: a pickle of
``jax.experimental.serialize_executable.serialize``'s (bytes, in_tree, out_tree). Writes go to
a temporary file in the same folder, then ``os.replace`` (atomic): processes filling a store
together never corrupt it and readers never see partial files. An entry that fails any check,
or to unpickle or load, is reported (`StoreWarning`, naming the file), deleted and rebuilt:
corrupt object code is never loaded. The store is bounded: above ``max_bytes`` the least
recently used entries go (a hit touches its file).

Executables over several devices (meshes, `jax.shard_map`; several processes after
`jax.distributed.initialize`, each its own entry) are stored and loaded on the same devices in
the same order; tested on forced CPU devices, in one process and in two. Loading runs code
from the file: a store folder must be as trusted as the code itself (it is the user's own
cache).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import io
import json
import os
import pickle
import platform
import re
import struct
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jaxlib
from jax.experimental.serialize_executable import deserialize_and_load, serialize

#: Entry header: magic, format version, JSON length, payload length, sha256(JSON + payload).
HEADER = struct.Struct("<16sIIQ32s")
MAGIC = b"jaxsched-xla-exe"
FORMAT_VERSION = 1
#: Entry file suffix (temporary files start with ``.tmp-`` and end otherwise).
SUFFIX = ".xla"
#: Default size cap of a store (bytes): least recently used entries above it are deleted.
DEFAULT_MAX_BYTES = 2 * 1024**3
#: Backends whose executables are stored by default.
PLATFORMS = ("cpu", "cuda", "rocm", "gpu")
#: Values of ``$JAXSCHED_CACHE_DIR`` that turn the store off.
OFF = ("", "off", "0", "none")
#: Seconds after which a temporary file is taken for a dead writer's and deleted.
STALE_TEMP_SECONDS = 3600.0
#: jax options that do not change compiled code (prefixes): left out of the key.
NEUTRAL_OPTIONS = (
    "jax_compilation_cache",
    "jax_persistent_cache",
    "jax_enable_compilation_cache",
    "jax_raise_persistent_cache_errors",
    "jax_log",
    "jax_debug_log_modules",
    "jax_compiler_detailed_logging",
    "jax_explain_cache_misses",
    "jax_dump",
    "jax_include_debug_info_in_dumps",
    "jax_traceback",
    "jax_tracer_error",
    "jax_include_full_tracebacks_in_locations",
    "jax_hlo_source_file_canonicalization_regex",
    "jax_source_url_schema",
    "jax_pprint",
    "jax_transfer_guard",
    "jax_check_tracer_leaks",
    "jax_captured_constants",
    "jax_distributed",
    "jax_mtls",
    "jax_cross_host",
    "jax_cpu_get_",
    "jax_enable_preemption_service",
)
#: An object's default repr (its address): not an identity that survives the process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class StoreWarning(RuntimeWarning):
    """An entry of the store was unreadable (and rebuilt), or the store is unusable."""


class StoreKey(NamedTuple):
    """Where a call's executable lives in a store."""

    digest: str  # sha256 (hex) of ``parts``
    parts: dict  # the key's components (JSON-able strings), recorded in the entry
    devices: tuple[int, ...]  # ids of the devices the executable runs on, in order


class Loaded(NamedTuple):
    """An executable loaded from a store."""

    executable: Any  # jax.stages.Compiled
    seconds: float  # reading, checking and loading
    size: int  # bytes of the entry file


@functools.cache
def package_source_digest() -> str:
    """sha256 over jaxsched's .py and .cc files (paths and contents: the native kernels' C++
    source is code that stored executables call); computed once per process."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted([*root.rglob("*.py"), *root.rglob("*.cc")]):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@functools.cache
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.cache
def host_cpu() -> str:
    """The host CPU: model name and a digest of its feature flags (``/proc/cpuinfo``), or
    what `platform` says where that file is absent."""
    model, flags = "", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name in ("model name", "cpu model", "cpu implementer", "cpu part") and not model:
                    model = value.strip()
                elif name in ("flags", "features") and not flags:
                    flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    model = model or platform.processor() or platform.machine()
    return f"{model}; {platform.machine()}; flags {hashlib.sha256(flags.encode()).hexdigest()}"


@functools.cache
def environment() -> dict[str, str]:
    """The parts of the key that hold for the whole process (needs the backend)."""
    dev = jax.devices()[0]
    return {
        "format": str(FORMAT_VERSION),
        "jaxsched_source": package_source_digest(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "platform": dev.client.platform,
        "platform_version": dev.client.platform_version,
        "device_kind": dev.device_kind,
        "devices": str(len(jax.devices())),
        "process": f"{jax.process_index()} of {jax.process_count()}",
        "host_cpu": host_cpu(),
    }


def jax_options() -> str:
    """The jax options that may change compiled code (every option but `NEUTRAL_OPTIONS`),
    as they read now, and ``$XLA_FLAGS``."""
    holders = getattr(jax.config, "_value_holders", {})
    values = {}
    for name in sorted(jax.config.values):
        if not name.startswith(NEUTRAL_OPTIONS):
            values[name] = holders[name].value if name in holders else jax.config.values[name]
    return f"{values!r}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')}"


def function_identity(fn: Callable) -> str | None:
    """Module, qualified name, jit options and (outside jaxsched) source file digest of jitted
    ``fn``; None when that does not identify it across processes (a lambda, a local
    function, a file-less function). Code ``fn`` calls is covered by jaxsched's source digest
    (`environment`) and the versions of jax; other files it calls are not."""
    name = getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    if not name or not module or "<" in name:
        return None
    ident = f"{module}.{name}; {getattr(fn, '_jit_info', '')!r}"
    if module != "jaxsched" and not module.startswith("jaxsched."):
        try:
            path = inspect.getsourcefile(inspect.unwrap(fn))
        except TypeError:
            path = None
        if path is None or not os.path.isfile(path):
            return None
        ident += f"; source {_file_digest(path)}"
    return ident


def _sharding_ids(sharding: Any) -> tuple[int, ...]:
    """Device ids of a sharding, in mesh order where it has a mesh."""
    mesh = getattr(sharding, "mesh", None)
    if mesh is not None and hasattr(mesh, "device_ids"):
        return tuple(int(i) for i in mesh.device_ids.flat)
    return tuple(sorted(d.id for d in sharding.device_set))


def _leaf(x: Any) -> tuple[str, tuple[int, ...] | None]:
    """(type of leaf ``x``: shape, dtype, weak type, and its sharding when over several
    devices; the devices of its sharding, or None when it has none)."""
    aval = str(jax.typeof(x))
    sharding = getattr(x, "sharding", None)
    if sharding is None:
        return aval, None
    ids = _sharding_ids(sharding)
    if len(ids) > 1:
        aval += f" {sharding!r} devices {list(ids)}"
    return aval, ids


def _static_repr(value: Any) -> str:
    mesh_ids = getattr(value, "device_ids", None)
    if mesh_ids is not None:  # a Mesh: its repr leaves out the devices
        return f"{value!r} devices {mesh_ids.tolist()}"
    return repr(value)


def executable_key(fn: Callable, static: dict, args: tuple) -> StoreKey | None:
    """The store key of ``fn.lower(*args, **static).compile()``, from the arguments alone (no
    tracing); None when the call is not stored: ``fn`` has no identity across processes
    (`function_identity`), a static argument or sharding prints an address, or a backend
    outside `PLATFORMS`."""
    ident = function_identity(fn)
    if ident is None:
        return None
    env = environment()
    if env["platform"] not in PLATFORMS:
        return None
    leaves = [_leaf(x) for x in jax.tree.leaves(args)]
    devices = next((ids for _, ids in leaves if ids is not None), None)
    if devices is None:
        default = jax.config.jax_default_device
        devices = (default.id,) if hasattr(default, "id") else (jax.local_devices()[0].id,)
    parts = {
        **env,
        "function": ident,
        "static": repr([(k, _static_repr(v)) for k, v in sorted(static.items())]),
        "tree": str(jax.tree.structure(args)),
        "leaves": repr([a for a, _ in leaves]),
        "execution_devices": repr(list(devices)),
        "options": jax_options(),
    }
    if any(_ADDRESS.search(v) for v in parts.values()):
        return None
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return StoreKey(digest=digest, parts=parts, devices=tuple(devices))


class CorruptEntry(Exception):
    """An entry file that fails a check (internal to `ExecutableStore.load`)."""


def _entry_bytes(key: StoreKey, compiled: Any) -> bytes:
    """The entry file of ``compiled`` under ``key`` (header, JSON, payload)."""
    payload = pickle.dumps(serialize(compiled), protocol=pickle.HIGHEST_PROTOCOL)
    meta = {"key": key.digest, "devices": list(key.devices), "parts": key.parts}
    text = json.dumps(meta, sort_keys=True, indent=1).encode()
    digest = hashlib.sha256(text + payload).digest()
    return HEADER.pack(MAGIC, FORMAT_VERSION, len(text), len(payload), digest) + text + payload


def _parse_entry(data: bytes, key: StoreKey) -> tuple[dict, bytes]:
    """(the JSON, the payload) of entry file contents ``data``; `CorruptEntry` when a check
    fails."""
    if len(data) < HEADER.size:
        raise CorruptEntry(f"{len(data)} bytes, shorter than the header")
    magic, version, n_text, n_payload, digest = HEADER.unpack_from(data)
    if magic != MAGIC or version != FORMAT_VERSION:
        raise CorruptEntry(f"bad magic or format version ({magic!r}, {version})")
    if len(data) != HEADER.size + n_text + n_payload:
        raise CorruptEntry(f"{len(data)} bytes, the header says {HEADER.size + n_text + n_payload}")
    body = memoryview(data)[HEADER.size :]
    if hashlib.sha256(body).digest() != digest:
        raise CorruptEntry("checksum mismatch")
    meta = json.loads(bytes(body[:n_text]))
    if meta.get("key") != key.digest:
        raise CorruptEntry(f"holds key {meta.get('key')}")
    return meta, bytes(body[n_text:])


def _runs_on(compiled: Any, devices: tuple[int, ...]) -> bool:
    """Whether ``compiled`` runs on this process's devices among ``devices``, in their order
    (True where jax does not say)."""
    try:
        ids = tuple(d.id for d in compiled.runtime_executable().local_devices())
    except (AttributeError, TypeError):
        return True
    local = {d.id for d in jax.local_devices()}
    return ids == tuple(i for i in devices if i in local)


class ExecutableStore:
    """Compiled executables in the folder ``path`` (created when missing), at most about
    ``max_bytes`` of them (least recently used first out).

    `load` returns a stored executable or None (a miss; an unreadable entry is reported with
    a `StoreWarning`, deleted, and missed); `save` writes one atomically. A failed write
    warns once and turns writing off for this object.
    """

    def __init__(self, path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = int(max_bytes)
        self.writable = True
        self.path.mkdir(parents=True, exist_ok=True)

    def entry(self, key: StoreKey) -> Path:
        """The file of ``key``'s entry."""
        return self.path / f"{key.digest}{SUFFIX}"

    def entries(self) -> list[Path]:
        """The entry files now in the store."""
        return sorted(self.path.glob(f"*{SUFFIX}"))

    def load(self, key: StoreKey) -> Loaded | None:
        """``key``'s executable loaded on its devices, or None when absent or unreadable."""
        path, t0 = self.entry(key), time.perf_counter()
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            return self._reject(path, f"unreadable ({e})")
        try:
            meta, payload = _parse_entry(data, key)
            serialized, in_tree, out_tree = pickle.loads(payload)
            by_id = {d.id: d for d in jax.devices()}
            devices = [by_id[i] for i in meta["devices"]]
            exe = deserialize_and_load(serialized, in_tree, out_tree, execution_devices=devices)
        except Exception as e:  # any failure to read back an entry is a miss, never a crash
            return self._reject(path, f"{type(e).__name__}: {e}")
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        return Loaded(executable=exe, seconds=time.perf_counter() - t0, size=len(data))

    def _reject(self, path: Path, why: str) -> None:
        warnings.warn(
            f"executable store: {path} is unusable ({why[:300]}); deleting it and compiling again",
            StoreWarning,
            stacklevel=4,
        )
        _unlink(path)
        return None

    def save(self, key: StoreKey, compiled: Any) -> int:
        """Write ``compiled`` under ``key``; the entry's size in bytes, 0 when not written
        (an executable jax cannot serialize, or one on other devices than the key says)."""
        if not self.writable or not _runs_on(compiled, key.devices):
            return 0
        try:
            data = _entry_bytes(key, compiled)
        except (ValueError, NotImplementedError, TypeError, pickle.PicklingError):
            return 0  # not serializable (e.g. closed-over constants)
        try:
            self._write(self.entry(key), data)
        except OSError as e:
            self.writable = False
            warnings.warn(
                f"executable store: cannot write to {self.path} ({e}); running without it",
                StoreWarning,
                stacklevel=3,
            )
            return 0
        self.evict()
        return len(data)

    def _write(self, path: Path, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically (temporary file, then rename)."""
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-", suffix=".part")
        os.fchmod(fd, 0o644)  # readable like any cache file (mkstemp makes it private)
        try:
            with io.FileIO(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            _unlink(Path(tmp))
            raise

    def evict(self) -> int:
        """Delete least recently used entries while the store holds over ``max_bytes``, and
        temporary files older than `STALE_TEMP_SECONDS`; the number of files deleted."""
        files, total, now = [], 0, time.time()
        gone = 0
        for p in self.path.iterdir():
            try:
                st = p.stat()
            except OSError:
                continue  # deleted meanwhile
            if p.name.endswith(SUFFIX):
                files.append((st.st_mtime, st.st_size, p))
                total += st.st_size
            elif p.name.startswith(".tmp-") and now - st.st_mtime > STALE_TEMP_SECONDS:
                gone += _unlink(p)
        for _, size, p in sorted(files):
            if total <= self.max_bytes:
                break
            gone += _unlink(p)
            total -= size
        return gone

    def clear(self) -> None:
        """Delete every entry."""
        for p in self.entries():
            _unlink(p)


def _unlink(path: Path) -> int:
    try:
        path.unlink()
    except OSError:
        return 0
    return 1


def store_dir() -> str | None:
    """The default store's folder: ``$JAXSCHED_CACHE_DIR`` when set (`OFF` values: None),
    else ``$XDG_CACHE_HOME/jaxsched/executables`` or ``~/.cache/jaxsched/executables``."""
    path = os.environ.get("JAXSCHED_CACHE_DIR")
    if path is not None:
        return None if path.strip().lower() in OFF else path
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxsched", "executables")


#: Stores opened by `default_store`, by folder (None: that folder was unusable).
_OPENED: dict[str, ExecutableStore | None] = {}


def open_store(path: str) -> ExecutableStore | None:
    """The store in ``path`` (one object per folder and process), or None after one
    `StoreWarning` when it cannot be created or written."""
    if path not in _OPENED:
        try:
            store = ExecutableStore(path)
            fd, probe = tempfile.mkstemp(dir=store.path, prefix=".tmp-", suffix=".probe")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            warnings.warn(
                f"executable store: cannot use {path} ({e}); running without it",
                StoreWarning,
                stacklevel=2,
            )
            store = None
        _OPENED[path] = store
    return _OPENED[path]


def default_store() -> ExecutableStore | None:
    """The store `store_dir` names (read at each call), or None when off or unusable."""
    path = store_dir()
    return None if path is None else open_store(path)
