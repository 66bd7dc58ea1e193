"""The native ant construction: `construct.construct_ants` as one C++ XLA FFI custom call on
the CPU (``construct.cc``, shipped as source), identical results for identical inputs.

* **Build**: at first use, with the system C++ compiler (``$CXX``, else ``g++``, ``c++`` or
  ``clang++``), ``-O2 -march=native -ffp-contract=off`` (every float operation as written),
  into ``<executable store folder>/native`` (`jaxsched.store.store_dir`; a temporary folder
  when the store is off; ``$JAXSCHED_NATIVE_DIR`` overrides). The file name is a digest of the
  source, the jaxlib version, the compiler and its version, the flags and the host CPU; it is
  written to a temporary file and renamed (processes building at once never see a partial
  library).
* **Registration**: the FFI target `TARGET` is registered when the library is loaded: at
  import of this module when the library is already built (so executables that call it load
  from the executable store, `jaxsched.store`), else when a construction first needs it.
* **Identity**: the kernel mirrors the `lax` step's integer state machine and its float32
  scores operation by operation, each product rounded before it is added (the `lax` path
  rounds them apart behind `antstate.rounded`, whatever XLA's fusion). Scores are assumed positive
  (``score_floor > 0``, the default 1e-7): with scores <= 0 the exploiting pick of the `lax`
  path depends on its padded decision width, which the kernel does not have.
* **Batching**: `jax.vmap` broadcasts every operand (``vmap_method="broadcast_all"``); the
  kernel solves the batch's regions one after another, ants one after another, and skips
  regions whose ``active`` flag is False (their results are the initial state's).
* **Packed scalars**: the ``ints`` and ``floats`` operands are laid out by `INTS` and
  `FLOATS`, written once here: `pack` packs each value by name, the build generates the header
  ``construct_layout.h`` (`layout_header`) that the kernel reads each value through by name,
  the kernel checks the operands' sizes, and loading a library checks the layout it was built
  with (`check_layout`); the header is part of the library's digest.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jaxlib

from jaxsched.colony.construction.antstate import AntResults, StepInputs
from jaxsched.colony.construction.draws import make_seeds
from jaxsched.colony.construction.prepared import Prepared, static_weight_sum
from jaxsched.colony.params import ColonyParams
from jaxsched.store import host_cpu, store_dir

#: The FFI target's name.
TARGET = "jaxsched_construct"
#: The kernel's source.
SOURCE = Path(__file__).resolve().with_name("construct.cc")
#: Compiler flags (besides the include folder and the output).
FLAGS = ("-O2", "-march=native", "-ffp-contract=off", "-std=c++17", "-shared", "-fPIC")
#: Largest padded use / def count per instruction (and register file count) the kernel takes.
MAX_REGS_PER_INSTRUCTION = 64
#: The generated header's name (`layout_header`).
HEADER = "construct_layout.h"


class Layout(NamedTuple):
    """The order of one packed operand of the kernel: named scalars, then named per-file
    blocks of F values each. construct.cc reads each value by its name (`layout_header`)."""

    name: str  # the operand's name (and the header's namespace)
    scalars: tuple[str, ...]  # one value each, at offsets 0, 1, ...
    per_file: tuple[str, ...]  # F values each, after the scalars

    def size(self, files: int) -> int:
        """The operand's length for ``files`` register files."""
        return len(self.scalars) + len(self.per_file) * files


#: The ``ints`` operand (int32): pass kind (ILP 1), issue width, steps to run, region
#: active; the per-file RP limits.
INTS = Layout(
    name="ints",
    scalars=("timed", "issue_width", "num_steps", "active"),
    per_file=("rp_limit", "soft_limit"),
)
#: The ``floats`` operand (f32): the decision's constants (`decision._scores`; ``dynamic`` 1
#: when a kill, born or wait weight is set); the per-file kill and born weights.
FLOATS = Layout(
    name="floats",
    scalars=(
        "q0",
        "stall_budget",
        "static_weight_sum",
        "weight_last_use",
        "key_denominator",
        "weight_wait",
        "rp_damping",
        "overflow_damping",
        "score_floor",
        "dynamic",
    ),
    per_file=("weight_kill", "weight_born"),
)


