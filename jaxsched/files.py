"""Reading input files with clear errors (lowest layer: imports only `jaxsched.errors`).

Every failure (missing file, a directory, no permission, a file too large, bytes that are not
UTF-8, a damaged ``.gz``) raises the caller's `InputError` subclass with a message naming the
file (and, for bad bytes, the line and column), never `OSError` or `UnicodeDecodeError`.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from jaxsched.errors import InputError

#: Errors a damaged or truncated gzip stream raises while reading.
_GZIP_ERRORS = (OSError, EOFError, zlib.error)


def open_binary(path: str | os.PathLike, error: type[InputError]) -> BinaryIO:
    """``path`` opened for reading bytes; a ``.gz`` file is decompressed transparently."""
    p = Path(path)
    if p.is_dir():
        raise error(f"{p}: is a directory, not a file")
    try:
        return gzip.open(p, "rb") if p.suffix == ".gz" else p.open("rb")  # type: ignore[return-value]
    except FileNotFoundError:
        raise error(f"{p}: no such file") from None
    except OSError as e:
        raise error(f"{p}: cannot read ({e.strerror or e})") from None


def read_bytes(f: BinaryIO, where: str, error: type[InputError], limit: int) -> bytes:
    """At most ``limit`` bytes of ``f`` (all of it); more is an error naming ``where``."""
    try:
        data = f.read(limit + 1)
    except _GZIP_ERRORS as e:
        raise error(f"{where}: cannot read ({_reason(e)})") from None
    if len(data) > limit:
        raise error(f"{where}: larger than the limit of {limit:,} bytes")
    return data


def read_lines(
    f: BinaryIO, where: str, error: type[InputError], limit: int
) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes without the line end) per line of ``f``; lines end with
    ``\\n`` only (a ``\\r`` before it is dropped). A line longer than ``limit`` is an error."""
    lineno = 0
    while True:
        try:
            raw = f.readline(limit + 2)
        except _GZIP_ERRORS as e:
            raise error(f"{where}:{lineno + 1}: cannot read ({_reason(e)})") from None
        if not raw:
            return
        lineno += 1
        line = raw[:-1] if raw.endswith(b"\n") else raw
        line = line[:-1] if line.endswith(b"\r") else line
        if len(line) > limit:
            raise error(f"{where}:{lineno}: line longer than the limit of {limit:,} bytes")
        yield lineno, line


def decode(data: bytes, where: str, error: type[InputError], *, one_line: bool = False) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark is dropped).

    Bad bytes raise ``error`` naming ``where``, the line and the column (1-based); with
    ``one_line``, ``where`` already names the line and only the column is added.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start)
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        place = f"{where}:{col}" if one_line else f"{where}:{line + 1}:{col}"
        bad = data[e.start : e.start + 1].hex()
        raise error(f"{place}: not UTF-8 text (byte 0x{bad})") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | os.PathLike, error: type[InputError], limit: int) -> str:
    """The whole file as UTF-8 text (see `open_binary`, `read_bytes`, `decode`)."""
    with open_binary(path, error) as f:
        return decode(read_bytes(f, str(path), error, limit), str(path), error)


def _reason(e: BaseException) -> str:
    if isinstance(e, EOFError):
        return "compressed data ends early: truncated .gz file"
    return str(e) or type(e).__name__
