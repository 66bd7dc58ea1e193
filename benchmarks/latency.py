"""Benchmark: what a user waits for, cold (empty executable store) and warm (filled), against
llc on the same files.

    .venv/bin/python benchmarks/latency.py [--kernels DIR] [--files N] [--every K] [--name latency]

Each measurement is a new process running the ``jaxsched`` command a user would run, with its
own executable store (``JAXSCHED_CACHE_DIR``): first empty ("cold": every executable traced,
lowered and compiled), then as the first run left it ("warm"). Phases per process
(`harness.run_cli`): import, trace, lower, compile, load, run, and the executables compiled
and loaded. Measured:

* (a) the README's main job (``jaxsched mir schedule`` of the two kernels of
  ``examples/kernels``), and the colony's 40-region example ``examples/kernel.jsonl``;
* (b) every real kernel file of ``--kernels`` (the 76 of ``../shared/data/kernels.tar.gz``,
  pre-scheduler MIR from llc 15), one process per file: ``jaxsched mir schedule F -o OUT
  --llc LLC15`` (with the guard: llc and llvm-mca on each candidate schedule,
  `jaxsched.io.mir_select`);
* (c) all of them in one call: ``jaxsched mir schedule F1 F2 ... -o OUTDIR``;
* the baseline, in the same run: llc 15 on each file, its own scheduler, register allocation
  and code generation (``llc -start-before=machine-scheduler``).

Writes ``benchmarks/reports/{name}.{md,json}``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import harness

KERNELS = harness.ROOT.parent / "shared" / "data" / "kernels.tar.gz"
#: The README's main job: ``jaxsched mir schedule`` of these (relative to the repository).
README_KERNELS = ("examples/kernels/sgemm_tile.gfx906.mir", "examples/kernels/stencil.gfx906.mir")
PHASES = ("import_s", "trace_s", "lower_s", "compile_s", "load_s", "run_s")


def kernel_files(path: Path, tmp: Path, limit: int | None, every: int = 1) -> list[Path]:
    """The MIR files of a kernels folder or of the shared tarball (unpacked into ``tmp``),
    sorted by name; every ``every``-th of them, at most ``limit``."""
    if path.suffix == ".gz":
        with tarfile.open(path) as tar:
            tar.extractall(tmp, filter="data")
        path = tmp / "kernels" / "mir"
    files = sorted(path.glob("*.mir"))[::every]
    return files[:limit] if limit else files


def llc_seconds(files: list[Path], llc: str) -> list[float]:
    """Wall seconds of llc on each file (scheduler, RA, code generation; one process each)."""
    out = []
    for f in files:
        t0 = time.perf_counter()
        subprocess.run(
            [llc, "-march=amdgcn", "-mcpu=gfx906", "-O3", "-start-before=machine-scheduler",
             str(f), "-o", "/dev/null"],
            check=True, capture_output=True,
        )  # fmt: skip
        out.append(time.perf_counter() - t0)
    return out


def build_native(tmp: Path) -> float:
    """Seconds to build the native construction library (`jaxsched.colony.construction.native`) into
    ``tmp/native``, which every measured process then shares: it is built once per
    installation (and CPU), not per store."""
    code = (
        "from jaxsched.colony.construction import native; "
        "c = native.find_compiler(); c and native.build(c)"
    )
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, **_native_env(tmp)})
    return time.perf_counter() - t0


def byte_compile() -> float:
    """Seconds to write the package's bytecode (``python -m compileall``), as Python does at a
    first import or pip at a regular install: the measured processes then load it instead of
    compiling every module (0.3 s a process) where PYTHONDONTWRITEBYTECODE is set."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(harness.ROOT / "jaxsched")], check=True
    )
    return time.perf_counter() - t0


def _native_env(tmp: Path) -> dict[str, str]:
    return {"JAXSCHED_NATIVE_DIR": str(tmp / "native")}