def layout_text() -> str:
    """The layouts in one line: what a library built from them reports (`check_layout`)."""
    parts = [f"{x.name}: {' '.join(x.scalars)} | {' '.join(x.per_file)}" for x in (INTS, FLOATS)]
    return "; ".join([*parts, f"max_regs {MAX_REGS_PER_INSTRUCTION}"])


def layout_header() -> str:
    """The C++ header construct.cc includes (`HEADER`): per layout a namespace of its names'
    offsets (per-file names: block indices), ``size(F)`` and ``block(index, F)`` (a block's
    offset); ``kMaxRegs`` (`MAX_REGS_PER_INSTRUCTION`) and ``kText`` (`layout_text`)."""
    lines = [
        "// Generated by jaxsched.colony.construction.native.layout_header from INTS and FLOATS: "
        "do not edit.",
        "#pragma once",
        "#include <cstddef>",
        "#include <cstdint>",
        "namespace layout {",
        f"constexpr int32_t kMaxRegs = {MAX_REGS_PER_INSTRUCTION};",
        f'constexpr const char* kText = "{layout_text()}";',
    ]
    for x in (INTS, FLOATS):
        head, blocks = len(x.scalars), len(x.per_file)
        lines.append(f"namespace {x.name} {{")
        lines += [f"constexpr int32_t {name} = {k};" for k, name in enumerate(x.scalars)]
        lines += [f"constexpr int32_t {name} = {k};  // block" for k, name in enumerate(x.per_file)]
        lines += [
            "constexpr size_t size(int32_t files) {",
            f"  return {head} + {blocks} * static_cast<size_t>(files);",
            "}",
            "constexpr size_t block(int32_t index, int32_t files) {",
            f"  return {head} + static_cast<size_t>(index) * static_cast<size_t>(files);",
            "}",
            f"}}  // namespace {x.name}",
        ]
    return "\n".join([*lines, "}  // namespace layout", ""])


def pack(layout: Layout, values: dict[str, jax.Array], dtype: jnp.dtype) -> jax.Array:
    """dtype[layout.size(F)]: ``values`` in ``layout``'s order (scalars, then the per-file
    arrays [F]); its keys must be the layout's names."""
    names = (*layout.scalars, *layout.per_file)
    if set(values) != set(names) or len(set(names)) != len(names):
        raise ValueError(f"{layout.name}: values {sorted(values)} do not match the layout {names}")
    head = jnp.stack([jnp.asarray(values[k]).astype(dtype) for k in layout.scalars])
    return jnp.concatenate([head, *(jnp.asarray(values[k]).astype(dtype) for k in layout.per_file)])


#: What this process knows: "reason" (None: the target is registered; a string: why not),
#: "warned" (the `auto` fallback warning was given), "library" (the loaded library).
_status: dict = {}


class NativeWarning(RuntimeWarning):
    """The native construction is unavailable; "auto" runs the `lax` path."""


def find_compiler() -> str | None:
    """The C++ compiler: ``$CXX``, else the first of g++, c++, clang++ on the PATH."""
    cxx = os.environ.get("CXX")
    if cxx:
        return shutil.which(cxx)
    return next((p for c in ("g++", "c++", "clang++") if (p := shutil.which(c))), None)


def library_dir() -> Path:
    """Where built libraries go (see the module docstring)."""
    path = os.environ.get("JAXSCHED_NATIVE_DIR")
    if path:
        return Path(path)
    store = store_dir()
    if store is not None:
        return Path(store) / "native"
    return Path(tempfile.gettempdir()) / f"jaxsched-native-{os.getuid()}"


