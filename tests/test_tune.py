"""Tuning (`jaxsched.tune`): parameter files, the learned guiding heuristic in `schedule`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import xla_flags

import jaxsched
from jaxsched.cli.main import main
from jaxsched.colony.params import default_params
from jaxsched.errors import InputError
from jaxsched.problem.generate import generate_regions
from jaxsched.tune import ParamsFileError, load_params, save_params

MACHINE = jaxsched.gfx906()
F = len(MACHINE.file_names)
FAST = dict(ants=32, wavefront_size=16, max_iterations=3)


def _learned():
    """Parameters weighting every heuristic feature, per pass and per file."""
    return default_params(
        weight_successors=[0.2, 0.5],
        weight_latency=0.3,
        weight_position=[0.4, -0.1],
        weight_kill=[[1.0] * F, [0.5] * F],
        weight_born=[-0.5, 0.0],
        weight_wait=[0.0, 0.8],
    )


def test_params_file_round_trip(tmp_path):
    path = tmp_path / "p.json"
    p = _learned()
    save_params(path, p, machine="gfx906", notes={"steps": 3})
    q = load_params(path, files=F)
    for a, b in zip(p, q, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # A file with a few fields: the others keep their defaults.
    path.write_text(
        json.dumps({"format": "jaxsched-params", "version": 1, "params": {"decay": 0.3}})
    )
    assert float(load_params(path).decay) == pytest.approx(0.3)
    assert float(load_params(path).weight_cp) == 1.0


@pytest.mark.parametrize(
    "text, needle",
    [
        ("not json", "not a JSON"),
        ('{"format": "other"}', "not a parameters file"),
        ('{"format": "jaxsched-params", "version": 9, "params": {}}', "version 9"),
        ('{"format": "jaxsched-params", "version": 1, "params": {"bogus": 1}}', "bogus"),
        ('{"format": "jaxsched-params", "version": 1, "params": {"decay": [1, 2]}}', "decay"),
        ('{"format": "jaxsched-params", "version": 1, "params": {"decay": "0.5"}}', "decay"),
        ('{"format": "jaxsched-params", "version": 1, "params": {"decay": NaN}}', "finite"),
        (
            '{"format": "jaxsched-params", "version": 1, "params": {"weight_kill": [[1,2,3,4,5]]}}',
            "weight_kill",
        ),
    ],
)
def test_bad_params_files_name_the_problem(tmp_path, text, needle):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ParamsFileError, match=needle) as e:
        load_params(path, files=F)
    assert isinstance(e.value, InputError) and str(path) in str(e.value)
    with pytest.raises(ParamsFileError, match="cannot read"):
        load_params(tmp_path / "missing.json")


def test_schedule_with_loaded_params(tmp_path):
    regions = generate_regions(7, 4, 10, 16)
    path = tmp_path / "p.json"
    save_params(path, default_params())
    ref = jaxsched.schedule(regions, MACHINE, seed=2, **FAST)
    same = jaxsched.schedule(regions, MACHINE, seed=2, params=load_params(path), **FAST)
    assert [r.order for r in ref] == [r.order for r in same]
    save_params(path, _learned())
    learned = jaxsched.schedule(regions, MACHINE, seed=2, params=load_params(path), **FAST)
    for region, res in zip(regions, learned, strict=True):
        rep = jaxsched.verify(region, MACHINE, res.cycles, order=res.order)
        assert rep.length == res.length and rep.occupancy == res.occupancy
    with pytest.raises(InputError, match="weight_kill"):
        bad = default_params()._replace(weight_kill=np.zeros((2, F + 1), np.float32))
        jaxsched.schedule(regions, MACHINE, params=bad, **FAST)


def test_cli_schedule_params(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JAXSCHED_CACHE_DIR", "off")
    regions = generate_regions(3, 3, 9, 14)
    rfile = tmp_path / "r.jsonl"
    jaxsched.save_regions(regions, rfile)
    pfile = tmp_path / "p.json"
    save_params(pfile, _learned())
    fast = ["--ants", "32", "--wavefront", "16", "--iterations", "3", "--quiet", "--json"]
    assert main(["schedule", str(rfile), "--params", str(pfile), *fast]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    byname = {r.name: r for r in jaxsched.load_regions(rfile)}
    for d in lines:
        jaxsched.verify(byname[d["name"]], MACHINE, d["cycles"], order=d["order"])
    pfile.write_text("{")
    assert main(["schedule", str(rfile), "--params", str(pfile), *fast]) == 2
    assert "not a JSON" in capsys.readouterr().err


def _cli(*argv: str) -> subprocess.CompletedProcess:
    """``jaxsched ARGV`` in a fresh process (see tests/test_tune_grad.py: XLA's CPU compile of
    the replay crashed a long-lived test worker, never a process of its own), compiling at
    LLVM's optimisation level 0 (`helpers.QUICK_COMPILE`: its time is compiles)."""
    cmd = [sys.executable, "-m", "jaxsched", *argv]
    env = dict(os.environ, XLA_FLAGS=xla_flags(os.environ.get("XLA_FLAGS", "")))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)