def cold_warm(args: list[str], tmp: Path) -> dict:
    """The command on an empty store, then on the store it filled."""
    store = tmp / f"store-{time.perf_counter_ns()}"
    env = {"JAXSCHED_CACHE_DIR": str(store), **_native_env(tmp)}
    cold = harness.run_cli(args, env)
    warm = harness.run_cli(args, env)
    shutil.rmtree(store, ignore_errors=True)
    for run in (cold, warm):
        if run["rc"] != 0:
            raise RuntimeError(f"jaxsched {' '.join(args)}: exit {run['rc']}\n{run['stderr']}")
        del run["stdout"], run["stderr"]
    return {"cold": cold, "warm": warm}


def per_file(files: list[Path], tmp: Path, llc: str) -> list[dict]:
    """One process per file, cold then warm; ``llc`` (the files' LLVM) for the guard."""
    rows = []
    for k, f in enumerate(files):
        out = tmp / f"{f.stem}.out.mir"
        run = cold_warm(["mir", "schedule", str(f), "-o", str(out), "--llc", llc], tmp)
        rows.append({"file": f.name, **run})
        c, w = run["cold"], run["warm"]
        print(
            f"[{k + 1}/{len(files)}] {f.name[:60]}: cold {c['wall_s']:.1f} s "
            f"({c['compiled']} compiled), warm {w['wall_s']:.1f} s ({w['loaded']} loaded)",
            flush=True,
        )
    return rows


def _stats(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "max": max(values),
        "min": min(values),
        "total": sum(values),
    }


def summarize(report: dict) -> dict:
    files = report["files"]
    summary = {}
    for mode in ("cold", "warm"):
        summary[mode] = {
            "wall": _stats([r[mode]["wall_s"] for r in files]),
            **{p: statistics.median(r[mode][p] for r in files) for p in PHASES},
            "executables": _stats([r[mode]["compiled"] + r[mode]["loaded"] for r in files]),
        }
    summary["llc"] = _stats(report["llc_s"])
    summary["warm_over_llc"] = summary["warm"]["wall"]["median"] / summary["llc"]["median"]
    return summary


def markdown(report: dict) -> str:
    env, s = report["environment"], report["summary"]
    lines = [
        "# Latency: cold and warm processes against llc",
        "",
        harness.environment_markdown(env),
        "",
        "Cold: a new process on an empty executable store; warm: a new process on the store "
        "the cold one filled. Phases are medians over the processes (seconds). The native "
        "construction library is built once before (like an installation step, "
        f"{report.get('native_build_s', 0.0):.1f} s) and shared by every process; so is the "
        "package's bytecode (`compileall`, "
        f"{report.get('bytecode_s', 0.0):.1f} s: what Python writes at a first import, unless "
        "PYTHONDONTWRITEBYTECODE is set).",
        "",
        "## Targets",
        "",
    ]
    readme, example = report["readme"], report["example"]
    rows = [
        ["README main job (2 real kernels), cold", "", f"{readme['cold']['wall_s']:.1f} s"],
        ["README main job (2 real kernels), warm", "", f"{readme['warm']['wall_s']:.1f} s"],
        ["40-region example, cold", "<= 30 s", f"{example['cold']['wall_s']:.1f} s"],
        ["40-region example, warm", "<= 5 s", f"{example['warm']['wall_s']:.1f} s"],
        ["one kernel file per process, cold (median)", "<= 15 s",
         f"{s['cold']['wall']['median']:.1f} s"],
        ["one kernel file per process, warm (median)", "<= 2 s",
         f"{s['warm']['wall']['median']:.1f} s"],
        ["one kernel file per process, warm (max)", "<= 10 s",
         f"{s['warm']['wall']['max']:.1f} s"],
    ]  # fmt: skip
    if report.get("one_call"):
        one = report["one_call"]
        rows.append(["all files in one call, cold", "<= 120 s", f"{one['cold']['wall_s']:.1f} s"])
        rows.append(["all files in one call, warm", "", f"{one['warm']['wall_s']:.1f} s"])
    lines += [harness.table(["what", "target", "measured"], rows), "", "## Phases", ""]
    header = ["run", "wall", *[p[:-2] for p in PHASES], "compiled", "loaded"]
    body = [_phase_row(f"README main job {m}", readme[m]) for m in ("cold", "warm")]
    body += [_phase_row(f"40-region example {m}", example[m]) for m in ("cold", "warm")]
    for mode in ("cold", "warm"):
        m = s[mode]
        row = [f"kernel file {mode} (median)", f"{m['wall']['median']:.2f}"]
        row += [f"{m[p]:.2f}" for p in PHASES]
        body.append([*row, f"{m['executables']['median']:.0f}", ""])
    if report.get("one_call"):
        body += [
            _phase_row(f"all files, one call, {m}", report["one_call"][m]) for m in ("cold", "warm")
        ]
    lines += [harness.table(header, body), ""]
    lines += [
        f"llc 15 per file: median {s['llc']['median']:.3f} s, total {s['llc']['total']:.1f} s "
        f"over {len(report['llc_s'])} files; warm jaxsched / llc (medians): "
        f"{s['warm_over_llc']:.0f}x.",
        "",
        "## Per file (sorted by warm time)",
        "",
    ]
    rows = sorted(report["files"], key=lambda r: -r["warm"]["wall_s"])
    lines.append(
        harness.table(
            ["file", "cold s", "compiled", "warm s", "loaded", "llc s"],
            [_file_row(r) for r in rows],
        )
    )
    return "\n".join(lines)


