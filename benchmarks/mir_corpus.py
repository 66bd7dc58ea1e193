"""MIR corpus: real MIR written by others, read, scheduled and checked by LLVM's verifier.

    python benchmarks/mir_corpus.py [--kernels DIR] [--subset N] [--llvm-tests DIR]
        [--method auto] [--guard default|off] [--batch 8] [--work DIR] [--out PREFIX]

Two corpora (issue 33):

- ``generated``: the shared kernels (``kernels/ll/*.ll``, clang 15 for gfx906; default: the
  shared ``kernels.tar.gz`` unpacked under ``--work``, else the repo's own kernels) compiled by
  llc 15, 16 and 19 (``-stop-before=machine-scheduler``) for every modelled target that llc
  knows, each ``.ll``'s ``"target-cpu"`` rewritten to the target and its ``"target-features"``
  dropped (else llc compiles the functions for gfx906);
- ``llvm-tests`` (``--llvm-tests DIR``): LLVM's own AMDGPU MIR tests, each with the target of
  its RUN line (``-mcpu=``, or ``-mtriple=amdgpuM.mS``).

For every file with its target T: does llc 19 read it (``llc -march=amdgcn -mcpu=T
-run-pass=none``)? ``jaxsched mir import FILE --mcpu T`` and ``jaxsched mir schedule FILES -o
DIR --mcpu T`` (in this process, through `jaxsched.cli.main.main`; ``--batch`` files a call);
the written MIR through llc's machine verifier (``-start-after=machine-scheduler
-verify-machineinstrs``: the rest of the pipeline, verified after every pass; where the input
itself fails that, ``-run-pass=none -verify-machineinstrs``), with llc 19 for the LLVM tests and
the producing llc for the generated files; and whether any instruction moved. Classes:
scheduled+verified, scheduled-unchanged, scheduled-unverified (the input fails llc's verifier
too), refused-clear (the error names the file and a line), refused-syntax (a file llc reads
refused by the MIR parser: a failure), refused-unclear, crash, verifier-rejected (a failure).
The baseline is llc itself: it reads every counted file by construction, and its time per file
(parse, and the verified compile of the rest of the pipeline) is measured in the same run.
Writes ``benchmarks/reports/mir_corpus.{md,json}`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import harness

ROOT = harness.ROOT
#: The shared kernels (clang 15, gfx906): ``kernels/ll/*.ll``.
SHARED_KERNELS = Path(os.environ.get("JAXSCHED_KERNELS", "/work/shared/data/kernels.tar.gz"))
#: Kernels in the repository, used when the shared ones are absent.
REPO_KERNELS = (ROOT / "examples" / "kernels", ROOT / "tests" / "data" / "real")
#: LLVM versions whose llc makes the generated corpus; the reference llc of the headline.
VERSIONS = (15, 16, 19)
REFERENCE = 19
LLC_TIMEOUT = 300

CLASSES = (
    "scheduled+verified",
    "scheduled-unchanged",
    "scheduled-unverified",
    "refused-clear",
    "refused-syntax",
    "refused-unclear",
    "crash",
    "verifier-rejected",
)
#: Classes of a file read and scheduled into MIR that llc's verifier accepts.
SUCCESS = ("scheduled+verified", "scheduled-unchanged")
#: Words of `jaxsched.io.mir_parse`'s errors: a refusal for the file's syntax.
SYNTAX = re.compile(
    r"cannot parse|not MIR|unexpected (text|line)|indented|expected a basic block header|"
    r"bundle|block scalar|repeated|has no 'body:'|without a 'name:'|undefined block|"
    r"after the block's instructions|has no basic block|truncated|no machine function"
)
_TARGET_CPU = re.compile(r'"target-cpu"="[^"]*"')
_TARGET_FEATURES = re.compile(r'\s*"target-features"="[^"]*"')


def modelled_targets() -> tuple[str, ...]:
    """The llc ``-mcpu`` of every modelled AMDGPU target (`jaxsched.machines.amdgpu.TARGETS`),
    once each, in the presets' order."""
    from jaxsched.machines.amdgpu import TARGETS

    return tuple(dict.fromkeys(t.mcpu for t in TARGETS.values()))


def llc_of(version: int) -> str | None:
    """The llc of LLVM ``version`` (Debian's /usr/lib/llvm-N, or llc-N on the PATH), or None."""
    for p in (f"/usr/lib/llvm-{version}/bin/llc", shutil.which(f"llc-{version}")):
        if p and Path(p).exists():
            return p
    return None


