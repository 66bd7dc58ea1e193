"""The native construction (`jaxsched.colony.construction.native`, a C++ XLA FFI custom call)
alone: "auto" resolves to it on the CPU, falls back to `lax` without a compiler, other backends
are refused; the library builds atomically; a stored executable is loaded by a new process, and
rebuilt by one that lacks the FFI target; the shapes it does not take. Its results against the
`lax` reference: tests/test_backends.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from helpers import construction_batch

import jaxsched
from jaxsched.colony.construction import dispatch, native
from jaxsched.colony.params import ColonyConfig
from jaxsched.errors import InputError
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region, generate_regions

MACHINE = gfx906()

pytestmark = pytest.mark.skipif(
    native.find_compiler() is None or jax.default_backend() != "cpu",
    reason="the native construction needs a C++ compiler and the CPU backend",
)


def test_auto_resolves_to_native_on_the_cpu() -> None:
    """Where a compiler is found on the CPU the library builds, "auto" and "native" resolve to
    "native", and a native config passes the check. (An unknown construction's error:
    tests/test_kernel.py::test_dispatch_and_config.)"""
    assert native.unavailable() is None
    assert dispatch.resolve("auto") == "native"
    assert dispatch.resolve("native") == "native"
    dispatch.check(ColonyConfig(construction="native"))  # no error


def test_without_a_compiler_auto_falls_back_to_lax(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a compiler "auto" runs "lax" with one `NativeWarning` per process, and "native"
    is an `InputError` that says why (in the check and in `schedule`)."""
    monkeypatch.setattr(native, "find_compiler", lambda: None)
    monkeypatch.setattr(native, "_status", {})
    with pytest.warns(native.NativeWarning, match=r"no C\+\+ compiler"):
        assert dispatch.resolve("auto") == "lax"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dispatch.resolve("auto") == "lax"  # one warning per process
    with pytest.raises(InputError, match=r"construction 'native'.*no C\+\+ compiler"):
        dispatch.check(ColonyConfig(construction="native"))
    region = generate_region(0, 6)
    with pytest.raises(InputError, match="construction 'native'"):
        jaxsched.schedule(region, MACHINE, ants=64, construction="native")


def test_native_rejects_other_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Construction "native" on another backend than the CPU is an `InputError`."""
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with pytest.raises(InputError, match="CPU only"):
        dispatch.check(ColonyConfig(construction="native"))


def _stand_in_compiler(path: Path, *, version: str, fails: bool = False) -> str:
    """A C++ compiler stand-in at ``path``: answers ``--version`` with ``version``, logs every
    other call in ``path.log``, writes "library" to the file after ``-o`` (then exits 1 when
    ``fails``: a partial output)."""
    path.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && {{ echo "{version}"; exit 0; }}\n'
        f'echo "$@" >> "{path}.log"\n'
        'while [ $# -gt 1 ]; do [ "$1" = -o ] && echo library > "$2"; shift; done\n'
        f"exit {int(fails)}\n"
    )
    path.chmod(0o755)
    return str(path)


def test_the_library_builds_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The library builds into the folder named by $JAXSCHED_NATIVE_DIR, under a name keyed by
    the source, the compiler and the host, once (a second build runs no compiler); a failed
    build is a `RuntimeError` that leaves nothing; no temporary file stays. (Stand-in
    compilers: the real one builds the run's library, which every native test loads.)"""
    lib = tmp_path / "lib"
    monkeypatch.setenv("JAXSCHED_NATIVE_DIR", str(lib))
    cxx = _stand_in_compiler(tmp_path / "cxx", version="c++ 1")
    path = native.build(cxx)
    assert path.parent == lib and path.name.startswith("construct-")
    assert path.read_text() == "library\n"
    assert native.build(cxx) == path  # built once:
    assert len(Path(f"{cxx}.log").read_text().splitlines()) == 1  # one compiler run
    other = _stand_in_compiler(tmp_path / "other", version="c++ 2", fails=True)
    assert native.library_path(other) != path  # another compiler: another library
    with pytest.raises(RuntimeError, match="failed"):
        native.build(other)
    assert [p.name for p in lib.iterdir()] == [path.name]


