"""The MIR scanner's bracket- and quote-aware helpers agree with a character-by-character
reference on random operand text."""

from __future__ import annotations

import random

from jaxsched.io.mir_parse import find_top_level, split_top, top_level_indices, top_level_spans


def reference_indices(s: str) -> list[int]:
    """Characters outside (), [], {}, <> and double quotes, one at a time (the definition)."""
    out, depth, quote, i = [], 0, False, 0
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(i)
        i += 1
    return out


def reference_split(s: str, sep: str) -> list[str]:
    out, start = [], 0
    for i in reference_indices(s):
        if s[i] == sep:
            out.append(s[start:i].strip())
            start = i + 1
    tail = s[start:].strip()
    return [*out, tail] if tail or out else out


def reference_find(s: str, token: str) -> int:
    return next((i for i in reference_indices(s) if s.startswith(token, i)), -1)


def test_scanner_matches_the_reference_on_random_text():
    rng = random.Random(7)
    alphabet = 'ab %$,:=;()[]{}<>"\\ '
    for _ in range(4000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        assert list(top_level_indices(s)) == reference_indices(s), s
        assert all(lo < hi for lo, hi in top_level_spans(s)), s
        for sep in ",;":
            assert split_top(s, sep) == reference_split(s, sep), s
        for token in (" :: ", "::", "=", " = ", ";", ":"):
            assert find_top_level(s, token) == reference_find(s, token), (s, token)


def test_scanner_on_real_operands():
    text = (
        "%1:vreg_64 = FLAT_LOAD_DWORDX2 %0, 0, 0, implicit $exec"
        " :: (load (s64) from %ir.p, addrspace 1)"
    )
    assert find_top_level(text, "::") == text.index("::")
    assert split_top('a, (b, c), "d, \\" e", <f, g>') == ["a", "(b, c)", '"d, \\" e"', "<f, g>"]
