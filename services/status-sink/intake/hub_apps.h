// Resource id -> hub Application for the status sink's loop: the dispatcher's table
// (StatusStore::LookupHubApps), cached, and the reports waiting for a batched lookup of their
// resource id. A report whose resource the store does not know is counted, summed up in the log
// (log_summary.h) and acknowledged: dropped. For resources in manifest delivery the lookup also
// loads the rendered manifests of payload hashes not held yet (ManifestPayloads), on the store
// executor, so that turning a report into a status never waits for the store again.
//
// Not thread-safe: owned by the sink's loop thread. Store calls run on `store_executor` and their
// results are posted to `loop`. Collaborators are borrowed and must outlive this object.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/common/log_summary.h"
#include "libs/store/status_store.h"
#include "services/status-sink/coalescing/coalescer.h"
#include "services/status-sink/decoding/status_report.h"
#include "services/status-sink/intake/manifest_statuses.h"
#include "services/status-sink/metrics/metrics.h"

namespace mmi::status_sink {

// A decoded report and the ack of its event, waiting for its resource lookup or admitted.
struct AwaitingReport {
  StatusReport report;
  Ack ack;
  bool looked_up_again = false;  // manifest delivery: the record was read again for it
};

struct HubAppsSettings {
  std::size_t lookup_batch = 500;     // resource ids per store lookup
  std::size_t max_awaiting = 20'000;  // reports waiting for their lookup, at most
  BackoffSettings retry_backoff;      // delay before retrying a failed lookup
};

class HubApps {
 public:
  // Runs on the loop for each waiting report whose lookup found its hub Application.
  using Found = absl::AnyInvocable<void(const store::HubAppRef& ref, AwaitingReport item)>;
  // Runs on the loop for each Refresh()ed resource the lookup found.
  using Refreshed = absl::AnyInvocable<void(const store::HubAppRef& ref)>;

  // `manifests` (nullable, borrowed): where the manifests of resources in manifest delivery are
  // loaded (its ManifestPayloads), and what forgets a forgotten resource's kept status times;
  // without it no manifests are loaded.
  HubApps(HubAppsSettings settings, store::StatusStore& store, Executor& store_executor,
          Executor& loop, const Clock& clock, SinkMetrics& metrics, Found found,
          ManifestStatuses* manifests = nullptr, Refreshed refreshed = nullptr);

  // The cached hub Application of `resource_id`; nullptr when not looked up (yet).
  const store::HubAppRef* Find(const std::string& resource_id) const;
  // Drops `resource_id` from the cache (its deletion was handed to the dispatcher).
  void Forget(const std::string& resource_id);
  // Reads `resource_id` again with the next lookup (its manifest render changed), replaces the
  // cached record and calls `refreshed` with it; an unknown resource is ignored.
  void Refresh(const std::string& resource_id);

  // Whether `max_awaiting` reports wait already (the caller drops the next one as lost).
  bool Full() const { return awaiting_count_ >= settings_.max_awaiting; }
  // Queues `item` for the lookup of its resource id and starts one if none is in flight.
  void Await(AwaitingReport item);
  // Starts a lookup of up to `lookup_batch` waiting ids, unless one is in flight, none waits or
  // the retry delay of a failed one has not passed.
  void StartLookup();
  // Reports waiting for their lookup.
  std::size_t awaiting() const { return awaiting_count_; }

  // Logs the summed-up warnings that are due.
  void FlushWarnings() { unknown_resource_.Flush(); }

 private:
  void OnLookupDone(std::vector<std::string> ids,
                    absl::StatusOr<std::vector<store::HubAppRef>> refs);

  const HubAppsSettings settings_;
  store::StatusStore& store_;
  Executor& store_executor_;
  Executor& loop_;
  const Clock& clock_;
  SinkMetrics& metrics_;
  Found found_;
  ManifestStatuses* manifests_;
  Refreshed refreshed_;
  log::WarnSummary unknown_resource_;

  std::unordered_map<std::string, store::HubAppRef> refs_;
  std::map<std::string, std::vector<AwaitingReport>> awaiting_;
  std::set<std::string> refresh_;  // ids in awaiting_ whose lookup calls refreshed_
  std::size_t awaiting_count_ = 0;
  bool in_flight_ = false;
  int failures_ = 0;
  std::chrono::steady_clock::time_point retry_at_{};
};

}  // namespace mmi::status_sink