def test_cli_tune(tmp_path, capsys):
    train, valid = tmp_path / "train.jsonl", tmp_path / "valid.jsonl"
    jaxsched.save_regions(generate_regions(11, 3, 9, 14), train)
    jaxsched.save_regions(generate_regions(12, 2, 9, 14), valid)
    out, log = tmp_path / "p.json", tmp_path / "log.json"
    fast = ["--steps", "2", "--ants", "8", "--wavefront", "4", "--iterations", "2", "--quiet"]
    argv = ["tune", str(train), "--valid", str(valid), "-o", str(out), "--log", str(log)]
    proc = _cli(*argv, *fast)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = proc.stdout
    doc = json.loads(log.read_text())
    assert len(doc["steps"]) == 2 and all(np.isfinite(s["loss"]) for s in doc["steps"])
    v = doc["validation"]
    assert v["regions"] == 2 and f"occupancy {v['occupancy_learned']} learned" in printed
    assert 0 <= v["colony_learned"] <= 2 and 0 <= v["colony_default"] <= 2
    assert f"own schedule is the result on {v['colony_learned']} vs" in printed
    assert doc["kept"] == ("learned" if v["lost"] == 0 else "defaults")
    params = load_params(out, files=F)
    if doc["kept"] == "defaults":
        assert float(params.weight_position[0]) == float(default_params().weight_position[0])
    # Bad input: one line, exit 2, no parameters written.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "jaxsched.region/1"\n')
    assert main(["tune", str(bad), "-o", str(tmp_path / "q.json"), *fast]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.jsonl" in err[0] and not (tmp_path / "q.json").exists()


def test_standardized_advantages_weigh_every_region_alike():
    """Per region: the sign of the leave-one-out advantage, a scale-free size (a region whose
    ants differ by 1e-3 in cost weighs as one that differs by 1), 0 when all ants agree."""
    from jaxsched.tune.train import advantages

    base = np.array([0.0, 1.0, 2.0, 5.0], np.float32)
    cost = np.stack([base, base * 1e-3 + 1.0, np.full(4, 3.0, np.float32)])
    loo = np.asarray(advantages(cost, "loo"))
    std = np.asarray(advantages(cost, "standardized"))
    assert np.array_equal(np.sign(std), np.sign(loo))
    np.testing.assert_allclose(std[0], std[1], atol=2e-3)
    assert not std[2].any() and not loo[2].any()
    np.testing.assert_allclose(loo[0], base - (base.sum() - base) / 3)
    with pytest.raises(ValueError, match="advantage 'mean'"):
        advantages(cost, "mean")


def test_top_advantages_learn_from_the_best_ants_only():
    """Risk-seeking advantages: only ants below the region's `TOP_FRACTION` quantile move
    (towards lower cost, scaled by the region's spread); ties at the quantile and all-equal
    regions give 0."""
    from jaxsched.tune.train import TOP_FRACTION, advantages

    cost = np.array([[4, 0, 1, 2, 3, 5, 6, 7], [2, 2, 2, 2, 2, 2, 2, 2]], np.float32)
    top = np.asarray(advantages(cost, "top"))
    assert TOP_FRACTION == 0.25  # the quantile of 8 costs is then the second lowest, 1
    expect = np.minimum(cost[0] - 1.0, 0.0) / cost[0].std()
    np.testing.assert_allclose(top[0], expect, rtol=1e-6)
    assert (top[0] < 0).sum() == 1 and top[0, 1] < 0 and not top[1].any()


def test_cli_advantage_choices_are_the_library_s():
    from jaxsched.cli.main import build_parser
    from jaxsched.tune.train import ADVANTAGES

    tune = next(
        a for a in build_parser()._subparsers._group_actions[0].choices["tune"]._actions
        if a.dest == "advantage"
    )  # fmt: skip
    assert tuple(tune.choices) == ADVANTAGES


def test_batches_of_a_bucket_share_one_shape():
    """A training step compiles once per bucket: every batch of a bucket has the bucket's
    joined shape, also when one region needs more successors than the canonical 8."""
    import jax

    from jaxsched.colony.params import ColonyConfig
    from jaxsched.tune import pipeline

    insts = [{"text": f"i{k}", "defs": [], "uses": []} for k in range(12)]
    fan = jaxsched.Region.build("fan", insts, {}, [(0, k, 1) for k in range(1, 12)])
    chain = jaxsched.Region.build("chain", insts, {}, [(k, k + 1, 1) for k in range(11)])
    out = pipeline.batches(
        [chain, fan],
        MACHINE,
        default_params(),
        config=ColonyConfig(wavefronts=1, wavefront_size=16),
        batch=1,
    )
    shapes = [jax.tree.map(lambda x: x.shape, b.prob) for b in out]
    assert len(out) == 2 and shapes[0] == shapes[1]
    assert out[0].prob.dev.succ.shape[-1] >= 11