def _phase_row(name: str, run: dict) -> list:
    row = [name, f"{run['wall_s']:.2f}", *[f"{run[p]:.2f}" for p in PHASES]]
    return [*row, run["compiled"], run["loaded"]]


def _file_row(r: dict) -> list:
    c, w = r["cold"], r["warm"]
    return [
        r["file"],
        f"{c['wall_s']:.1f}",
        c["compiled"],
        f"{w['wall_s']:.1f}",
        w["loaded"],
        f"{r['llc_s']:.2f}",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=Path, default=KERNELS, help="kernels.tar.gz or a MIR dir")
    ap.add_argument("--files", type=int, default=None, help="only the first N kernel files")
    ap.add_argument("--every", type=int, default=1, help="every K-th file (a sample)")
    ap.add_argument("--llc", default="/usr/lib/llvm-15/bin/llc")
    ap.add_argument("--no-one-call", action="store_true", help="skip (c)")
    ap.add_argument("--name", default="latency")
    args = ap.parse_args(argv)
    report = {"environment": harness.environment(files=args.files, every=args.every)}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        files = kernel_files(args.kernels, tmp, args.files, args.every)
        report["native_build_s"] = build_native(tmp)
        report["bytecode_s"] = byte_compile()
        print(f"native library built in {report['native_build_s']:.1f} s", flush=True)
        report["readme"] = cold_warm(["mir", "schedule", *README_KERNELS, "-o", str(tmp)], tmp)
        report["example"] = cold_warm(["schedule", "examples/kernel.jsonl", "--quiet"], tmp)
        for key in ("readme", "example"):
            print(f"{key}: {report[key]['cold']['wall_s']:.1f} s cold, "
                  f"{report[key]['warm']['wall_s']:.1f} s warm", flush=True)  # fmt: skip
        report["llc_s"] = llc_seconds(files, args.llc)
        report["files"] = per_file(files, tmp, args.llc)
        for row, sec in zip(report["files"], report["llc_s"], strict=True):
            row["llc_s"] = sec
        if not args.no_one_call:
            outdir = tmp / "all"
            report["one_call"] = cold_warm(
                ["mir", "schedule", *map(str, files), "-o", str(outdir), "--llc", args.llc], tmp
            )
    report["summary"] = summarize(report)
    md, _ = harness.write_report(args.name, report, markdown(report))
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
