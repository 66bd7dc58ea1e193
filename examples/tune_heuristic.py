"""Tune the colony's guiding heuristic on the real gfx906 regions and compare with the defaults.

    .venv/bin/python examples/tune_heuristic.py [--steps 40] [--min-size 1] [--max-size 64]
        [-o params.json]

Splits ``../shared/data/real-train.jsonl.gz`` by source (`split_by_source`, 20% of the
sources validate, as ``benchmarks/real_quality.py``), trains the heuristic weights on the
training regions of at most ``--max-size`` instructions (REINFORCE + Adam, `jaxsched.tune`),
then schedules the validation regions of at most ``--valid-max-size`` instructions with the
default and the learned parameters (same seed) and prints occupancy, then length at equal
occupancy. The defaults (a few minutes of training on 2 CPU cores) fit in 15 minutes there.
Writes the learned parameters, or the defaults when the learned ones lose occupancy on any
validation region, to ``-o``; ``--json`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from jaxsched.colony.params import ColonyConfig, default_params
from jaxsched.machines.model import gfx906
from jaxsched.problem.format import load_regions
from jaxsched.problem.split import split_by_source
from jaxsched.tune import pipeline, save_params, train
from jaxsched.tune.files import params_dict
from jaxsched.tune.train import ADVANTAGES, TUNED

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-train.jsonl.gz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ants", type=int, default=32, help="ants per region (wavefronts of 16)")
    ap.add_argument("--batch", type=int, default=8, help="regions per training step")
    ap.add_argument("--min-size", type=int, default=1, help="smallest region (both sets)")
    ap.add_argument("--max-size", type=int, default=64, help="largest training region")
    ap.add_argument("--valid-max-size", type=int, default=64, help="largest validation region")
    ap.add_argument("--iterations", type=int, default=10, help="colony iterations (validation)")
    ap.add_argument("--learning-rate", type=float, default=0.05)
    ap.add_argument("--advantage", choices=ADVANTAGES, default="standardized")
    ap.add_argument("-o", "--output", type=Path, default=Path("params.json"))
    ap.add_argument("--json", type=Path, default=None, help="write the numbers here")
    args = ap.parse_args()

    machine = gfx906()
    train_set, valid_set = split_by_source(load_regions(args.data))
    train_set = [r for r in train_set if args.min_size <= len(r) <= args.max_size]
    valid_set = [r for r in valid_set if args.min_size <= len(r) <= args.valid_max_size]
    config = ColonyConfig(wavefronts=max(args.ants // 16, 1), wavefront_size=min(args.ants, 16))
    default = default_params()
    t0 = time.perf_counter()
    problems = pipeline.batches(
        train_set, machine, default, config=config, batch=args.batch, seed=args.seed
    )
    print(f"{len(train_set)} training regions in {len(problems)} batches, {config.ants} ants")

    def on_step(e) -> None:
        print(f"step {e.step + 1}/{args.steps}  loss {e.cost:.4f}  {e.seconds:.2f} s")

    learned, log = train(
        problems, default, files=len(machine.file_names), steps=args.steps, seed=args.seed,
        config=config, learning_rate=args.learning_rate, advantage=args.advantage,
        on_step=on_step,
    )  # fmt: skip
    trained_s = time.perf_counter() - t0
    held_out = pipeline.batches(
        valid_set, machine, default, config=config, batch=args.batch, seed=args.seed
    )
    ants_a, ants_b = (
        pipeline.ant_costs(held_out, p, config=config, seed=args.seed + 1)
        for p in (default, learned)
    )
    ant_report = {
        "regions": len(ants_a), "mean_default": float(ants_a.mean()),
        "mean_learned": float(ants_b.mean()), "better": int((ants_b < ants_a).sum()),
        "worse": int((ants_b > ants_a).sum()),
    }  # fmt: skip
    print(
        f"validation ants (first iteration, {len(ants_a)} regions): mean cost "
        f"{ant_report['mean_learned']:.4f} learned vs {ant_report['mean_default']:.4f} default; "
        f"learned better on {ant_report['better']}, worse on {ant_report['worse']}"
    )
    v = pipeline.validate(
        valid_set, machine, default, learned, seed=args.seed,
        max_iterations=args.iterations, **pipeline.ants_overrides(config),
    )  # fmt: skip
    print(v.summary())
    kept = "learned" if v.keeps_occupancy else "defaults"
    print(f"training {trained_s:.0f} s (steps after the first: "
          f"{sum(e.seconds for e in log[1:]) / max(len(log) - 1, 1):.2f} s each); "
          f"validation {time.perf_counter() - t0 - trained_s:.0f} s; kept {kept}")  # fmt: skip
    settings = {k: str(x) if isinstance(x, Path) else x for k, x in vars(args).items()}
    notes = {"validation": v.to_dict(), "kept": kept, "settings": settings}
    save_params(args.output, learned if v.keeps_occupancy else default, notes=notes,
                machine=machine.name)  # fmt: skip
    if args.json is not None:
        report = {
            "settings": settings,
            "train_regions": len(train_set),
            "steps": [e._asdict() for e in log],
            "train_seconds": trained_s,
            "validation": v.to_dict(),
            "validation_ants": ant_report,
            "kept": kept,
            "learned": {k: x for k, x in params_dict(learned).items() if k in TUNED},
        }
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
