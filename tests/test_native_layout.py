"""The native kernel's packed scalar operands (``ints``, ``floats``) have one layout, the tables
`native.INTS` and `native.FLOATS`: the Python side packs by name (`native.pack`), construct.cc
reads by name through the header generated from the tables (`native.layout_header`), and a
library built from another layout is refused when it loads (`native.check_layout`)."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from jaxsched.colony.construction import native

LAYOUTS = (native.INTS, native.FLOATS)
#: construct.cc's aliases of the header's namespaces.
ALIASES = {"ints": "li", "floats": "lf"}


def _names(layout: native.Layout) -> set[str]:
    return {*layout.scalars, *layout.per_file}


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: x.name)
def test_construct_cc_reads_each_packed_value_by_its_name(layout):
    """Every name of the table is read in construct.cc, nothing else is, and no value is read
    at a literal offset."""
    source = native.SOURCE.read_text()
    alias = ALIASES[layout.name]
    assert f"namespace {alias} = layout::{layout.name};" in source
    read = set(re.findall(rf"\b{alias}::(\w+)", source)) - {"size", "block"}
    assert read == _names(layout)
    assert not re.search(r"\b[if]v\[\d", source)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: x.name)
def test_the_header_gives_each_name_its_offset(layout):
    header = native.layout_header()
    body = header.split(f"namespace {layout.name} {{")[1].split(f"}}  // namespace {layout.name}")[
        0
    ]
    offsets = dict(re.findall(r"constexpr int32_t (\w+) = (\d+);", body))
    want = {n: k for k, n in enumerate(layout.scalars)} | dict(
        (n, k) for k, n in enumerate(layout.per_file)
    )
    assert {n: int(k) for n, k in offsets.items()} == want
    files = 3
    assert f"return {len(layout.scalars)} + {len(layout.per_file)} * " in body
    assert layout.size(files) == len(layout.scalars) + len(layout.per_file) * files
    assert f"kMaxRegs = {native.MAX_REGS_PER_INSTRUCTION};" in header
    assert f'kText = "{native.layout_text()}";' in header


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: x.name)
def test_pack_puts_each_value_at_its_offset(layout):
    files = 3
    values = {n: 100 + k for k, n in enumerate(layout.scalars)}
    values |= {n: np.arange(files) + 10 * (k + 1) for k, n in enumerate(layout.per_file)}
    packed = np.asarray(native.pack(layout, values, np.int32))
    assert packed.shape == (layout.size(files),)
    for k, name in enumerate(layout.scalars):
        assert packed[k] == values[name], name
    for k, name in enumerate(layout.per_file):
        start = len(layout.scalars) + k * files
        np.testing.assert_array_equal(packed[start : start + files], values[name])
    with pytest.raises(ValueError, match="do not match the layout"):
        native.pack(layout, {**values, "extra": 1}, np.int32)
    with pytest.raises(ValueError, match="do not match the layout"):
        native.pack(layout, {n: v for n, v in values.items() if n != layout.scalars[0]}, np.int32)


def test_the_library_reports_its_layout_and_another_is_refused(monkeypatch):
    """The built library reports the tables' layout; were the tables changed without a
    rebuild (a reordered field), loading it fails."""
    reason = native.unavailable()
    if reason:
        pytest.skip(reason)
    path = native.library_path(native.find_compiler())
    lib = ctypes.CDLL(str(path))
    native.check_layout(lib, path)  # the library in use was built from these tables
    scalars = native.INTS.scalars
    swapped = native.INTS._replace(scalars=(scalars[1], scalars[0], *scalars[2:]))
    monkeypatch.setattr(native, "INTS", swapped)
    with pytest.raises(RuntimeError, match="was built with layout"):
        native.check_layout(lib, path)
