"""ctypes front end of ``colony_baseline.c``, the sequential C construction (benchmark only).

`build()` compiles the C file with the system compiler into a temporary directory;
`CBaseline.construct` runs A ants one after another on the arrays of a
`jaxsched.colony.construction.prepared.Prepared` (the same instance the JAX ants solve) and returns
``(order int32[A, N], peak int32[A, F], length int32[A], stalls int32[A], dead bool[A])``, the
fields of `jaxsched.colony.construction.antstate.AntResults`.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from jaxsched.colony.construction.antstate import StepInputs
from jaxsched.colony.construction.draws import AntSeeds
from jaxsched.colony.construction.prepared import Prepared
from jaxsched.colony.params import ColonyParams

SOURCE = Path(__file__).resolve().parent / "colony_baseline.c"
CFLAGS = ("-O2", "-march=native", "-shared", "-fPIC")

_i32p = ctypes.POINTER(ctypes.c_int32)
_u32p = ctypes.POINTER(ctypes.c_uint32)
_u8p = ctypes.POINTER(ctypes.c_uint8)
_f32p = ctypes.POINTER(ctypes.c_float)


class BaselineError(RuntimeError):
    """The C baseline could not be built or run."""


class _Problem(ctypes.Structure):
    """Mirror of ``Problem`` in colony_baseline.c (same field order)."""

    _fields_ = [
        *[(f, ctypes.c_int32) for f in ("N", "K", "R", "F", "D", "U", "V", "n")],
        ("issue_width", ctypes.c_int32),
        ("succ", _i32p),
        ("succ_lat", _i32p),
        ("num_preds", _i32p),
        ("uses", _i32p),
        ("defs", _i32p),
        ("def_wf", _i32p),
        ("reg_wf", _i32p),
        ("reg_num_uses", _i32p),
        ("reg_users_xor", _i32p),
        ("reg_live_in", _u8p),
        ("reg_live_out", _u8p),
        ("live_through", _i32p),
        ("key", _f32p),
        ("init_ready", _i32p),
        ("init_count", ctypes.c_int32),
        ("init_kill", _i32p),
        ("tau", _f32p),
        ("q0", ctypes.c_float),
        ("stall_budget", ctypes.c_float),
        ("rp_limit", _i32p),
        ("soft_limit", _i32p),
        ("weight_cp", ctypes.c_float),
        ("weight_successors", ctypes.c_float),
        ("weight_last_use", ctypes.c_float),
        ("rp_damping", ctypes.c_float),
        ("overflow_damping", ctypes.c_float),
        ("score_floor", ctypes.c_float),
        ("timed", ctypes.c_int32),
        ("stop_dead", ctypes.c_int32),
    ]


def _ptr(a: np.ndarray, ctype) -> ctypes._Pointer:
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def build(workdir: str | Path | None = None, cc: str | None = None) -> tuple[CBaseline, float]:
    """Compile the baseline; returns (library wrapper, compile seconds)."""
    import time

    cc = cc or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise BaselineError("no C compiler (cc, gcc or clang) on PATH")
    out_dir = Path(workdir or tempfile.mkdtemp(prefix="jaxsched-colony-c-"))
    lib = out_dir / "libcolony_baseline.so"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [cc, *CFLAGS, str(SOURCE), "-o", str(lib)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise BaselineError(f"{cc} failed on {SOURCE}:\n{proc.stderr}")
    return CBaseline(lib), time.perf_counter() - t0


class CBaseline:
    """The compiled sequential construction."""

    def __init__(self, path: Path) -> None:
        self._lib = ctypes.CDLL(str(path))
        fn = self._lib.colony_construct
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(_Problem), ctypes.c_int32, _u32p, _u32p, _u8p]
        fn.argtypes += [_i32p, _i32p, _i32p, _i32p, _u8p]
        self._fn = fn

    def construct(
        self,
        prep: Prepared,
        inp: StepInputs,
        params: ColonyParams,
        seeds: AntSeeds,
        *,
        issue_width: int,
        stop_dead: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All ants (one per seed) build one schedule each, sequentially; the pass is
        ``inp.timed`` (ILP pass when True).

        ``stop_dead``: a dead ant stops at once (what a sequential code would do); False runs
        it to the end like the JAX ants, so orders can be compared one to one.
        """
        timed = bool(inp.timed)
        i32 = lambda x: np.ascontiguousarray(np.asarray(x), np.int32)  # noqa: E731
        u8 = lambda x: np.ascontiguousarray(np.asarray(x), np.uint8)  # noqa: E731
        f32 = lambda x: np.ascontiguousarray(np.asarray(x), np.float32)  # noqa: E731
        keep = dict(
            succ=i32(prep.succ),
            succ_lat=i32(prep.succ_lat),
            num_preds=i32(prep.num_preds),
            uses=i32(prep.uses),
            defs=i32(prep.defs),
            def_wf=i32(prep.def_wf),
            reg_wf=i32(prep.reg_wf),
            reg_num_uses=i32(prep.reg_num_uses),
            reg_users_xor=i32(prep.reg_users_xor),
            reg_live_in=u8(prep.reg_live_in),
            reg_live_out=u8(prep.reg_live_out),
            live_through=i32(prep.live_through),
            key=f32(inp.key),
            init_ready=i32(prep.init_ready),
            init_kill=i32(prep.init_kill),
            tau=f32(inp.tau),
            rp_limit=i32(inp.rp_limit),
            soft_limit=i32(inp.soft_limit),
        )
        N = keep["succ"].shape[0] - 1
        F = keep["live_through"].shape[0]
        prob = _Problem(
            N=N,
            K=keep["init_ready"].shape[0] - 1,
            R=keep["reg_wf"].shape[0] - 1,
            F=F,
            D=keep["succ"].shape[1],
            U=keep["uses"].shape[1],
            V=keep["defs"].shape[1],
            n=int(prep.n),
            issue_width=issue_width,
            init_count=int(prep.init_count),
            q0=float(inp.q0),
            stall_budget=float(inp.stall_budget),
            weight_cp=float(params.weight_cp),
            weight_successors=float(params.weight_successors),
            weight_last_use=float(params.weight_last_use if timed else params.weight_last_use_rp),
            rp_damping=float(params.rp_damping),
            overflow_damping=float(params.overflow_damping),
            score_floor=float(params.score_floor),
            timed=int(timed),
            stop_dead=int(stop_dead),
        )
        for name, arr in keep.items():
            ctype = {np.int32: ctypes.c_int32, np.uint8: ctypes.c_uint8}.get(
                arr.dtype.type, ctypes.c_float
            )
            setattr(prob, name, _ptr(arr, ctype))
        seed = np.ascontiguousarray(np.asarray(seeds.seed), np.uint32)
        coin = np.ascontiguousarray(np.asarray(seeds.coin), np.uint32)
        may_stall = u8(seeds.may_stall)
        A = seed.shape[0]
        order = np.empty((A, N), np.int32)
        peak = np.empty((A, F), np.int32)
        length = np.empty(A, np.int32)
        stalls = np.empty(A, np.int32)
        dead = np.empty(A, np.uint8)
        rc = self._fn(
            ctypes.byref(prob),
            A,
            _ptr(seed, ctypes.c_uint32),
            _ptr(coin, ctypes.c_uint32),
            _ptr(may_stall, ctypes.c_uint8),
            _ptr(order, ctypes.c_int32),
            _ptr(peak, ctypes.c_int32),
            _ptr(length, ctypes.c_int32),
            _ptr(stalls, ctypes.c_int32),
            _ptr(dead, ctypes.c_uint8),
        )
        if rc != 0:
            raise BaselineError("colony_construct: out of memory")
        return order, peak, length, stalls, dead.astype(bool)