def llc_processors(llc: str) -> set[str]:
    """The AMDGPU processors an llc knows (``-mcpu=help``)."""
    done = subprocess.run(
        [llc, "-march=amdgcn", "-mcpu=help"], capture_output=True, text=True, timeout=60
    )
    return set(re.findall(r"^\s+(gfx\w+|generic\w*|[a-z]+)\s+-", done.stdout + done.stderr, re.M))


def retarget(ir: str, target: str) -> str:
    """LLVM IR with every ``"target-cpu"`` set to ``target`` and ``"target-features"`` dropped
    (a gfx906 feature list does not fit other targets)."""
    return _TARGET_FEATURES.sub("", _TARGET_CPU.sub(f'"target-cpu"="{target}"', ir))


def run_llc(llc: str, args: Sequence[str]) -> tuple[bool, str, float]:
    """(exit status 0, its first error line, seconds) of ``llc ARGS``."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run([llc, *args], capture_output=True, text=True, timeout=LLC_TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"llc timed out after {LLC_TIMEOUT} s", time.perf_counter() - t0
    return done.returncode == 0, first_error(done.stderr), time.perf_counter() - t0


def first_error(stderr: str) -> str:
    """What went wrong, from llc's ``stderr``: its first ``Bad machine code`` (with the pass
    after which the verifier ran), else its first ``error`` line, else its first line."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    bad = next((i for i, x in enumerate(lines) if x.startswith("*** Bad machine code")), None)
    if bad is not None:
        after = next((x[2:] for x in reversed(lines[:bad]) if x.startswith("# After ")), "")
        detail = next((x for x in lines[bad + 1 : bad + 4] if x.startswith("- instruction")), "")
        return " ".join(x for x in (lines[bad], after and f"({after})", detail) if x)[:300]
    hit = next((x for x in lines if "error" in x.lower()), lines[0] if lines else "")
    return hit[:300]


def compile_to_mir(llc: str, ll: Path, target: str, out: Path) -> tuple[bool, str, float]:
    """``llc -march=amdgcn -mcpu=TARGET -O3 -stop-before=machine-scheduler LL -o OUT``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    args = ["-march=amdgcn", f"-mcpu={target}", "-O3", "-stop-before=machine-scheduler"]
    return run_llc(llc, [*args, str(ll), "-o", str(out)])


def reads(llc: str, path: Path, target: str) -> tuple[bool, str, float]:
    """Does ``llc -march=amdgcn -mcpu=TARGET -run-pass=none`` read the MIR file?"""
    return run_llc(
        llc, ["-march=amdgcn", f"-mcpu={target}", "-run-pass=none", "-o", "/dev/null", str(path)]
    )


#: llc's verifier checks, strongest first: the rest of the pipeline after the machine scheduler
#: verified after every pass; the file as read.
VERIFY = {
    "pipeline": ["-start-after=machine-scheduler", "-verify-machineinstrs"],
    "read": ["-run-pass=none", "-verify-machineinstrs"],
}


def verify(llc: str, path: Path, target: str, level: str) -> tuple[bool, str, float]:
    """llc's machine verifier on a MIR file (`VERIFY`'s ``level``)."""
    args = ["-march=amdgcn", f"-mcpu={target}", *VERIFY[level], "-o", "/dev/null", str(path)]
    return run_llc(llc, args)


@dataclass
class Entry:
    """One corpus file and what happened to it."""

    corpus: str
    path: str
    target: str
    llvm: int  # the llc version that made (generated) or checks (LLVM tests) it
    llc19_reads: bool = False
    llc19_error: str = ""
    own_reads: bool = False
    import_code: int | None = None
    import_error: str = ""
    schedule_code: int | None = None
    schedule_error: str = ""
    summary: str = ""
    output: str = ""
    verify_level: str = ""
    verify_ok: bool | None = None
    verify_error: str = ""
    verify_read_ok: bool | None = None  # the output through the "read" check (when rejected)
    reordered: bool | None = None
    cls: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The file's name."""
        return Path(self.path).name


def kernel_files(kernels: Path | None, work: Path) -> tuple[list[Path], str]:
    """The ``.ll`` kernels and where they come from: ``kernels`` (a directory of ``.ll`` or
    holding ``ll/``), else the shared tarball unpacked under ``work``, else the repo's."""
    if kernels is not None:
        base = kernels / "ll" if (kernels / "ll").is_dir() else kernels
        return sorted(base.glob("*.ll")), str(base)
    if SHARED_KERNELS.is_file():
        dest = work / "shared"
        if not (dest / "kernels" / "ll").is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            with tarfile.open(SHARED_KERNELS) as tar:
                tar.extractall(dest, filter="data")
        return sorted((dest / "kernels" / "ll").glob("*.ll")), str(SHARED_KERNELS)
    found = sorted(p for d in REPO_KERNELS for p in d.glob("*.ll"))
    return found, "the repository's kernels (" + ", ".join(str(d) for d in REPO_KERNELS) + ")"