@functools.cache
def _compiler_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def library_path(cxx: str) -> Path:
    """The library built from `SOURCE` by ``cxx`` for this jaxlib and host CPU."""
    h = hashlib.sha256()
    for part in (
        SOURCE.read_bytes(),
        layout_header().encode(),
        jaxlib.__version__.encode(),
        cxx.encode(),
        _compiler_version(cxx).encode(),
        " ".join(FLAGS).encode(),
        host_cpu().encode(),
    ):
        h.update(part + b"\0")
    return library_dir() / f"construct-{h.hexdigest()[:24]}.so"


def build(cxx: str) -> Path:
    """Compile the library unless it exists (atomically: temporary file, then rename)."""
    path = library_path(cxx)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{uuid.uuid4().hex}.so")
    with tempfile.TemporaryDirectory(prefix="jaxsched-native-") as include:
        Path(include, HEADER).write_text(layout_header())
        cmd = [cxx, *FLAGS, "-I", jax.ffi.include_dir(), "-I", include, str(SOURCE)]
        cmd += ["-o", str(tmp)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if out.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return path


def check_layout(lib: ctypes.CDLL, path: Path) -> None:
    """Raise `RuntimeError` unless ``lib`` (loaded from ``path``) was built with this
    module's layouts: the text its ``JaxschedConstructLayout`` returns is `layout_text`."""
    try:
        report = lib.JaxschedConstructLayout
    except AttributeError:
        raise RuntimeError(f"{path} reports no layout (built from an older source)") from None
    report.restype = ctypes.c_char_p
    built = report().decode()
    if built != layout_text():
        raise RuntimeError(f"{path} was built with layout {built!r}, not {layout_text()!r}")


def _register(path: Path) -> None:
    lib = ctypes.cdll.LoadLibrary(str(path))
    check_layout(lib, path)
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.JaxschedConstruct), platform="cpu")
    _status["library"] = lib


def unavailable() -> str | None:
    """None when the native construction can run in this process (the library is built, or
    built now, and registered), else why not. Decided once per process."""
    if "reason" not in _status:
        try:
            if "library" not in _status:
                cxx = find_compiler()
                if cxx is None:
                    raise RuntimeError("no C++ compiler found ($CXX, g++, c++, clang++)")
                _register(build(cxx))
            _status["reason"] = None
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            _status["reason"] = f"the native construction cannot be built: {e}"
    return _status["reason"]


def warn_fallback(reason: str) -> None:
    """One `NativeWarning` per process: "auto" runs the `lax` path instead."""
    if not _status.get("warned"):
        _status["warned"] = True
        warnings.warn(f"{reason}; construction 'auto' runs 'lax'", NativeWarning, stacklevel=3)


def register_if_built() -> None:
    """Register the target when the library is already built (no compilation): executables
    that call it can then be loaded from the store. Silent when it is not."""
    cxx = find_compiler()
    if cxx is None or "library" in _status:
        return
    try:
        path = library_path(cxx)
        if path.exists():
            _register(path)
    except (OSError, RuntimeError, subprocess.SubprocessError):
        pass


def unsupported(prep: Prepared | None) -> str | None:
    """Why the kernel cannot run ``prep``'s shapes (None: it can)."""
    if prep is None:
        return None
    most = max(prep.uses.shape[-1], prep.defs.shape[-1])
    if most > MAX_REGS_PER_INSTRUCTION:
        return f"{most} registers per instruction (at most {MAX_REGS_PER_INSTRUCTION})"
    files = prep.live_through.shape[-1]
    if files > MAX_REGS_PER_INSTRUCTION:
        return f"{files} register files (at most {MAX_REGS_PER_INSTRUCTION})"
    return None


