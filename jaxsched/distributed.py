"""Processes of a multi-host run (lowest layer: imports nothing from jaxsched).

* `initialize`: `jax.distributed.initialize` (arguments detected on Slurm, Open MPI and TPU
  pods, or given), with the runtime's own heartbeat timeout above this module's `PeerWatch`;
* `owner`: the deterministic split of a region file: region ``k`` (its position among all
  regions of all input files) belongs to process ``k % P``. Results are keyed by region name
  and content, so a resumed run may use any number of processes;
* `allgather_json` / `barrier`: host data (plans, records) from every process, in process
  order, through the runtime's key-value store (no device collective, no time limit);
* `PeerWatch`: a heartbeat thread through the distributed runtime's key-value store, so a lost
  process stops the others with a clear message instead of a hang in a collective;
* `device_slice`: inside `jax.shard_map`, this device's part of an array every device computed
  whole (random draws made as on one device, so results do not depend on the device count).

The functions on processes are collective when the run has several: every process calls them,
in the same order.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable

import jax
from jax import lax

#: Default seconds without a heartbeat after which a peer process counts as lost.
DEFAULT_PEER_TIMEOUT = 60.0


def initialize(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    peer_timeout: float = DEFAULT_PEER_TIMEOUT,
) -> None:
    """Join the run's processes (call before any other JAX call).

    With no arguments the cluster is detected (Slurm, Open MPI, TPU pods); otherwise give all
    three. On CPUs the collectives go through gloo. The
    runtime's heartbeat timeout is set to twice ``peer_timeout`` so that `PeerWatch` reports a
    lost process first.
    """
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator,
        num_processes=num_processes,
        process_id=process_id,
        heartbeat_timeout_seconds=max(10, int(2 * peer_timeout)),
    )


def owner(index: int, processes: int) -> int:
    """The process that schedules region ``index`` (0-based over all input regions)."""
    return index % processes


def device_slice(x: jax.Array, axis: str, dim: int = 0) -> jax.Array:
    """Inside `jax.shard_map`: device ``i``'s part ``i`` of ``x`` split into equal contiguous
    parts along ``dim`` over mesh ``axis`` (``x.shape[dim]`` a multiple of the axis size)."""
    size = x.shape[dim] // lax.axis_size(axis)
    return lax.dynamic_slice_in_dim(x, lax.axis_index(axis) * size, size, axis=dim)


def allgather_json(value: object) -> list:
    """``value`` (JSON-serialisable) of every process, in process order (collective).

    The values go through the distributed runtime's key-value store, not a device collective:
    a process may reach the call any time after the others (a slow start, a long compile, an
    exact search) without a collective's first-use timeout (gloo gives up on a peer after
    30 s). A lost process stops the wait through `PeerWatch` or the runtime's heartbeat."""
    if jax.process_count() == 1:
        return [json.loads(json.dumps(value))]
    client = _client()
    me, count, n = jax.process_index(), jax.process_count(), next(_ROUNDS)
    client.key_value_set_bytes(f"jaxsched/gather/{n}/{me}", json.dumps(value).encode())
    values = [json.loads(_wait_get(client, f"jaxsched/gather/{n}/{p}")) for p in range(count)]
    # Every process has now written round n, so every process has read round n - 1.
    if n > 0:
        client.key_value_delete(f"jaxsched/gather/{n - 1}/{me}")
    return values


def barrier() -> None:
    """Wait until every process reaches its matching call (collective; no time limit).

    Call it before the first run of a sharded executable: the collectives' transport (gloo
    on CPUs) connects the processes on first use and gives up after 30 s, so processes must
    arrive together, not one compile apart."""
    if jax.process_count() > 1:
        allgather_json(None)


def leave(timeout: float = 10.0) -> None:
    """Before leaving without the runtime's shutdown (``os._exit`` after an error): mark this
    process as leaving; process 0, which hosts the key-value store, first waits up to
    ``timeout`` seconds for every other process's mark (an error every process saw, such as a
    bad input file, reaches them all at once), so it does not take the store away from a
    process still reading its last gathering."""
    if jax.process_count() == 1:
        return
    client, me = _client(), jax.process_index()
    try:
        client.key_value_set("jaxsched/leaving/" + str(me), "1", allow_overwrite=True)
        if me != 0:
            return
        end = time.monotonic() + timeout
        for p in range(1, jax.process_count()):
            left_ms = int(max(0.0, end - time.monotonic()) * 1000)
            client.blocking_key_value_get(f"jaxsched/leaving/{p}", max(1, left_ms))
        time.sleep(0.5)  # their exits, after their marks
    except Exception:  # a peer or the store is gone, or the wait ran out: leave anyway
        pass


#: Rounds of `allgather_json` in this process (the same sequence on every process).
_ROUNDS = itertools.count()
#: Milliseconds of one blocking read of the store (a wait is a loop of them).
_READ_MS = 10_000


def _client():
    from jax._src import distributed  # the runtime client (no public accessor)

    return distributed.global_state.client


def _wait_get(client, key: str) -> bytes:
    """The store's value of ``key`` once some process sets it (releases the GIL meanwhile,
    so `PeerWatch` keeps beating)."""
    while True:
        try:
            return client.blocking_key_value_get_bytes(key, _READ_MS)
        except Exception as e:
            if "DEADLINE_EXCEEDED" not in str(e):
                raise


class PeerWatch:
    """Heartbeats of every process through the distributed runtime's key-value store.

    A thread writes this process's counter every ``timeout / 10`` seconds and reads the
    others'; when a peer's counter has not moved for ``timeout`` seconds, or the store cannot be
    reached (the coordinator, process 0, is gone), it calls ``on_lost(message)`` once. Use as a
    context manager around the collective part of a run; single-process runs do nothing.
    """

    def __init__(self, timeout: float, on_lost: Callable[[str], None]) -> None:
        self.timeout = float(timeout)
        self.on_lost = on_lost
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeerWatch:
        if jax.process_count() > 1:
            self._thread = threading.Thread(target=self._beat, name="jaxsched-peers", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        client = _client()
        me, count = jax.process_index(), jax.process_count()
        heard = {p: (None, time.monotonic()) for p in range(count) if p != me}
        beat = 0
        while not self._stop.wait(max(0.05, self.timeout / 10)):
            beat += 1
            try:
                client.key_value_set(f"jaxsched/beat/{me}", str(beat), allow_overwrite=True)
                for p, (last, since) in heard.items():
                    value = _try_get(client, f"jaxsched/beat/{p}")
                    if value != last:
                        heard[p] = (value, time.monotonic())
                    elif time.monotonic() - since > self.timeout:
                        return self.on_lost(
                            f"process {p} of {count} sent no heartbeat for {self.timeout:g} s "
                            "(it stopped or its host is unreachable)"
                        )
            except Exception as e:  # the coordinator (process 0) is gone
                if not self._stop.is_set():
                    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    self.on_lost(f"lost the coordinator, process 0 of {count} ({first[:200]})")
                return


def _try_get(client, key: str) -> str | None:
    """The store's value of ``key``, None while it is not set."""
    try:
        return client.key_value_try_get(key)
    except Exception as e:
        if "NOT_FOUND" in str(e) or "not found" in str(e).lower():
            return None
        raise