def pick(files: list[Path], subset: int | None) -> list[Path]:
    """All ``files``, or the ``subset`` smallest (a quick run), in name order."""
    if subset is None:
        return files
    return sorted(sorted(files, key=lambda p: (p.stat().st_size, p.name))[:subset])


def generate(
    kernels: list[Path], targets: Sequence[str], versions: Sequence[int], work: Path
) -> tuple[list[Entry], list[dict]]:
    """The generated corpus: every kernel through every installed llc for every target it
    knows (files already made are kept); and the (version, target, kernel, why) skipped."""
    entries, skipped = [], []
    for version in versions:
        llc = llc_of(version)
        if llc is None:
            skipped.append({"llvm": version, "why": "llc not installed"})
            continue
        known = llc_processors(llc)
        for target in targets:
            if target not in known:
                skipped.append({"llvm": version, "target": target, "why": "unknown to llc"})
                continue
            for ll in kernels:
                entry = _generate_one(llc, version, ll, target, work)
                if isinstance(entry, Entry):
                    entries.append(entry)
                else:
                    skipped.append(entry)
    return entries, skipped


def _generate_one(llc: str, version: int, ll: Path, target: str, work: Path) -> Entry | dict:
    """One kernel through one llc for one target (its retargeted IR under ``work/ll``)."""
    out = work / "gen" / f"llc{version}" / target / f"{ll.stem}.mir"
    if not out.is_file() or out.stat().st_mtime < ll.stat().st_mtime:
        src = work / "ll" / target / ll.name
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(retarget(ll.read_text(), target))
        ok, err, _ = compile_to_mir(llc, src, target, out)
        if not ok:
            out.unlink(missing_ok=True)
            return {"llvm": version, "target": target, "kernel": ll.name, "why": err}
    return Entry("generated", str(out), target, version)


#: ``-mcpu=X`` / ``--mcpu X`` of a RUN line, or its triple's ``amdgpuM.mS`` processor.
_MCPU = re.compile(r"-mcpu[= ](\S+)")
_TRIPLE = re.compile(r"-mtriple[= ]amdgpu(\d+)\.(\d)(\w)")


def run_line_target(text: str) -> str:
    """The target of a test's first RUN line that names one (``-mcpu=``, else the
    ``amdgpu9.0a``-style triple as ``gfx90a``); ``generic`` (llc's default) without."""
    for line in text.splitlines():
        if "RUN:" not in line:
            continue
        if m := _MCPU.search(line):
            return m.group(1)
        if m := _TRIPLE.search(line):
            return f"gfx{m.group(1)}{m.group(2)}{m.group(3)}"
    return "generic"


def llvm_tests(directory: Path | None) -> list[Entry]:
    """LLVM's MIR tests in ``directory`` (``*.mir``), each with its RUN line's target."""
    if directory is None:
        return []
    return [
        Entry("llvm-tests", str(p), run_line_target(p.read_text(errors="replace")), REFERENCE)
        for p in sorted(directory.glob("*.mir"))
    ]


def check_reads(entries: Iterable[Entry]) -> None:
    """Whether llc 19 (and the file's own llc) reads each file."""
    ref = llc_of(REFERENCE)
    for e in entries:
        if ref is not None:
            e.llc19_reads, e.llc19_error, e.seconds["llc19_read"] = reads(
                ref, Path(e.path), e.target
            )
        own = llc_of(e.llvm)
        e.own_reads = (
            e.llc19_reads
            if e.llvm == REFERENCE
            else bool(own and reads(own, Path(e.path), e.target)[0])
        )


@dataclass
class CliRun:
    """One `jaxsched.cli.main.main` call: exit code (None: it raised), stdout, stderr, seconds."""

    code: int | None
    out: str
    err: str
    seconds: float


def run_cli(argv: list[str]) -> CliRun:
    """``jaxsched ARGV`` in this process, its output captured; an exception it lets out is a
    crash (code None, the traceback in ``err``)."""
    from jaxsched.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | None = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except Exception:  # a crash is what this measures
            import traceback

            traceback.print_exc(file=err)
            code = None
    return CliRun(code, out.getvalue(), err.getvalue(), time.perf_counter() - t0)


