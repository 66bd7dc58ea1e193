"""What every benchmark shares: the machine's description, timing with medians, child
processes that report their own phases, and the Markdown + JSON report.

Benchmarks compare against a baseline measured in the same run and print ratios: the machines
they run on are shared and noisy, so an absolute time alone means little.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REPORTS = HERE / "reports"


def environment(**extra: Any) -> dict:
    """The machine and software a report was measured on (plus ``extra`` settings)."""
    import jax
    import jaxlib

    from jaxsched.store import host_cpu

    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "backend": jax.default_backend(),
        "device": jax.devices()[0].device_kind,
        "cpu": host_cpu().split(";")[0],
        "cores": os.cpu_count(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        **extra,
    }


def environment_markdown(env: dict) -> str:
    """One Markdown sentence of `environment`'s machine and software (fields an older report
    lacks are left out)."""
    parts = []
    if env.get("cpu") or env.get("cores"):
        machine = ", ".join(
            str(x) for x in (env.get("cpu"), env.get("cores") and f"{env['cores']} cores") if x
        )
        if env.get("load_average") is not None:
            machine += f" (load average {env['load_average']:.1f} at the start: shared)"
        parts.append(machine)
    if env.get("jax"):
        jax_ = f"JAX {env['jax']}" + (f" / jaxlib {env['jaxlib']}" if env.get("jaxlib") else "")
        where = env.get("backend") or ""
        if env.get("device") and str(env["device"]).lower() != where.lower():
            where = f"{where} ({env['device']})" if where else str(env["device"])
        parts.append(jax_ + (f" on {where}" if where else ""))
    if env.get("python"):
        parts.append(f"Python {env['python']}")
    if env.get("date"):
        parts.append(f"measured {env['date']}")
    return "Environment: " + "; ".join(parts) + "." if parts else ""


def median_time(fn: Callable[[], Any], repeats: int, warmup: int = 0) -> tuple[float, Any]:
    """(median wall seconds of ``repeats`` calls of ``fn``, each until its JAX arrays are
    ready, the last call's result); ``warmup`` untimed calls first."""
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn())
    times, out = [], None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def compile_time(fn: Callable, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """(seconds, executable): ``fn`` (a function, or one already `jax.jit`-ed) lowered for
    ``args``/``kwargs`` and compiled ahead of time (``jit(fn).lower(...).compile()``), so that
    compile time stays apart from the run times `median_time` measures on the executable."""
    import jax

    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    t0 = time.perf_counter()
    exe = jitted.lower(*args, **kwargs).compile()
    return time.perf_counter() - t0, exe


def compiles_during(fn: Callable[[], Any]) -> tuple[float, float, int, Any]:
    """(wall seconds, of which compiling, compilations, result) of one call of ``fn``: for a
    jaxsched call that compiles inside (``jaxsched.schedule``), from
    `jaxsched.compilation.COMPILED`'s counters."""
    from jaxsched.compilation import COMPILED

    c0, s0 = COMPILED.compilations, COMPILED.compile_seconds
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    return wall, COMPILED.compile_seconds - s0, COMPILED.compilations - c0, out


#: A child process's driver: import jax and jaxsched (timed), run the CLI with the given
#: arguments (timed), then print one JSON line with the phases (`jaxsched.compilation`'s
#: events: trace, lower, compile, load, save) on stderr's last line.
CLI_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import jax, jaxsched, jaxsched.colony, jaxsched.io.mir, jaxsched.cli.main as cli
jax.devices()
t1 = time.perf_counter()
rc = cli.main(sys.argv[1:])
t2 = time.perf_counter()
from jaxsched.compilation import COMPILED
ev = [e._asdict() for e in COMPILED.events if e.source != "memory"]
sys.stderr.write("\\nPHASES " + json.dumps({"rc": rc, "import_s": t1 - t0, "main_s": t2 - t1,
                                        "events": ev}) + "\\n")
"""


def run_cli(args: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> dict:
    """Run ``jaxsched ARGS`` in a new Python process; its phases: ``wall_s`` (measured from
    outside), ``import_s`` (jax and jaxsched), ``trace_s``, ``lower_s``, ``compile_s``,
    ``load_s``, ``save_s`` (summed over executables), ``run_s`` (the rest of the command),
    ``compiled`` / ``loaded`` (executables), ``rc``, ``stdout``, ``stderr``."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI_CHILD, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    wall = time.perf_counter() - t0
    lines = [x for x in done.stderr.splitlines() if x.startswith("PHASES ")]
    if not lines:
        raise RuntimeError(f"jaxsched {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    info = json.loads(lines[-1][len("PHASES ") :])
    out = {"wall_s": wall, "rc": info["rc"], "import_s": info["import_s"]}
    for phase in ("trace_s", "lower_s", "compile_s", "load_s", "save_s"):
        out[phase] = sum(e[phase] for e in info["events"])
    spent = sum(out[p] for p in ("trace_s", "lower_s", "compile_s", "load_s", "save_s"))
    out["run_s"] = info["main_s"] - spent
    out["compiled"] = sum(e["source"] == "compiled" for e in info["events"])
    out["loaded"] = sum(e["source"] == "store" for e in info["events"])
    out["executables"] = [
        {k: e[k] for k in ("function", "source", "trace_s", "lower_s", "compile_s", "load_s")}
        for e in info["events"]
    ]
    out["stdout"], out["stderr"] = done.stdout, done.stderr
    return out


def write_report(
    name: str, data: dict, markdown: str, directory: Path = REPORTS
) -> tuple[Path, Path]:
    """Write ``DIRECTORY/NAME.md`` and ``NAME.json`` (``benchmarks/reports`` by default);
    their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    md, js = directory / f"{name}.md", directory / f"{name}.json"
    md.write_text(markdown.rstrip() + "\n")
    js.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    return md, js


def write_report_at(prefix: Path, data: dict, markdown: str) -> tuple[Path, Path]:
    """`write_report` to ``PREFIX.md`` and ``PREFIX.json`` (a benchmark's ``--out``)."""
    prefix = Path(prefix)
    return write_report(prefix.with_suffix("").name, data, markdown, prefix.parent)


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
