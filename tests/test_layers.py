"""Import layers (static): no import cycles and no upward imports among the input layers.

Lazy imports inside functions count too: a cycle through them is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "jaxsched"

#: Every module of the package (packages' __init__ re-export their modules and are left out:
#: importing a submodule runs its package's __init__, which is not a dependency of the module).
CHECKED = tuple(
    sorted(
        ".".join(p.relative_to(ROOT.parent).with_suffix("").parts)
        for p in ROOT.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    )
)
#: Lower layers: they never import the package root (the curated public API).
LOWER = (
    "jaxsched.problem",
    "jaxsched.machines",
    "jaxsched.heuristics",
    "jaxsched.colony",
    "jaxsched.makespan",
    "jaxsched.exact",
    "jaxsched.io",
    "jaxsched.files",
    "jaxsched.errors",
    "jaxsched.compilation",
    "jaxsched.store",
    "jaxsched.distributed",
    "jaxsched.verify",
    "jaxsched.tune",
)
#: Packages a front end must not import: the package root, solvers and the CLI wire them.
NOT_FROM_IO = ("jaxsched.colony", "jaxsched.heuristics", "jaxsched.makespan", "jaxsched.exact")


def _module_file(name: str) -> Path | None:
    rel = Path(*name.split("."))
    for p in (ROOT.parent / rel.with_suffix(".py"), ROOT.parent / rel / "__init__.py"):
        if p.exists():
            return p
    return None


def imports_of(name: str) -> set[str]:
    """The jaxsched modules ``name`` imports anywhere in its source (modules, not packages,
    where ``from package import module`` names one)."""
    path = _module_file(name)
    assert path is not None, name
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "jaxsched"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxsched"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if _module_file(sub) else node.module)
    return out


@pytest.mark.parametrize("name", CHECKED)
def test_no_import_cycle_through(name):
    """No chain of imports leads from ``name`` back to itself."""
    seen: set[str] = set()
    stack = [(m, (name, m)) for m in imports_of(name)]
    while stack:
        mod, path = stack.pop()
        assert mod != name, "import cycle: " + " -> ".join(path)
        if mod in seen or _module_file(mod) is None:
            continue
        seen.add(mod)
        stack += [(m, (*path, m)) for m in imports_of(mod)]


@pytest.mark.parametrize("name", [m for m in CHECKED if m.startswith("jaxsched.io.")])
def test_front_ends_import_no_solver_and_not_the_package_root(name):
    bad = sorted(m for m in imports_of(name) if m == "jaxsched" or m.startswith(NOT_FROM_IO))
    assert not bad, f"{name} imports {bad}"


@pytest.mark.parametrize("name", [m for m in CHECKED if m.startswith(LOWER)])
def test_lower_layers_do_not_import_the_package_root(name):
    assert "jaxsched" not in imports_of(name), f"{name} imports the package root"


@pytest.mark.parametrize("name", [m for m in CHECKED if m.startswith("jaxsched.colony.")])
def test_the_colony_does_not_import_tuning(name):
    bad = sorted(m for m in imports_of(name) if m.startswith("jaxsched.tune"))
    assert not bad, f"{name} imports {bad}"
