"""Counting XLA compilations in a block (shared by the tests that check what compiles)."""

from __future__ import annotations

import jax


class Compiles:
    """Counts XLA compilations (`jax.monitoring` backend-compile events) within the block."""

    def __init__(self) -> None:
        self.count = 0

    def _event(self, event: str, duration: float, **kw) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            self.count += 1

    def __enter__(self) -> Compiles:
        jax.monitoring.register_event_duration_secs_listener(self._event)
        return self

    def __exit__(self, *exc) -> None:
        jax.monitoring.unregister_event_duration_listener(self._event)
