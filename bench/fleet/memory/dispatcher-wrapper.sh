#!/bin/bash
# Stands in for the dispatcher binary in a build dir given to fleet_bench.py or dispatcher_rss.py
# (copy it to <dir>/services/dispatcher/dispatcher, symlink status-sink and fleet-sim): runs the
# real dispatcher $MMI_DISPATCHER_REAL (same PID, via exec), optionally under heaptrack's preload
# library (MMI_HEAPTRACK=1; one file per process in $MMI_HEAP_DIR, default /tmp/mmi-heap) and/or
# with MALLOC_ARENA_MAX=$MMI_ARENA (glibc builds). heaptrack needs a dispatcher built with
# -DMMI_ALLOCATOR=system: jemalloc's own operator new never reaches heaptrack's malloc hook, so
# with it heaptrack sees only the C libraries' allocations.
: "${MMI_DISPATCHER_REAL:?set MMI_DISPATCHER_REAL to the real dispatcher binary}"
HEAP_DIR=${MMI_HEAP_DIR:-/tmp/mmi-heap}
mkdir -p "$HEAP_DIR"
[ -n "$MMI_ARENA" ] && export MALLOC_ARENA_MAX=$MMI_ARENA
echo "$(date -u +%FT%TZ) pid $$ MMI_HEAPTRACK=${MMI_HEAPTRACK:-} MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-}" >> "$HEAP_DIR/starts.log"
if [ -n "$MMI_HEAPTRACK" ]; then
  out=$HEAP_DIR/heaptrack.dispatcher.$(date -u +%H%M%S).$$.zst
  pipe=$HEAP_DIR/fifo.$$
  rm -f "$pipe"; mkfifo "$pipe"
  setsid bash -c '/usr/lib/heaptrack/libexec/heaptrack_interpret < "$1" | zstd -q -c > "$2"; rm -f "$1"' \
    _ "$pipe" "$out" </dev/null >>"$HEAP_DIR/interpret.log" 2>&1 &
  echo "  heaptrack -> $out" >> "$HEAP_DIR/starts.log"
  export LD_PRELOAD=/usr/lib/heaptrack/libheaptrack_preload.so DUMP_HEAPTRACK_OUTPUT=$pipe
fi
exec "$MMI_DISPATCHER_REAL" "$@"
