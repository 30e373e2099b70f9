// CPU per Application of the stages the reconcile loop runs for a cold dispatch, measured in
// process on the generated Applications (thread CPU time, the fastest of a few rounds): Decide()
// with an empty dispatch state (it builds the payload: BuildDispatch), BuildDispatch() alone
// (selection, the spoke Application, the ManifestBundle, resource id, payload hash), the spec
// CloudEvent made and encoded for the outbox row (MakeSpecEvent + EncodeStructuredJson), and the
// outbox's decode of that row before it publishes (DecodeStructuredJson). The decision proper is
// Decide() less BuildDispatch(). Record, publish and mark published run behind interfaces and are
// measured in the end-to-end run (dispatch_run.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/dispatch/fleet_apps.h"

namespace mmi::bench {

struct StageCost {
  std::string stage;
  double us_per_app = 0;  // thread CPU microseconds per Application
};

struct StageCosts {
  std::size_t event_bytes = 0;  // one encoded spec event (structured JSON, as in the outbox)
  std::vector<StageCost> stages;
};

// Runs every stage over `apps` Applications of `shape`, `rounds` times.
StageCosts MeasureStages(const FleetShape& shape, std::size_t apps, int rounds);

}  // namespace mmi::bench
