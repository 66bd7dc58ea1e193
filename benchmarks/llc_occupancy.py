"""What llc reports for each AMDGPU machine preset: registers, LDS and occupancy per kernel.

    python benchmarks/llc_occupancy.py [--kernels DIR] [--out tests/data/llc_occupancy.json]
                                       [--asm-dir DIR]

For every target of `CONFIGS` (a preset of `jaxsched.machines.amdgpu.TARGETS` and an llc) it
compiles with ``llc -march=amdgcn -mcpu=TARGET [-mattr=...] -O3``

- the real kernels' IR (``--kernels``, default ``/tmp/k/kernels/ll``; gfx906 IR from clang 15)
  and ``tests/data/amdgpu_*.ll``, after dropping each function's ``"target-cpu"`` and
  ``"target-features"`` attributes;
- synthetic kernels whose inline assembly clobbers one register, which makes llc count exactly
  that many (`synthetic_cases`): VGPR counts 1..3 and both sides of every multiple of 4 up to
  256, every SGPR count up to ``getAddressableNumSGPRs`` on gfx9, and on the unified
  gfx90a/gfx942 file a grid of (VGPRs, AGPRs) pairs;

and records each kernel's ``NumVgprs``, ``NumAgprs`` (null where llc does not print it),
``NumSgprs``, ``LDSByteSize`` and ``Occupancy`` from the assembly's "Kernel info" comments. The
tests (tests/test_machines.py) check every kernel without LDS against the presets' occupancy.
Prints, per target, how many kernels agree with the model.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from jaxsched.machines.amdgpu import (
    TARGETS,
    AmdgpuTarget,
    unified_vgprs,
    workgroup_occupancy,
)
from jaxsched.machines.model import get_machine

ROOT = Path(__file__).resolve().parent.parent

LLC19 = "/usr/lib/llvm-19/bin/llc"
LLC15 = "/usr/lib/llvm-15/bin/llc"
#: Synthetic kernels' work-group size: small enough that it never limits occupancy
#: (``getMaxWorkGroupsPerCU``); the real kernels all carry the same attribute.
WORK_GROUP = '"amdgpu-flat-work-group-size"="1,256"'
#: VGPR counts compiled: 1..3 and both sides of every multiple of 4 up to 256 (every
#: allocation granule, 4, 8, 12 or 24, is a multiple of 4, so every step of every table).
VGPR_SWEEP = (1, 2, 3, *(n for k in range(4, 257, 4) for n in (k, k + 1) if n <= 256))
#: (VGPRs, AGPRs) pairs compiled on unified files: every alignment of the VGPRs, steps of
#: the occupancy table, both files full.
UNIFIED_VGPRS = (0, 1, 3, 4, 5, 64, 65, 128, 129, 255, 256)
UNIFIED_AGPRS = (1, 3, 4, 5, 63, 64, 65, 127, 200, 256)


#: The columns of a row of the data file.
COLUMNS = (
    "kernel",
    "NumVgprs",
    "NumAgprs",
    "NumSgprs",
    "LDSByteSize",
    "MaxFlatWorkGroupSize",
    "Occupancy",
)


class Config(NamedTuple):
    """One target compiled by one llc."""

    label: str  # key in the data file, e.g. "gfx906@llc15"
    llc: str  # path of llc
    target: str  # preset name (`TARGETS`)
    #: The maximum flat work-group size of a kernel without the attribute
    #: (``getDefaultFlatWorkGroupSize``): 4 waves up to LLVM 15, 1024 from LLVM 16. (The HSA
    #: metadata says 1024 in both, so it is not read.)
    default_workgroup: int


CONFIGS = (
    Config("gfx906@llc15", LLC15, "gfx906", 256),
    Config("gfx906@llc19", LLC19, "gfx906", 1024),
    *(Config(f"{name}@llc19", LLC19, name, 1024) for name in TARGETS if name != "gfx906"),
)


def strip_target_attributes(ir: str) -> str:
    """The IR without ``"target-cpu"="..."`` and ``"target-features"="..."`` attributes."""
    return re.sub(r'\s*"target-(cpu|features)"="[^"]*"', "", ir)


def compile_ir(llc: str, ir: str, t: AmdgpuTarget, args: Sequence[str] = ()) -> str:
    """llc's output for ``ir`` on stdin for target ``t`` (``llc -march=amdgcn -mcpu -O3
    ARGS``: assembly unless ``args`` stop earlier; the input is read as MIR when ``args``
    start after the instruction selector, ``-start-...``); raises RuntimeError on failure."""
    lang = ["-x", "mir"] if any(a.startswith("-start-") for a in args) else []
    cmd = [llc, "-march=amdgcn", f"-mcpu={t.mcpu}", "-O3", *lang, *args, "-o", "-", "-"]
    if t.mattr:
        cmd.insert(3, f"-mattr={t.mattr}")
    proc = subprocess.run(cmd, input=ir, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or ["no message"]
        raise RuntimeError(next((x for x in lines if "error" in x.lower()), lines[0]).strip())
    return proc.stdout


def kernel_info(asm: str) -> dict[str, dict[str, int]]:
    """Per function: the integer ``; Key: value`` lines of its "Kernel info" block
    (``NumVgprs``, ``NumAgprs``, ``NumSgprs``, ``Occupancy``, ``LDSByteSize``, ...)."""
    out: dict[str, dict[str, int]] = {}
    current = ""
    block: dict[str, int] | None = None
    for line in asm.splitlines():
        m = re.match(r"^\s*\.size\s+([\w.$]+),\s*\.Lfunc_end", line)
        if m:
            current, block = m.group(1), None
        elif line.startswith("; Kernel info:") and current:
            block = out.setdefault(current, {})
        elif block is not None:
            m = re.match(r"^; (\w+):\s*(-?\d+)", line)
            if m:
                block[m.group(1)] = int(m.group(2))
            elif not line.startswith(";"):
                block = None
    return out


def declared_workgroup_sizes(ir: str) -> dict[str, int]:
    """Per function of ``ir`` with an ``"amdgpu-flat-work-group-size"="min,max"`` attribute
    (in one of its attribute groups): ``max``."""
    groups = {
        m.group(1): int(m.group(2))
        for m in re.finditer(
            r'^attributes #(\d+) = \{[^\n]*"amdgpu-flat-work-group-size"="\d+,(\d+)"', ir, re.M
        )
    }
    out = {}
    for m in re.finditer(r"^define [^\n]*@([\w.$]+)\(([^\n]*)$", ir, re.M):
        sizes = [groups[g] for g in re.findall(r"#(\d+)", m.group(2)) if g in groups]
        if sizes:
            out[m.group(1)] = sizes[0]
    return out


def synthetic_cases(t: AmdgpuTarget) -> list[tuple[int, int, int]]:
    """(VGPRs, AGPRs, SGPRs) of the synthetic kernels of ``t``: `VGPR_SWEEP`; every SGPR count
    where SGPRs limit occupancy (gfx9), else a few; `UNIFIED_VGPRS` x `UNIFIED_AGPRS` on
    unified files."""
    cases = [(v, 0, 0) for v in VGPR_SWEEP]
    sgprs = range(1, t.addressable_sgprs + 1) if t.sgpr_steps else (1, 50, t.addressable_sgprs)
    cases += [(0, 0, s) for s in sgprs]
    if t.unified:
        cases += [(v, a, 0) for v in UNIFIED_VGPRS for a in UNIFIED_AGPRS]
    return cases


def synthetic_ir(cases: list[tuple[int, int, int]]) -> str:
    """A module of kernels, one per case ``(V, A, S)``, named ``v{V}_a{A}_s{S}``, each
    clobbering registers ``v{V-1}``, ``a{A-1}`` and ``s{S-1}`` (those present)."""
    lines = ['target triple = "amdgcn-amd-amdhsa"\n']
    for v, a, s in cases:
        regs = [f"~{{{f}{n - 1}}}" for f, n in (("v", v), ("a", a), ("s", s)) if n]
        lines.append(
            f"define amdgpu_kernel void @v{v}_a{a}_s{s}() #0 {{\n"
            f'  call void asm sideeffect "", "{",".join(regs)}"()\n  ret void\n}}\n'
        )
    lines.append(f"attributes #0 = {{ {WORK_GROUP} }}\n")
    return "\n".join(lines)


def rows_of(config: Config, ir: str, asm: str, kernels: list, index: dict, source: str):
    """``[kernel id, vgprs, agprs, sgprs, lds bytes, max work-group size, occupancy]`` per
    kernel of ``asm`` (compiled from ``ir``), registering kernels in ``kernels``/``index``."""
    rows = []
    declared = declared_workgroup_sizes(ir)
    for name, f in kernel_info(asm).items():
        key = (source, name)
        if key not in index:
            index[key] = len(kernels)
            kernels.append(list(key))
        rows.append(
            [
                index[key],
                f["NumVgprs"],
                f.get("NumAgprs"),
                f["NumSgprs"],
                f["LDSByteSize"],
                declared.get(name, config.default_workgroup),
                f["Occupancy"],
            ]
        )
    return rows


def model_occupancy(target: str, row: list) -> int:
    """The occupancy the preset gives a data row of a kernel without LDS: the machine's
    occupancy of its register counts (VGPRs as `jaxsched.machines.amdgpu.unified_vgprs` of
    the ArchVGPRs and AGPRs), capped by `workgroup_occupancy` of its work-group size."""
    _, vgprs, agprs, sgprs, _, workgroup, _ = row
    t = TARGETS[target]
    regs = get_machine(target).occupancy([unified_vgprs(t, vgprs, agprs or 0), sgprs])
    return min(regs, workgroup_occupancy(t, workgroup))


def collect(config: Config, files: list[Path], kernels: list, index: dict, asm_dir: Path | None):
    """The rows of one target (every kernel of ``files``, then the synthetic ones) and the
    files llc could not compile for it (name: llc's first error line)."""
    t = TARGETS[config.target]
    rows, failed = [], {}
    for path in files:
        ir = strip_target_attributes(path.read_text())
        try:
            asm = compile_ir(config.llc, ir, t)
        except RuntimeError as e:
            failed[path.name] = str(e)
            continue
        if asm_dir is not None:
            (asm_dir / config.label).mkdir(parents=True, exist_ok=True)
            (asm_dir / config.label / path.with_suffix(".s").name).write_text(asm)
        rows += rows_of(config, ir, asm, kernels, index, path.name)
    ir = synthetic_ir(synthetic_cases(t))
    rows += rows_of(config, ir, compile_ir(config.llc, ir, t), kernels, index, "synthetic")
    return rows, failed


def summary(config: Config, rows: list, kernels: list, failed: dict) -> str:
    """One line: kernels without LDS checked, agreeing, and the first disagreements."""
    no_lds = [r for r in rows if r[4] == 0]
    bad = [r for r in no_lds if model_occupancy(config.target, r) != r[-1]]
    real = [r for r in no_lds if kernels[r[0]][0] != "synthetic"]
    text = (
        f"{config.label:22s} kernels {len(rows):4d}, without LDS {len(no_lds):4d} "
        f"({len(real)} real), agree {len(no_lds) - len(bad):4d}; files failed {len(failed)}"
    )
    for r in bad[:5]:
        text += f"\n    differs: {kernels[r[0]]} {r[1:]}"
    for name, why in failed.items():
        text += f"\n    not compiled: {name}: {why}"
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=Path, default=Path("/tmp/k/kernels/ll"))
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "llc_occupancy.json")
    ap.add_argument("--asm-dir", type=Path, help="also keep each assembly under this folder")
    args = ap.parse_args(argv)
    files = sorted(args.kernels.glob("*.ll")) + sorted((ROOT / "tests/data").glob("amdgpu_*.ll"))
    kernels: list[list[str]] = []
    index: dict[tuple[str, str], int] = {}
    targets = {}
    for config in CONFIGS:
        version = subprocess.run([config.llc, "--version"], capture_output=True, text=True)
        rows, failed = collect(config, files, kernels, index, args.asm_dir)
        targets[config.label] = {
            "machine": config.target,
            "mcpu": TARGETS[config.target].mcpu,
            "mattr": TARGETS[config.target].mattr,
            "llc": re.search(r"LLVM version (\S+)", version.stdout).group(1),
            "failed": failed,
            "rows": rows,
        }
        print(summary(config, rows, kernels, failed), flush=True)
    write_data(args.out, kernels, targets)
    print(f"wrote {args.out}")
    return 0


def write_data(path: Path, kernels: list, targets: dict) -> None:
    """The data file: one kernel or row per line (small diffs when it is regenerated)."""
    head = {
        "generator": "benchmarks/llc_occupancy.py",
        "columns": COLUMNS,
    }
    parts = [json.dumps(head)[:-1] + ',\n"kernels": [\n']
    parts.append(",\n".join(json.dumps(k, separators=(",", ":")) for k in kernels) + "\n],\n")
    parts.append('"targets": {\n')
    items = []
    for label, t in targets.items():
        meta = {k: v for k, v in t.items() if k != "rows"}
        rows = ",\n".join(json.dumps(r, separators=(",", ":")) for r in t["rows"])
        items.append(f"{json.dumps(label)}: " + json.dumps(meta)[:-1] + f', "rows": [\n{rows}\n]}}')
    parts.append(",\n".join(items) + "\n}}\n")
    path.write_text("".join(parts))


if __name__ == "__main__":
    sys.exit(main())
