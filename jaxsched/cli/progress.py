"""A minimal progress bar on stderr (no dependency): done/total, rate and time left."""

from __future__ import annotations

import sys
import time


class Progress:
    """``Progress(total, unit)``; call `advance(k)` as work finishes and `close()` at the end.

    Draws in place on a terminal, and a line at most every 5 seconds otherwise (logs stay short).
    """

    def __init__(self, total: int, unit: str, *, enabled: bool = True, stream=None) -> None:
        self.total = total
        self.unit = unit
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.start = time.perf_counter()
        self._last = 0.0
        self._note = ""

    def advance(self, k: int = 1) -> None:
        self.done += k
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty or now - self._last >= 5.0 or self.done >= self.total:
            self._last = now
            self._draw(now)

    def note(self, text: str) -> None:
        """Show ``text`` after the bar (work inside a long unit, e.g. iterations)."""
        self._note = text
        self.advance(0)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        width = 30
        fill = int(width * self.done / max(self.total, 1))
        bar = "#" * fill + "-" * (width - fill)
        text = (
            f"[{bar}] {self.done}/{self.total} {self.unit}  {rate:.1f} {self.unit}/s  "
            f"{elapsed:.0f}s elapsed" + (f", ~{left:.0f}s left" if self.done < self.total else "")
        )
        if self._note and self.done < self.total:
            text += f"  [{self._note}]"
        end = "\r" if self.tty and self.done < self.total else "\n"
        self.stream.write(text + end)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()
