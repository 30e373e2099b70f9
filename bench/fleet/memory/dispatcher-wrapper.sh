#!/bin/bash
# h7 wrapper: runs the real dispatcher (same PID, via exec), optionally under heaptrack's
# preload library (H7_HEAPTRACK=1) and/or with MALLOC_ARENA_MAX=$H7_ARENA, for this process only.
REAL=/tmp/h7/build/release/services/dispatcher/dispatcher
[ -n "$H7_ARENA" ] && export MALLOC_ARENA_MAX=$H7_ARENA
echo "$(date -u +%FT%TZ) pid $$ H7_HEAPTRACK=${H7_HEAPTRACK:-} MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-}" >> /tmp/h7-heap/starts.log
if [ -n "$H7_HEAPTRACK" ]; then
  out=/tmp/h7-heap/heaptrack.dispatcher.$(date -u +%H%M%S).$$.zst
  pipe=/tmp/h7-heap/fifo.$$
  rm -f "$pipe"; mkfifo "$pipe"
  setsid bash -c "/usr/lib/heaptrack/libexec/heaptrack_interpret < '$pipe' | zstd -q -c > '$out'; rm -f '$pipe'" \
    </dev/null >>/tmp/h7-heap/interpret.log 2>&1 &
  echo "  heaptrack -> $out" >> /tmp/h7-heap/starts.log
  export LD_PRELOAD=/usr/lib/heaptrack/libheaptrack_preload.so DUMP_HEAPTRACK_OUTPUT=$pipe
fi
exec "$REAL" "$@"