@pytest.mark.slow
def test_a_stored_native_executable_loads_in_a_new_process(tmp_path: Path) -> None:
    """A process compiles a schedule with the native construction into the store; the next
    process registers the target at import and loads the executable instead of compiling, with
    the same result."""
    env = {**os.environ, "JAXSCHED_CACHE_DIR": str(tmp_path)}
    script = (
        "import jaxsched\n"
        "from jaxsched.compilation import COMPILED\n"
        "from jaxsched.problem.generate import generate_region\n"
        "r = jaxsched.schedule([generate_region(14, 14)], ants=64, wavefront_size=32,"
        " max_iterations=3, filters=False, construction='native')[0]\n"
        "print(COMPILED.compilations, COMPILED.loads, r.order)\n"
    )
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, done.stderr
        runs.append(done.stdout.split(maxsplit=2))
    assert int(runs[0][0]) >= 1 and int(runs[1][0]) == 0 and int(runs[1][1]) >= 1
    assert runs[0][2] == runs[1][2]


#: A process that runs one native construction through a `CompileCache` on the store in
#: argv[1] and prints its compilations, loads, first order and warnings (JSON).
_STORE_CASE = """
import json, sys, warnings
from functools import partial
import jax, jax.numpy as jnp, numpy as np
from jaxsched.colony.construction import antstate, native, prepared
from jaxsched.colony.params import default_params
from jaxsched.compilation import CompileCache
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region
from jaxsched.problem.padded import pad_region, padded_shape
from jaxsched.store import ExecutableStore


@partial(jax.jit, static_argnames=("ready",))
def run(dev, tau, key, *, ready):
    prep = prepared.prepare(dev, ready)
    p = default_params()
    limit = jnp.full(2, 999, jnp.int32)
    inp = antstate.StepInputs(
        tau=tau, q0=jnp.float32(0.5), rp_limit=limit, soft_limit=limit,
        stall_budget=jnp.float32(2.0), timed=jnp.bool_(True),
        key=prepared.static_key(prep, p, jnp.bool_(True)), issue_width=jnp.int32(1))
    return native.construct_ants_native(prep, inp, p, key, prep.n, wavefronts=1,
                                        wavefront_size=8, uniform_exploration=False).order


machine, region = gfx906(), generate_region(1, 10)
shape = padded_shape(region, machine)
dev = jax.tree.map(jnp.asarray, pad_region(region, machine, shape))
tau = jnp.ones((shape.n + 1, shape.n + 1), jnp.float32)
cache = CompileCache(store=ExecutableStore(sys.argv[1]))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = np.asarray(cache(run, {"ready": shape.ready}, dev, tau, jax.random.key(0)))
print(json.dumps({"compilations": cache.compilations, "loads": cache.loads,
                  "order": out[0].tolist(), "warnings": [str(x.message) for x in w]}))
"""


@pytest.mark.slow
def test_a_stored_executable_without_its_target_is_rebuilt(tmp_path: Path) -> None:
    """A process whose library folder is empty has no target registered when it loads a stored
    executable that calls it: the entry is reported, deleted and compiled again (building the
    library), with the same result."""
    script = tmp_path / "case.py"
    script.write_text(_STORE_CASE)

    def run(lib: str | None) -> dict:
        """One process on the store; ``lib`` None: the run's library folder (conftest.py, its
        library built once per run), else an empty folder of that name."""
        env = dict(os.environ)
        if lib is not None:
            env["JAXSCHED_NATIVE_DIR"] = str(tmp_path / lib)
        cmd = [sys.executable, str(script), str(tmp_path / "store")]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, again, other = run(None), run(None), run("empty")
    assert (first["compilations"], again["compilations"], again["loads"]) == (1, 0, 1)
    assert other["compilations"] == 1 and other["loads"] == 0
    assert any("No FFI handler registered" in w for w in other["warnings"])
    assert first["order"] == again["order"] == other["order"]


def test_shapes_the_kernel_does_not_take() -> None:
    """A batch shape the kernel takes, and one with more than 64 registers per instruction that
    it refuses (`native.unsupported`); `dispatch.construct` turns that into an `InputError`."""
    regions = generate_regions(72, 12, 8, 16)
    prep = construction_batch(regions, MACHINE, seed=16, abstract=True).prep
    assert native.unsupported(prep) is None
    wide = prep._replace(uses=jax.ShapeDtypeStruct((2, 13, 65), jnp.int32))
    assert "65 registers per instruction" in native.unsupported(wide)
    one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), wide)
    with pytest.raises(InputError, match="region shape"):
        dispatch.construct(
            one, None, None, None, None,
            config=ColonyConfig(construction="native"), uniform_exploration=True,
        )  # fmt: skip
