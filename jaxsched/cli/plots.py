"""Plots for ``jaxsched schedule --plot DIR`` and ``jaxsched tune --plot DIR`` (matplotlib,
the ``plot`` extra)."""

from __future__ import annotations

import re
from pathlib import Path

from jaxsched.cli.main import UsageError


def pyplot():
    """matplotlib.pyplot on the Agg backend; `UsageError` if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'jaxsched[plot]'") from None
    return plt


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "region"


def plot_results(rows: list, machine, out_dir: Path) -> list[Path]:
    """One PNG per region: the schedule (instruction x cycle), RP per file over the issue
    sequence, and the colony's convergence (best and iteration-winner cost per iteration)."""
    from jaxsched.verify import verify

    plt = pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for region, res in rows:
        rep = verify(region, machine, res.cycles, order=res.order)
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
        ax = axes[0]
        ax.scatter(res.cycles, range(len(region)), s=8)
        ax.set_xlabel("issue cycle")
        ax.set_ylabel("instruction (input order)")
        ax.set_title(f"{res.name}: length {res.length} (bound {res.length_lower_bound})")
        ax = axes[1]
        for f, name in enumerate(machine.file_names):
            ax.step(range(len(region) + 1), rep.rp_profile[:, f], where="post", label=name)
        ax.set_xlabel("instructions issued")
        ax.set_ylabel("register pressure (32-bit units)")
        ax.set_title(f"RP, occupancy {res.occupancy}")
        ax.legend()
        ax = axes[2]
        for key, style in (("ilp_best", "-"), ("ilp_winner", ":")):
            points = [(k + 1, v) for k, v in enumerate(res.history.get(key, [])) if v < 2**29]
            if points:
                ax.plot(*zip(*points, strict=True), style, marker="o", label=f"{key} (cycles)")
        ax.set_xlabel("iteration")
        ax.set_ylabel("ILP pass: length (cycles)")
        rp = [(k + 1, v) for k, v in enumerate(res.history.get("rp_best", [])) if v < 2**29]
        if rp:
            twin = ax.twinx()
            twin.plot(*zip(*rp, strict=True), "--", color="gray", marker="s", label="rp_best")
            twin.set_ylabel("RP pass: RP cost")
            twin.legend(loc="center right")
        ax.set_title("colony convergence (no valid ant: no winner point)")
        if ax.lines:
            ax.legend()
        fig.tight_layout()
        path = out_dir / f"{_safe(res.name)}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    return written


def plot_learning_curve(losses: list[float], out_dir: Path) -> Path:
    """``out_dir/learning-curve.png``: the sampled mean cost of each training step and its
    running mean over 10 steps."""
    import numpy as np

    plt = pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    steps = np.arange(1, len(losses) + 1)
    window = min(10, len(losses))
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, losses, ".", alpha=0.5, label="step (its batch)")
    ax.plot(steps[window - 1 :], smooth, "-", label=f"running mean of {window}")
    ax.set_xlabel("training step")
    ax.set_ylabel("sampled expected cost (RP cost + length / cap)")
    ax.set_title("jaxsched tune: learning curve")
    ax.legend()
    fig.tight_layout()
    path = out_dir / "learning-curve.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