def crashed(run: CliRun) -> bool:
    """An internal error (exit 1) or an exception out of the CLI."""
    return run.code is None or run.code == 1 or "Traceback" in run.err


def import_one(e: Entry, work: Path) -> None:
    """``jaxsched mir import FILE -o REGIONS --mcpu T``."""
    regions = work / "regions" / f"{e.corpus}-{e.llvm}-{e.target}-{e.name}.jsonl"
    regions.parent.mkdir(parents=True, exist_ok=True)
    run = run_cli(["mir", "import", e.path, "-o", str(regions), "--mcpu", e.target])
    e.import_code = run.code
    e.import_error = "" if run.code == 0 else error_of(run.err, e.path)
    e.seconds["import"] = run.seconds


def error_of(stderr: str, path: str) -> str:
    """The error line of ``stderr`` about ``path`` (else its first error line)."""
    lines = [x.strip() for x in stderr.splitlines() if "error" in x.lower() or "Error" in x]
    mine = [x for x in lines if path in x]
    return (mine or lines or [stderr.strip().splitlines()[-1] if stderr.strip() else ""])[0][:400]


def schedule_group(group: list[Entry], work: Path, extra: list[str]) -> None:
    """``jaxsched mir schedule FILES -o DIR --mcpu T`` for files of one target (their outputs
    under ``work/out``); if the call crashes, each file again alone, to find the one."""
    first = group[0]
    out = work / "out" / first.corpus / f"llc{first.llvm}" / first.target
    out.mkdir(parents=True, exist_ok=True)
    for e in group:  # no output of an earlier run stands for this one's
        (out / e.name).unlink(missing_ok=True)
    argv = ["mir", "schedule", *(e.path for e in group), "-o", str(out)]
    run = run_cli([*argv, "--mcpu", first.target, *extra])
    if crashed(run) and len(group) > 1:
        for e in group:
            schedule_group([e], work, extra)
        return
    for e in group:
        _schedule_result(e, run, out / e.name, len(group))


def _schedule_result(e: Entry, run: CliRun, output: Path, n: int) -> None:
    """``e``'s share of a schedule call: written (its summary line) or its error."""
    e.seconds["schedule"] = run.seconds / n
    summary = next(
        (x for x in run.out.splitlines() if "scheduled with" in x and (n == 1 or e.path in x)), ""
    )
    if crashed(run):
        e.schedule_code, e.schedule_error = run.code, error_of(run.err, e.path)
    elif summary and output.is_file():
        e.schedule_code, e.summary, e.output = 0, summary.strip(), str(output)
    else:
        e.schedule_code = run.code if run.code else 2
        e.schedule_error = error_of(run.err, e.path)


def instruction_lines(text: str) -> list[str]:
    """The instructions of a MIR text's bodies in order (comments, blank lines, block headers,
    ``successors``/``liveins`` and kill flags left out): what a schedule may reorder."""
    out, inside = [], False
    for raw in text.splitlines():
        if re.match(r"^\w[\w-]*:", raw) or raw.startswith(("---", "...")):
            inside = raw.startswith("body:")
            continue
        s = raw.strip()
        if not inside or not s or s.startswith((";", "#")) or re.match(r"bb\.\d+", s):
            continue
        if s.startswith(("successors:", "liveins:")):
            continue
        out.append(re.sub(r"\bkilled ", "", s))
    return out


def check_output(e: Entry) -> None:
    """llc's verifier on the written MIR at the strongest level the input passes (and, when
    it rejects the output, the "read" level too); whether any instruction moved."""
    llc = llc_of(e.llvm)
    if not e.output or llc is None:
        return
    for level in VERIFY:
        ok_in, err_in, secs = verify(llc, Path(e.path), e.target, level)
        e.seconds[f"llc_verify_input_{level}"] = secs
        if ok_in:
            e.verify_level = level
            e.verify_ok, e.verify_error, e.seconds["llc_verify"] = verify(
                llc, Path(e.output), e.target, level
            )
            break
        e.verify_error = f"input: {err_in}"
    if e.verify_ok is False and e.verify_level != "read":
        e.verify_read_ok = verify(llc, Path(e.output), e.target, "read")[0]
    before = instruction_lines(Path(e.path).read_text(errors="replace"))
    e.reordered = before != instruction_lines(Path(e.output).read_text(errors="replace"))


