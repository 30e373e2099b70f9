// DecisionApplier: carries out what Decide() (decision.h) said for one Application key. A
// create, update or delete request becomes a PendingChange in the loop's batch (the row and its
// CloudEvent, recorded by ChangeRecorder) and is marked on the dispatch state; a finished
// deletion or a finalizer to release goes to the DeletionFinisher, a propagated request still on
// the hub to the RequestStripper, an unknown cluster to UnknownClusters. It counts every
// decision (mmi_dispatcher_decisions_total) and logs the refused ones.
//
// Thread safety: loop thread only. All collaborators are borrowed and outlive it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libs/cloudevents/event.h"
#include "libs/common/clock.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/decision.h"
#include "services/dispatcher/apps/deletion_finisher.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/pending_change.h"
#include "services/dispatcher/apps/reconciler_settings.h"
#include "services/dispatcher/apps/request_stripper.h"
#include "services/dispatcher/apps/unknown_clusters.h"

namespace mmi::dispatcher {

class DecisionApplier {
 public:
  struct Deps {
    DispatchState& state;
    UnknownClusters& unknown;
    DeletionFinisher& finisher;
    RequestStripper& stripper;
    DispatcherMetrics& metrics;
    const Clock& clock;
    // True once the dispatch state is loaded: a deletion decided finished before that is left
    // to the sweep after the load (the load may still read the row and track it again).
    std::function<bool()> loaded;
  };
  DecisionApplier(Deps deps, const ReconcilerSettings& settings);

  // Applies `d`, decided for `key` from `app` (nullptr: not on the hub) and `t` (what is
  // tracked for it, nullptr: nothing). Changes for the store go to `batch`.
  void Apply(const std::string& key, const nlohmann::json* app, TrackedResource* t,
             const Decision& d, std::vector<PendingChange>& batch);

 private:
  // kNothing and kWaitWhileBusy: logs what was refused or skipped.
  static void LogNothing(const std::string& key, const Decision& d);
  void PublishSpec(const std::string& key, const nlohmann::json& app, const Decision& d,
                   std::vector<PendingChange>& batch);
  void RequestDelete(TrackedResource& t, const Decision& d, std::vector<PendingChange>& batch);
  cloudevents::Timestamp Now() const;

  Deps deps_;
  const ReconcilerSettings& settings_;
};

}  // namespace mmi::dispatcher