def _scalars(
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    num_steps: jax.Array,
    active: jax.Array | bool,
) -> tuple[jax.Array, jax.Array]:
    """The kernel's ``ints`` (int32[INTS.size(F)]) and ``floats`` (f32[FLOATS.size(F)])
    operands (`pack`). The key's weight sums are computed here with the `lax` path's
    expressions (`decision._scores`, `decision._dynamic_terms`), so they round alike."""
    F = prep.live_through.shape[0]
    wl = jnp.where(inp.timed, params.weight_last_use, params.weight_last_use_rp)
    ws = static_weight_sum(params)
    wk = jnp.broadcast_to(params.weight_kill, (F,))
    wb = jnp.broadcast_to(params.weight_born, (F,))
    w_extra = jnp.abs(wk).sum() + jnp.abs(wb).sum() + jnp.abs(params.weight_wait)
    den = jnp.maximum(ws + jnp.abs(wl) + w_extra, 1e-6)
    dynamic = (wk != 0).any() | (wb != 0).any() | (params.weight_wait != 0)
    ints = dict(
        timed=inp.timed,
        issue_width=inp.issue_width,
        num_steps=num_steps,
        active=active,
        rp_limit=inp.rp_limit,
        soft_limit=inp.soft_limit,
    )
    floats = dict(
        q0=inp.q0,
        stall_budget=inp.stall_budget,
        static_weight_sum=ws,
        weight_last_use=wl,
        key_denominator=den,
        weight_wait=params.weight_wait,
        rp_damping=params.rp_damping,
        overflow_damping=params.overflow_damping,
        score_floor=params.score_floor,
        dynamic=dynamic,
        weight_kill=wk,
        weight_born=wb,
    )
    return pack(INTS, ints, jnp.int32), pack(FLOATS, floats, jnp.float32)


def construct_ants_native(
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    key: jax.Array,
    num_steps: jax.Array,
    *,
    wavefronts: int,
    wavefront_size: int,
    uniform_exploration: jax.Array | bool,
    active: jax.Array | bool = True,
) -> AntResults:
    """`construct.construct_ants` by the native kernel (CPU): identical results for identical
    inputs (same seeds, `draws.make_seeds`). ``params``: pass parameters. ``active``
    False: no step runs (the results are the initial state's; the caller discards them).
    Raises `RuntimeError` when the kernel cannot be built (`unavailable`)."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    seeds = make_seeds(
        key,
        params,
        wavefronts=wavefronts,
        wavefront_size=wavefront_size,
        uniform_exploration=uniform_exploration,
    )
    A = wavefronts * wavefront_size
    N = prep.instr_sentinel
    F = prep.live_through.shape[0]
    ints, floats = _scalars(prep, inp, params, num_steps, active)
    seed_arr = jnp.stack([seeds.seed, seeds.coin, seeds.may_stall.astype(jnp.uint32)])
    i32 = jnp.int32
    out = (
        jax.ShapeDtypeStruct((A, N), i32),
        jax.ShapeDtypeStruct((A, F), i32),
        jax.ShapeDtypeStruct((A,), i32),
        jax.ShapeDtypeStruct((A,), i32),
        jax.ShapeDtypeStruct((A,), jnp.bool_),
    )
    call = jax.ffi.ffi_call(TARGET, out, vmap_method="broadcast_all")
    ints32 = [
        jnp.asarray(getattr(prep, f), i32)
        for f in ("n", "succ", "succ_lat", "num_preds", "uses", "defs", "def_wf", "reg_wf",
                  "reg_num_uses", "reg_users_xor")
    ]  # fmt: skip
    live = [jnp.asarray(x, jnp.bool_) for x in (prep.reg_live_in, prep.reg_live_out)]
    roots = [jnp.asarray(x, i32) for x in (prep.live_through, prep.init_ready, prep.init_count)]
    tau = inp.tau if inp.tau.dtype == jnp.float16 else inp.tau.astype(jnp.float32)
    order, peak, length, stalls, dead = call(
        *ints32, *live, *roots, jnp.asarray(prep.init_kill, i32), tau,
        inp.key.astype(jnp.float32), ints, floats, seed_arr,
    )  # fmt: skip
    return AntResults(order=order, peak=peak, length=length, stalls=stalls, dead=dead)


register_if_built()
