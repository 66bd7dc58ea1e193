"""The docs name only what exists: every `jaxsched.x.y` reference and every `file.py` path in
the docs and the README resolves, and in the algorithm docs (colony, makespan) every code name
in backticks (`module.name`, `_private`, `snake_case`) is defined in the package."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import jaxsched

ROOT = Path(__file__).resolve().parent.parent
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
#: Docs whose backticked code names must all exist (the algorithm's descriptions).
ALGORITHM_DOCS = ("colony.md", "makespan.md")
SOURCE = "\n".join(p.read_text() for p in (ROOT / "jaxsched").rglob("*.py"))
#: Module short name -> full names (`host` -> jaxsched.colony.host, jaxsched.makespan.host).
MODULES: dict[str, list[str]] = {}
for _m in pkgutil.walk_packages(jaxsched.__path__, "jaxsched."):
    MODULES.setdefault(_m.name.rsplit(".", 1)[-1], []).append(_m.name)


def _spans(text: str) -> list[str]:
    """Backticked spans outside fenced code blocks, calls stripped (`f(x)` -> `f`)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return [re.sub(r"\(.*\)$", "", s.strip()) for s in re.findall(r"`([^`\n]+)`", text)]


def _attr_chain(obj, names: list[str]) -> bool:
    for name in names:
        if not hasattr(obj, name):
            return False
        obj = getattr(obj, name)
    return True


def _resolves(dotted: str) -> bool:
    """`jaxsched.a.b.C.d`, or `module.name` for a module of the package's (any of them)."""
    parts = dotted.split(".")
    if parts[0] == "jaxsched":
        for k in range(len(parts), 0, -1):
            try:
                module = importlib.import_module(".".join(parts[:k]))
            except ImportError:
                continue
            return _attr_chain(module, parts[k:])
        return False
    return any(_attr_chain(importlib.import_module(full), parts[1:]) for full in MODULES[parts[0]])


def _defined(name: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", SOURCE) is not None


def _file_exists(span: str) -> bool:
    roots = (ROOT, ROOT / "jaxsched")
    return any((r / span).exists() for r in roots) or any((ROOT / "jaxsched").rglob(span))


def _problem(span: str, strict: bool) -> str | None:
    """What is wrong with one span (None: nothing, or not a code name we check)."""
    if re.fullmatch(r"[\w/]+\.py", span):
        return None if _file_exists(span) else f"file {span}"
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", span):
        checked = span.startswith("jaxsched.") or (strict and span.split(".")[0] in MODULES)
        return f"name {span}" if checked and not _resolves(span) else None
    if strict and re.fullmatch(r"_?[a-z]\w*_\w*|_\w+", span) and not _defined(span):
        return f"name {span}"
    return None


def _problems(doc: Path) -> list[str]:
    strict = doc.name in ALGORITHM_DOCS
    found = (_problem(span, strict) for span in _spans(doc.read_text()))
    return [p for p in found if p]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_name_the_docs_mention_exists(doc):
    assert _problems(doc) == []


def test_the_check_finds_a_missing_name(tmp_path):
    doc = tmp_path / "colony.md"
    doc.write_text("`construct._no_such_name`, `_no_such_helper`, `jaxsched.colony.nope`, `x.py`")
    assert len(_problems(doc)) == 4


def test_the_readme_main_job_names_files_that_read():
    """The main job's command (the first code block of the README) schedules files that
    exist and parse (running it is the CLI tests' and the latency benchmark's job)."""
    from jaxsched.io.mir import read_input

    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert block is not None
    command = block.group(1).split("&&")[-1].split()
    assert command[:3] == [".venv/bin/jaxsched", "mir", "schedule"]
    inputs = command[3 : command.index("-o")]
    assert inputs
    for path in inputs:
        module = read_input(ROOT / path)
        assert module.regions and all(r.region is not None for r in module.regions)


def _jaxsched_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from jaxsched... import name`` in a script."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxsched"):
            found += [(node.module, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize(
    "script",
    sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_the_examples_and_benchmarks_import_names_that_exist(script):
    """The scripts no test runs whole still import only what the package has."""
    missing = []
    for module, name in _jaxsched_imports(script):
        mod = importlib.import_module(module)
        if not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert missing == []
