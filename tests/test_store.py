"""The executable store: compiled executables loaded by later processes instead of compiled.

The mechanism is tested on small jitted functions (in this process, or in fresh ones through
tests/store_cases.py); one test runs the colony's executables on a tiny region.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched import compilation, store
from jaxsched.compilation import CompileCache
from jaxsched.store import HEADER, ExecutableStore, StoreWarning, executable_key

HERE = Path(__file__).resolve().parent


@jax.jit
def _affine(x: jax.Array, y: jax.Array) -> jax.Array:
    """float32[n], float32[n] -> float32[n]."""
    return jnp.tanh(x) * 3.0 + y * y


ARGS = (jnp.arange(5, dtype=jnp.float32), jnp.ones(5, jnp.float32))
EXPECTED = np.tanh(np.arange(5, dtype=np.float32)) * 3.0 + 1.0


def case(name: str, path: Path, env: dict | None = None) -> subprocess.Popen:
    """tests/store_cases.py ``name`` on the store in ``path``, started in a new process."""
    return subprocess.Popen(
        [sys.executable, str(HERE / "store_cases.py"), name, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _hit(path: Path) -> tuple[np.ndarray, CompileCache]:
    """`_affine` through a fresh cache (empty memory) on the store in ``path``."""
    cache = CompileCache(store=ExecutableStore(path))
    return np.asarray(cache(_affine, {}, *ARGS)), cache


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> dict:
    """Two processes fill one store at the same time; then a third uses it."""
    path = tmp_path_factory.mktemp("shared-store")
    first, second = case("fill", path), case("fill", path)
    fills = [finish(first), finish(second)]
    return {"path": path, "fills": fills, "after": finish(case("one", path))}


def test_a_new_process_loads_instead_of_compiling(filled):
    fresh = {c["n"]: c["bytes"] for c in filled["fills"][0]["calls"]}
    hit = filled["after"]["calls"][0]
    assert hit["n"] == 3 and hit["bytes"] == fresh[3]  # bitwise what a fresh compile gives
    assert (hit["compilations"], hit["loads"]) == (0, 1)


def test_two_processes_filling_one_store_leave_it_valid(filled):
    path, after = filled["path"], filled["after"]
    assert sorted(p.name for p in path.iterdir()) == sorted(p.name for p in path.glob("*.xla"))
    assert len(list(path.glob("*.xla"))) == 6  # one per shape, whoever wrote it last
    fresh = [{c["n"]: c["bytes"] for c in f["calls"]} for f in filled["fills"]]
    assert fresh[0] == fresh[1]
    last = after["calls"][-1]
    assert (last["compilations"], last["loads"]) == (0, 6) and not after["warnings"]
    assert all(c["bytes"] == fresh[0][c["n"]] for c in after["calls"])


def _flip(path: Path) -> None:
    """Bytes flipped in the middle of the payload."""
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 64, 8):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def _edit_text(path: Path) -> None:
    """A letter changed in the JSON (still valid JSON, the payload intact: only the checksum
    tells)."""
    data = path.read_bytes()
    i = data.index(b'"platform": "') + len(b'"platform": "')
    path.write_bytes(data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1 :])


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(4096))


def _bad_payload(path: Path) -> None:
    """A well-formed entry (right lengths and checksum) whose payload is no executable."""
    import hashlib

    data = path.read_bytes()
    n_text = HEADER.unpack_from(data)[2]
    text, payload = data[HEADER.size : HEADER.size + n_text], b"\x80\x05not a pickle"
    digest = hashlib.sha256(text + payload).digest()
    head = HEADER.pack(store.MAGIC, store.FORMAT_VERSION, len(text), len(payload), digest)
    path.write_bytes(head + text + payload)


@pytest.mark.parametrize("damage", [_flip, _edit_text, _truncate, _garbage, _bad_payload])
def test_a_damaged_entry_warns_and_is_rebuilt(tmp_path, damage):
    _hit(tmp_path)  # compiles and writes the entry
    (entry,) = tmp_path.glob("*.xla")
    damage(entry)
    with pytest.warns(StoreWarning, match=entry.name):
        result, cache = _hit(tmp_path)
    np.testing.assert_allclose(result, EXPECTED, rtol=1e-6)
    assert (cache.compilations, cache.loads, cache.saves) == (1, 0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result, cache = _hit(tmp_path)  # the rebuilt entry loads
    assert (cache.compilations, cache.loads) == (0, 1)
    np.testing.assert_allclose(result, EXPECTED, rtol=1e-6)


def test_an_entry_of_another_environment_is_not_used(tmp_path, monkeypatch):
    _hit(tmp_path)
    env = store.environment()
    monkeypatch.setattr(store, "environment", lambda: {**env, "jaxlib": "0.0.0"})
    result, cache = _hit(tmp_path)
    assert (cache.compilations, cache.loads) == (1, 0)
    assert len(list(tmp_path.glob("*.xla"))) == 2
    np.testing.assert_allclose(result, EXPECTED, rtol=1e-6)


def test_an_entry_under_a_foreign_name_is_rejected(tmp_path):
    _hit(tmp_path)
    (entry,) = tmp_path.glob("*.xla")
    key = executable_key(_affine, {}, (ARGS[0][:2], ARGS[1][:2]))  # another shape's key
    entry.rename(tmp_path / f"{key.digest}.xla")
    cache = CompileCache(store=ExecutableStore(tmp_path))
    with pytest.warns(StoreWarning, match="holds key"):
        cache(_affine, {}, ARGS[0][:2], ARGS[1][:2])
    assert (cache.compilations, cache.loads) == (1, 0)


def _key(fn=_affine, static=None, args=ARGS) -> str:
    return executable_key(fn, static or {}, args).digest


def test_the_key_covers_what_makes_an_executable_valid(monkeypatch):
    base = _key()
    assert _key() == base  # stable
    assert _key(args=(ARGS[0], ARGS[1].astype(jnp.int32))) != base  # dtype
    assert _key(args=(ARGS[0][:4], ARGS[1][:4])) != base  # shape
    assert _key(args=(ARGS[0], 1.0)) != _key(args=(ARGS[0], np.float32(1.0)))  # weak type
    assert _key(args=((ARGS[0],), ARGS[1])) != base  # structure
    assert _key(static={"k": 1}) != _key(static={"k": 2})
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    assert _key() != base
    monkeypatch.delenv("XLA_FLAGS")
    with jax.enable_x64(True):
        assert _key() != base
    assert _key() == base
    assert executable_key(jax.jit(lambda x: x), {}, ARGS[:1]) is None  # no identity


def test_pressure_relieves_before_a_load(tmp_path, monkeypatch):
    _hit(tmp_path)
    cache = CompileCache(store=ExecutableStore(tmp_path))
    relieved = []
    monkeypatch.setattr(compilation, "relieve_map_pressure", lambda: relieved.append(1))
    cache(_affine, {}, *ARGS)
    assert relieved == [1] and cache.loads == 1


def test_the_default_store_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("JAXSCHED_CACHE_DIR", "off")
    cache = CompileCache()
    np.testing.assert_allclose(cache(_affine, {}, *ARGS), EXPECTED, rtol=1e-6)
    assert cache.compilations == 1 and not any(tmp_path.rglob("*"))  # off: nothing written
    monkeypatch.delenv("JAXSCHED_CACHE_DIR")
    CompileCache()(_affine, {}, *ARGS)
    assert len(list((tmp_path / "xdg" / "jaxsched" / "executables").glob("*.xla"))) == 1


def test_an_unwritable_store_warns_once_and_runs(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("JAXSCHED_CACHE_DIR", str(tmp_path / "file" / "store"))
    with pytest.warns(StoreWarning, match="cannot use"):
        result = CompileCache()(_affine, {}, *ARGS)
    np.testing.assert_allclose(result, EXPECTED, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache = CompileCache()
        cache(_affine, {}, *ARGS)
    assert cache.compilations == 1


def test_eviction_keeps_the_store_under_its_cap(tmp_path):
    s = ExecutableStore(tmp_path)
    cache = CompileCache(store=s)
    for n in (1, 2, 3):
        cache(_affine, {}, jnp.ones(n), jnp.ones(n))
    sizes = sorted(p.stat().st_size for p in s.entries())
    s.max_bytes = sizes[-1] + sizes[-2]
    assert s.evict() >= 1 and sum(p.stat().st_size for p in s.entries()) <= s.max_bytes


@pytest.mark.slow
def test_the_colony_loads_its_executables_in_a_new_process(tmp_path):
    env = {**os.environ, "JAXSCHED_CACHE_DIR": str(tmp_path)}
    cold = finish(case("colony", tmp_path, env))["calls"][0]
    warm = finish(case("colony", tmp_path, env))["calls"][0]
    assert cold["compilations"] >= 1 and cold["loads"] == 0  # the colony's executables
    assert warm["compilations"] == 0 and warm["loads"] == cold["compilations"]
    assert warm["records"] == cold["records"]
