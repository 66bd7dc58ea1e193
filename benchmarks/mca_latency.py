"""llvm-mca's latency per MIR front-end latency class, per target: the survey behind
``jaxsched.io.latency.LATENCY_BY_CPU``.

    python benchmarks/mca_latency.py [--kernels DIR] [--out tests/data/mca_latency.json]

Compiles the real kernels' IR (``--kernels``, default ``/tmp/k/kernels/ll``) and
``tests/data/amdgpu_*.ll`` for each target with llc 19 (as ``benchmarks/llc_occupancy.py``
does), runs ``llvm-mca -mtriple=amdgcn -mcpu=TARGET -instruction-info`` on the instructions,
puts each instruction in its class (`jaxsched.io.latency.latency_class` of the upper-case
mnemonic; region boundaries and instructions that only exist after register allocation, such
as ``s_waitcnt``, are left out) and counts the latencies llvm-mca gives each class. Prints the
most frequent latency per class next to the table's and writes the counts to ``--out``
(tests/test_machines.py checks the tables against it).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

from llc_occupancy import LLC19, compile_ir, strip_target_attributes

from jaxsched.io.latency import LATENCY_BY_CPU, is_boundary_opcode, latency_class
from jaxsched.machines.amdgpu import TARGETS

HERE = Path(__file__).resolve().parent

MCA19 = "/usr/lib/llvm-19/bin/llvm-mca"
#: Targets surveyed (preset names: each wave size of gfx1100 to show they agree).
SURVEYED = ("gfx906", "gfx90a", "gfx942", "gfx1100", "gfx1100-wave64", "gfx1201")
#: Mnemonics that llc inserts after scheduling (never in a pre-scheduler MIR region).
POST_RA = re.compile(r"^s_(waitcnt|nop|delay_alu|clause|endpgm|set_inst_prefetch|code_end)")
#: llvm-mca runs on pieces of this many instructions (whole kernels can exhaust its memory).
CHUNK = 200


def instructions(asm: str) -> list[str]:
    """The instruction lines of an llc assembly text."""
    return [x for x in asm.splitlines() if re.match(r"^\t[a-z][a-z_0-9]*(\s|$)", x)]


def mca_latencies(lines: list[str], mcpu: str, mattr: str) -> list[tuple[str, int]]:
    """``(mnemonic, latency)`` of each instruction llvm-mca reads (unsupported ones skipped).

    A piece llvm-mca fails on (llvm-mca 19 runs out of memory on ``buffer_store_* offen``) is
    split in halves until the failing lines are alone; those are left out."""
    args = [MCA19, "-mtriple=amdgcn", f"-mcpu={mcpu}", "-instruction-info", "-iterations=1"]
    args += ["-skip-unsupported-instructions=any"] + ([f"-mattr={mattr}"] if mattr else [])
    out: list[tuple[str, int]] = []
    pieces = [lines[k : k + CHUNK] for k in range(0, len(lines), CHUNK)]
    while pieces:
        piece = pieces.pop()
        proc = subprocess.run(
            args, input="\n".join(piece) + "\n", capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0:
            half = len(piece) // 2
            pieces += [piece[:half], piece[half:]] if half else []
            continue
        for line in proc.stdout.split("Instructions:\n", 1)[-1].splitlines():
            m = re.match(r"^\s*\d+\s+(\d+)\s+[\d.]+\s+[*U\s]*?([a-z][a-z_0-9]*)\b", line)
            if m:
                out.append((m.group(2), int(m.group(1))))
            elif not line.strip() and out:
                break
    return out


def survey(name: str, files: list[Path]) -> dict[str, dict[int, int]]:
    """Per latency class: how many instructions of ``files`` llvm-mca gives each latency."""
    t = TARGETS[name]
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in files:
        try:
            asm = compile_ir(LLC19, strip_target_attributes(path.read_text()), t)
        except RuntimeError:
            continue  # e.g. image instructions on gfx90a (benchmarks/llc_occupancy.py lists them)
        for mnemonic, lat in mca_latencies(instructions(asm), t.mcpu, t.mattr):
            opcode = mnemonic.upper()
            if not POST_RA.match(mnemonic) and not is_boundary_opcode(opcode):
                counts[latency_class(opcode)][lat] += 1
    return {c: dict(sorted(n.items())) for c, n in sorted(counts.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=Path, default=Path("/tmp/k/kernels/ll"))
    ap.add_argument("--out", type=Path, default=HERE.parent / "tests/data/mca_latency.json")
    args = ap.parse_args(argv)
    files = sorted(args.kernels.glob("*.ll")) + sorted((HERE.parent / "tests/data").glob("*.ll"))
    files = [f for f in files if "nvptx" not in f.name]
    version = subprocess.run([MCA19, "--version"], capture_output=True, text=True).stdout
    data = {
        "generator": "benchmarks/mca_latency.py",
        "llvm-mca": re.search(r"LLVM version (\S+)", version).group(1),
        "targets": {},
    }
    for name in SURVEYED:
        counts = survey(name, files)
        data["targets"][name] = {"mcpu": TARGETS[name].mcpu, "counts": counts}
        table = LATENCY_BY_CPU[TARGETS[name].mcpu]
        print(name)
        for cls, n in counts.items():
            mode = max(n, key=lambda lat: (n[lat], -lat))
            print(f"  {cls:8s} table {table[cls]:4d}  mca mode {mode:4d}  counts {n}")
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
