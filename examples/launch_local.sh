#!/bin/bash
# A multi-process run on this machine: P processes on localhost, each with 2 forced CPU devices
# and gloo collectives (the same code path as several hosts; docs/clusters.md).
#   examples/launch_local.sh P FILE... --out results.jsonl [other jaxsched schedule options]
# Process 0 prints the table and writes the results; PORT (default 12345) must be free.
set -u
P=${1:?usage: launch_local.sh PROCESSES FILE... [options]}
shift
PORT=${PORT:-12345}
# XLA:CPU stops a process whose device waits over 40 s for its other devices at a collective;
# a long iteration on shared cores can take that long, so the limit is raised to an hour.
export XLA_FLAGS="${XLA_FLAGS:---xla_force_host_platform_device_count=2 \
--xla_cpu_collective_call_terminate_timeout_seconds=3600}"
run() {
  jaxsched schedule "$@" --coordinator "127.0.0.1:$PORT" --num-processes "$P" --process-id "$i"
}
pids=()
for ((i = 1; i < P; i++)); do
  run "$@" --quiet &
  pids+=($!)
done
i=0
run "$@"
status=$?
for pid in "${pids[@]}"; do
  wait "$pid" || status=$?
done
exit "$status"
