"""``jaxsched tune TRAIN --valid VALID -o params.json``: learn the guiding heuristic's weights
(`jaxsched.tune`) and check them against the defaults on validation regions."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from jaxsched.cli.main import MACHINE_HELP, UsageError, int_in, machine_named, seed_type


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="learn the guiding heuristic's weights on training regions",
        description="Train the colony's guiding-heuristic weights (REINFORCE + Adam, see "
        "docs/tuning.md) on TRAIN, then schedule VALID with the default and the learned "
        "parameters (same seed) and write the learned ones to -o, or the defaults ('kept "
        "defaults') if the learned ones lose occupancy on any validation region.",
    )
    p.add_argument("train", metavar="TRAIN", help="training regions (.json, .jsonl[.gz])")
    p.add_argument("--valid", default=None, metavar="VALID", help="validation regions")
    p.add_argument("-o", "--output", type=Path, required=True, help="parameters file to write")
    p.add_argument("--machine", default="gfx906", help=MACHINE_HELP)
    p.add_argument("--steps", type=int_in(1, 10**6), default=50, help="training steps (50)")
    p.add_argument("--seed", type=seed_type, default=0, help="random seed (default 0)")
    p.add_argument(
        "--ants", type=int_in(2, 1 << 16), default=32, help="ants per region, training and "
        "validation (default 32; whole wavefronts)",
    )  # fmt: skip
    p.add_argument("--wavefront", type=int_in(1, 1024), default=16, help="ants per wavefront")
    p.add_argument("--batch", type=int_in(1, 4096), default=8, help="regions per step (8)")
    p.add_argument(
        "--max-size", type=int_in(1, 1 << 20), default=128, metavar="N",
        help="train on regions of at most N instructions (default 128; validation uses all)",
    )  # fmt: skip
    p.add_argument("--learning-rate", type=float, default=0.05, help="Adam's peak rate (0.05)")
    # `jaxsched.tune.train.ADVANTAGES`, spelled out so that building the parser imports no
    # jax/optax (tests/test_tune.py checks that the two agree)
    p.add_argument(
        "--advantage", choices=("loo", "standardized", "top"), default="standardized",
        help="advantages: leave-one-out (unbiased), standardized per region (default), or "
        "top (risk-seeking: learn from each region's best quarter of ants)",
    )  # fmt: skip
    p.add_argument(
        "--iterations", type=int_in(1, 10**4), default=None,
        help="colony iteration cap per pass in validation (default: schedule's)",
    )  # fmt: skip
    p.add_argument("--plot", type=Path, default=None, metavar="DIR", help="learning curve PNG")
    p.add_argument("--log", type=Path, default=None, metavar="FILE", help="JSON log to write")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def _training_regions(args, machine) -> list:
    from jaxsched.cli.schedule import load_checked

    regions = load_checked([args.train], None, machine)
    small = [r for r in regions if len(r) <= args.max_size]
    if not small:
        raise UsageError(
            f"{args.train}: no region of at most {args.max_size} instructions to train on "
            f"({len(regions)} regions; see --max-size)"
        )
    return small


def run(args: argparse.Namespace) -> int:
    from jaxsched.cli.schedule import load_checked
    from jaxsched.colony.params import default_params
    from jaxsched.colony.settings import resolve
    from jaxsched.tune import pipeline
    from jaxsched.tune.train import train

    if args.plot is not None:
        from jaxsched.cli.plots import pyplot

        pyplot()  # fail before training, not after
    machine = machine_named(args.machine)
    layout = {"ants": args.ants, "wavefront_size": args.wavefront}
    config = resolve(layout).config
    regions = _training_regions(args, machine)
    valid = load_checked([args.valid], None, machine) if args.valid else []
    default = default_params()
    say = (lambda *a: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    t0 = time.perf_counter()
    problems = pipeline.batches(
        regions, machine, default, config=config, batch=args.batch, seed=args.seed
    )
    say(f"jaxsched tune: {len(regions)} regions in {len(problems)} batches, {config.ants} ants")

    def on_step(e) -> None:
        say(
            f"step {e.step + 1}/{args.steps}  loss {e.cost:.4f}  |grad| {e.grad_norm:.3g}  "
            f"{e.seconds:.2f} s"
        )

    learned, log = train(
        problems, default, files=len(machine.file_names), steps=args.steps, seed=args.seed,
        config=config, learning_rate=args.learning_rate, advantage=args.advantage,
        on_step=on_step,
    )  # fmt: skip
    doc = {
        "train": str(args.train),
        "valid": args.valid,
        "settings": _settings(args, config, len(regions)),
        "steps": [{"loss": e.cost, "grad_norm": e.grad_norm, "seconds": e.seconds} for e in log],
        "train_seconds": time.perf_counter() - t0,
    }
    chosen, doc["kept"] = learned, "learned"
    if valid:
        overrides = pipeline.ants_overrides(config)
        if args.iterations is not None:
            overrides["max_iterations"] = args.iterations
        v = pipeline.validate(valid, machine, default, learned, seed=args.seed, **overrides)
        print(f"jaxsched tune: {v.summary()}")
        doc["validation"] = v.to_dict()
        if not v.keeps_occupancy:
            chosen, doc["kept"] = default, "defaults"
            print("jaxsched tune: kept defaults (the learned parameters lose occupancy)")
    _write(args, machine, chosen, doc)
    return 0


def _settings(args, config, regions: int) -> dict:
    return {
        "machine": args.machine, "steps": args.steps, "seed": args.seed, "ants": config.ants,
        "wavefront": config.wavefront_size, "batch": args.batch, "max_size": args.max_size,
        "learning_rate": args.learning_rate, "advantage": args.advantage,
        "iterations": args.iterations,
        "train_regions": regions,
    }  # fmt: skip


def _write(args, machine, params, doc: dict) -> None:
    """The parameters file, the JSON log and the plot."""
    from jaxsched.tune.files import save_params

    notes = {k: doc[k] for k in ("train", "valid", "settings", "kept") if k in doc}
    if "validation" in doc:
        notes["validation"] = doc["validation"]
    save_params(args.output, params, machine=machine.name, notes=notes)
    print(f"jaxsched tune: wrote {args.output} ({doc['kept']})")
    if args.log is not None:
        args.log.write_text(json.dumps(doc, indent=1) + "\n")
    if args.plot is not None:
        from jaxsched.cli.plots import plot_learning_curve

        path = plot_learning_curve([e["loss"] for e in doc["steps"]], args.plot)
        print(f"jaxsched tune: learning curve in {path}")
