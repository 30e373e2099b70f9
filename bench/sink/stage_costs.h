// CPU per status event of each stage the sink runs on its loop thread, measured in process on
// pre-encoded events (thread CPU time, so other load on the machine does not count): the
// transport's decode of a binary-mode message into a CloudEvent, the status report decode (the
// full typed path and the one-pass path the sink uses), the feedback's JSON parse alone, the
// resource id lookup and the coalescer's Offer. Persist and hub writes run on other threads and
// are measured by the end-to-end run (sink_run.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/sink/status_events.h"

namespace mmi::bench {

struct StageCost {
  std::string stage;
  double us_per_event = 0;  // thread CPU microseconds per event
};

struct StageCosts {
  std::size_t payload_bytes = 0;  // `data` of one event
  std::size_t event_bytes = 0;    // MQTT size of one event (payload + properties)
  std::vector<StageCost> stages;
};

// Runs every stage over `events` events of `shape`, `rounds` times, keeping the fastest round.
StageCosts MeasureStages(const EventShape& shape, std::size_t events, int rounds);

}  // namespace mmi::bench