def names_line(message: str, path: str) -> bool:
    """Does ``message`` name the file and a line (``NAME:LINE``)?"""
    return re.search(re.escape(Path(path).name) + r":\d+", message) is not None


def classify(e: Entry) -> str:
    """The class of a file's outcome (`CLASSES`)."""
    if e.import_code is None or e.import_code == 1 or e.schedule_code in (None, 1):
        return "crash"
    message = e.schedule_error or e.import_error
    if message or not e.output:
        if not names_line(message, e.path):
            return "refused-unclear"
        llc_reads = e.llc19_reads or e.own_reads
        return "refused-syntax" if llc_reads and SYNTAX.search(message) else "refused-clear"
    if e.verify_ok is None:
        return "scheduled-unverified"
    if not e.verify_ok:
        return "verifier-rejected"
    return "scheduled+verified" if e.reordered else "scheduled-unchanged"


def run_corpus(entries: list[Entry], work: Path, extra: list[str], batch: int) -> dict:
    """Every step for every entry; the seconds of each phase."""
    from jaxsched.compilation import relieve_map_pressure

    times = {}
    t0 = time.perf_counter()
    check_reads(entries)
    times["llc_read_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for e in entries:
        import_one(e, work)
    times["import_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for group in groups(entries, batch):
        schedule_group(group, work, extra)
        relieve_map_pressure()  # one process compiles every shape: XLA's maps add up
        g = group[0]
        print(
            f"  {len(group)} files scheduled ({g.corpus}, llc {g.llvm}, {g.target})",
            file=sys.stderr,
        )
    times["schedule_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for e in entries:
        check_output(e)
        e.cls = classify(e)
    times["verify_s"] = time.perf_counter() - t0
    return times


def groups(entries: list[Entry], batch: int) -> list[list[Entry]]:
    """Entries by (corpus, llc, target), in chunks of at most ``batch``."""
    keyed: dict[tuple, list[Entry]] = {}
    for e in entries:
        keyed.setdefault((e.corpus, e.llvm, e.target), []).append(e)
    return [g[i : i + batch] for g in keyed.values() for i in range(0, len(g), batch)]


def rate(entries: list[Entry]) -> tuple[int, int, float]:
    """(read and scheduled, of the files llc 19 reads, percent)."""
    base = [e for e in entries if e.llc19_reads]
    good = sum(e.cls in SUCCESS for e in base)
    return good, len(base), 100.0 * good / len(base) if base else float("nan")


def counts(entries: list[Entry], key) -> dict[str, dict[str, int]]:
    """Class counts per ``key(entry)``."""
    out: dict[str, Counter] = {}
    for e in entries:
        out.setdefault(str(key(e)), Counter())[e.cls] += 1
    return {k: {c: v[c] for c in CLASSES if v[c]} for k, v in sorted(out.items())}


def per_file_seconds(entries: list[Entry], phase: str) -> float:
    """The mean seconds per file of a phase (0 without any)."""
    xs = [e.seconds[phase] for e in entries if phase in e.seconds]
    return sum(xs) / len(xs) if xs else 0.0


def summarize(entries: list[Entry], modelled: Sequence[str]) -> dict:
    """Counts per class (per corpus, per target, per llc), the headline rates, the times."""
    by_corpus = {}
    for corpus in sorted({e.corpus for e in entries}):
        mine = [e for e in entries if e.corpus == corpus]
        good, base, pct = rate(mine)
        by_corpus[corpus] = {
            "files": len(mine),
            "llc19_reads": base,
            "read_and_scheduled": good,
            "percent": pct,
            "classes": dict(Counter(e.cls for e in mine)),
            "by_target": counts(mine, lambda e: e.target),
            "by_llc": counts(mine, lambda e: e.llvm),
            "reordered": sum(bool(e.reordered) for e in mine),
        }
    good, base, pct = rate(entries)
    mgood, mbase, mpct = rate([e for e in entries if e.target in modelled])
    return {
        "files": len(entries),
        "llc19_reads": base,
        "read_and_scheduled": good,
        "percent": pct,
        "modelled": {"read_and_scheduled": mgood, "llc19_reads": mbase, "percent": mpct},
        "classes": {c: sum(e.cls == c for e in entries) for c in CLASSES},
        "corpora": by_corpus,
        "per_file_s": {
            p: per_file_seconds(entries, p)
            for p in ("llc19_read", "import", "schedule", "llc_verify")
        },
    }


FAILURES = ("refused-syntax", "refused-unclear", "crash", "verifier-rejected")


def failure_rows(entries: list[Entry], limit: int = 60) -> list[list[str]]:
    """Rows of the failures (and clear refusals), one per (class, message) with its count
    and a first file, most common first."""
    seen: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        if e.cls in (*FAILURES, "refused-clear", "scheduled-unverified"):
            msg = _generic(e.verify_error or e.schedule_error or e.import_error, e)
            seen.setdefault((e.cls, msg), []).append(e)
    rows = sorted(seen.items(), key=lambda kv: (CLASSES.index(kv[0][0]), -len(kv[1])))
    return [
        [
            cls,
            str(len(es)),
            f"{es[0].corpus}: {short_name(es[0])}",
            _cell(es[0]),
        ]
        for (cls, _), es in rows[:limit]
    ]


def unread_rows(entries: list[Entry]) -> list[list]:
    """The files llc 19 does not read (outside the headline), by llc's message: how many,
    how many their own llc reads, how many `mir schedule` wrote, a first file."""
    seen: dict[str, list[Entry]] = {}
    for e in entries:
        if not e.llc19_reads:
            seen.setdefault(_generic(e.llc19_error, e), []).append(e)
    rows = sorted(seen.items(), key=lambda kv: -len(kv[1]))
    return [
        [
            len(es),
            sum(e.own_reads for e in es),
            sum(bool(e.output) for e in es),
            f"{es[0].corpus}: {short_name(es[0])}",
            "`" + es[0].llc19_error.replace(es[0].path, "FILE")[:160].replace("|", "\\|") + "`",
        ]
        for _, es in rows
    ]


def _cell(e: Entry) -> str:
    """A file's message as a Markdown table cell (its path as `short_name`)."""
    text = (_message(e) or "-").replace(e.path, short_name(e))
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def _message(e: Entry) -> str:
    """A file's message: verifier, schedule or import error, shortened."""
    text = (e.verify_error or e.schedule_error or e.import_error)[:220]
    if e.verify_read_ok:
        text += " [the written MIR passes -run-pass=none -verify-machineinstrs]"
    return text


def _generic(message: str, e: Entry) -> str:
    """A message with the file's path, numbers and names folded (to group alike failures)."""
    text = message.replace(e.path, "FILE").replace(e.name, "FILE")
    text = re.sub(r"/\S+", "PATH", text)
    return re.sub(r"\d+", "N", text)[:160]


def markdown(data: dict) -> str:
    """The report."""
    t = data["totals"]
    env = data["environment"]
    lines = [
        "# MIR corpus: real MIR read, scheduled and checked by LLVM's verifier",
        "",
        f"Headline: of the {t['llc19_reads']} MIR files that llc {REFERENCE} reads, "
        f"**{t['percent']:.1f}%** ({t['read_and_scheduled']}) are read by `jaxsched mir import`"
        f" and scheduled by `jaxsched mir schedule --mcpu TARGET` into MIR that llc's verifier "
        f"accepts; on the modelled targets {t['modelled']['percent']:.1f}% "
        f"({t['modelled']['read_and_scheduled']} of {t['modelled']['llc19_reads']}).",
        "",
        harness.environment_markdown(env),
        "",
        "How: each file's target T is its generating llc's `-mcpu` (generated) or its RUN "
        "line's (LLVM tests); `llc -march=amdgcn -mcpu=T -run-pass=none` decides whether llc "
        f"{REFERENCE} reads it. The written MIR goes through `llc -start-after=machine-scheduler "
        "-verify-machineinstrs` (the rest of the pipeline, the machine verifier after every "
        "pass) of the file's own llc, or through `-run-pass=none -verify-machineinstrs` where "
        "the input fails the first; scheduled-unverified: the input fails both (llc cannot "
        "read it), so the output cannot be judged. `-run-pass=none -verify-machineinstrs` "
        "alone does not catch a use moved above its definition; the pipeline check does.",
        "",
        f"Settings: `{' '.join(data['settings']['schedule_flags']) or '(CLI defaults)'}` after "
        f"`--mcpu TARGET`; {data['settings']['batch']} files a schedule call; kernels from "
        f"{data['settings']['kernels']}"
        + (f", {data['settings']['subset']} smallest" if data["settings"]["subset"] else "")
        + f"; LLVM tests from {data['settings']['llvm_tests'] or '(none)'}.",
        "",
        "## Classes",
        "",
        harness.table(
            ["corpus", "files", f"llc {REFERENCE} reads", "read and scheduled", *CLASSES],
            [_class_row(name, c) for name, c in t["corpora"].items()]
            + [_class_row("all", t | {"classes": t["classes"]})],
        ),
        "",
    ]
    lines += _per_key_sections(t)
    lines += _time_section(data)
    lines += [f"## Files llc {REFERENCE} does not read (outside the headline)", ""]
    lines += [
        harness.table(
            [
                "files",
                "their own llc reads",
                "mir schedule wrote",
                "first file",
                f"llc {REFERENCE}",
            ],
            data["unread_rows"],
        )
        if data["unread_rows"]
        else "None.",
        "",
    ]
    lines += ["## Failures, clear refusals and unverifiable inputs", ""]
    rows = data["failure_rows"]
    lines += [harness.table(["class", "files", "first file", "message"], rows) if rows else "None."]
    if data["skipped"]:
        lines += ["", "## Not generated", ""]
        lines += [
            harness.table(
                ["llc", "target", "kernel", "why"],
                [
                    [
                        s.get("llvm", ""),
                        s.get("target", ""),
                        s.get("kernel", "(all)"),
                        s["why"][:160],
                    ]
                    for s in data["skipped"]
                ],
            )
        ]
    return "\n".join(lines)


def _class_row(name: str, c: dict) -> list:
    """One row of the class table."""
    pct = c["percent"]
    share = f"{c['read_and_scheduled']} ({pct:.1f}%)" if pct == pct else "-"
    return [name, c["files"], c["llc19_reads"], share, *(c["classes"].get(k, 0) for k in CLASSES)]


def _per_key_sections(t: dict) -> list[str]:
    """Class counts per target and per llc version, per corpus."""
    out = []
    for corpus, c in t["corpora"].items():
        for key in ("by_target", "by_llc"):
            title = "target" if key == "by_target" else "llc version"
            rows = [
                [k, sum(v.values()), *(v.get(x, 0) for x in CLASSES)] for k, v in c[key].items()
            ]
            out += [
                f"### {corpus} per {title}",
                "",
                harness.table([title, "files", *CLASSES], rows),
                "",
            ]
    return out


def _time_section(data: dict) -> list[str]:
    """Where the time went, against llc's own time per file (the baseline)."""
    s, p = data["seconds"], data["totals"]["per_file_s"]
    ratio = p["schedule"] / p["llc_verify"] if p["llc_verify"] else float("nan")
    return [
        "## Time",
        "",
        f"Wall time: generation {s.get('generate_s', 0):.0f} s, llc reads {s['llc_read_s']:.0f} s, "
        f"import {s['import_s']:.0f} s, schedule {s['schedule_s']:.0f} s, verifier "
        f"{s['verify_s']:.0f} s; total {s['total_s']:.0f} s; CPU {s['cpu_s']:.0f} s in this "
        f"process (JAX's threads included), {s.get('cpu_children_s', float('nan')):.0f} s in "
        "its llc children.",
        "",
        f"Per file (mean): llc {REFERENCE} reading it {p['llc19_read']:.3f} s; `mir import` "
        f"{p['import']:.3f} s; `mir schedule` {p['schedule']:.3f} s (its share of a call, the "
        f"first call's JIT compilation included); llc compiling the rest of the pipeline with "
        f"its verifier {p['llc_verify']:.3f} s. `mir schedule` / llc: {ratio:.1f}x.",
        "",
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", type=Path, help="directory of .ll kernels (or holding ll/)")
    p.add_argument("--subset", type=int, help="only the N smallest kernels (a quick run)")
    p.add_argument("--llvm-tests", type=Path, help="directory of LLVM's AMDGPU .mir tests")
    p.add_argument("--no-generated", action="store_true", help="only the LLVM tests")
    p.add_argument("--targets", help="comma-separated targets (default: every modelled one)")
    p.add_argument("--versions", default=",".join(map(str, VERSIONS)), help="llc versions")
    p.add_argument("--method", default="auto", help="mir schedule --method (default: auto)")
    p.add_argument(
        "--guard",
        choices=("default", "off"),
        default="default",
        help="off: mir schedule --no-guard (no llc after register allocation)",
    )
    p.add_argument("--batch", type=int, default=8, help="files a mir schedule call")
    p.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one)")
    p.add_argument("--out", type=Path, help="report prefix (default benchmarks/reports/mir_corpus)")
    p.add_argument(
        "--rerender",
        type=Path,
        metavar="RAW_JSON",
        help="only write the report again from an earlier run's WORK/raw.json",
    )
    return p.parse_args(argv)


def schedule_flags(args: argparse.Namespace) -> list[str]:
    """The ``mir schedule`` options after ``--mcpu`` (none with the defaults)."""
    flags = [] if args.method == "auto" else ["--method", args.method]
    return flags + (["--no-guard"] if args.guard == "off" else [])


def collect(args: argparse.Namespace, work: Path) -> tuple[list[Entry], list[dict], str, float]:
    """The corpus entries, what was not generated, the kernels' origin, generation seconds."""
    targets = args.targets.split(",") if args.targets else list(modelled_targets())
    versions = [int(v) for v in args.versions.split(",")]
    t0 = time.perf_counter()
    entries, skipped, origin = [], [], "(none)"
    if not args.no_generated:
        kernels, origin = kernel_files(args.kernels, work)
        entries, skipped = generate(pick(kernels, args.subset), targets, versions, work)
    entries += llvm_tests(args.llvm_tests)
    return entries, skipped, origin, time.perf_counter() - t0


def run(args: argparse.Namespace) -> tuple[list[Entry], dict]:
    """Collect and run the corpus; the entries and the run's settings and seconds (also
    written, every field of every entry, to ``WORK/raw.json``)."""
    work = args.work or Path(tempfile.mkdtemp(prefix="jaxsched-mir-corpus-"))
    t0, c0 = time.perf_counter(), time.process_time()
    entries, skipped, origin, gen_s = collect(args, work)
    print(f"{len(entries)} files ({len(skipped)} not generated); work in {work}", file=sys.stderr)
    flags = schedule_flags(args)
    seconds = {"generate_s": gen_s, **run_corpus(entries, work, flags, args.batch)}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds |= {
        "total_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
        "cpu_children_s": children.ru_utime + children.ru_stime,
    }
    meta = {
        "environment": harness.environment(),
        "settings": {
            "kernels": origin,
            "subset": args.subset,
            "llvm_tests": str(args.llvm_tests or ""),
            "schedule_flags": flags,
            "batch": args.batch,
            "work": str(work),
            "reference_llc": REFERENCE,
        },
        "seconds": seconds,
        "skipped": skipped,
    }
    raw = meta | {"files": [asdict(e) | {"class": e.cls} for e in entries]}
    (work / "raw.json").write_text(json.dumps(raw, indent=1, default=str) + "\n")
    return entries, meta


def load_raw(path: Path) -> tuple[list[Entry], dict]:
    """The entries and settings of an earlier run (its ``WORK/raw.json``)."""
    raw = json.loads(path.read_text())
    names = {f.name for f in fields(Entry)}
    entries = []
    for r in raw["files"]:
        e = Entry(**{k: v for k, v in r.items() if k in names})
        e.cls = r.get("class") or e.cls
        entries.append(e)
    return entries, {k: raw[k] for k in ("environment", "settings", "seconds", "skipped")}


def short_name(e: Entry) -> str:
    """A file's name in the report: ``llcV/TARGET/NAME`` (generated) or ``NAME``."""
    return f"llc{e.llvm}/{e.target}/{e.name}" if e.corpus == "generated" else e.name


def file_record(e: Entry) -> dict:
    """A file's line of the JSON report (paths as `short_name`; messages only where any)."""
    rec = {
        "corpus": e.corpus,
        "file": short_name(e),
        "target": e.target,
        "llvm": e.llvm,
        "class": e.cls,
        "llc19_reads": e.llc19_reads,
        "reordered": e.reordered,
        "verify": e.verify_level,
        "schedule_s": round(e.seconds.get("schedule", 0.0), 3),
    }
    for key, text in (("llc19_error", e.llc19_error), ("message", _message(e))):
        if text and (key != "llc19_error" or not e.llc19_reads):
            rec[key] = text.replace(e.path, rec["file"])[:300]
    return rec


def build_data(entries: list[Entry], meta: dict) -> dict:
    """The report's data: the run's settings, the summary, the failures, one line a file."""
    meta["settings"]["targets"] = sorted({e.target for e in entries})
    return meta | {
        "totals": summarize(entries, modelled_targets()),
        "failure_rows": failure_rows(entries),
        "unread_rows": unread_rows(entries),
        "files": [file_record(e) for e in entries],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the corpus (or read an earlier run's ``raw.json``) and write the report."""
    args = parse_args(argv)
    entries, meta = load_raw(args.rerender) if args.rerender else run(args)
    data = build_data(entries, meta)
    out = args.out or harness.REPORTS / "mir_corpus"
    md, js = harness.write_report_at(out, data, markdown(data))
    print(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
