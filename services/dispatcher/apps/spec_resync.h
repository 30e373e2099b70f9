// Answers agents' spec resync requests from PostgreSQL (maestro-protocol.md §6.5). On the
// broker transports (MQTT, Kafka) we are the source the agents talk to: whenever an agent
// (re)subscribes it sends `spec.resync_request` with the versions of every work it holds, and
// we answer, per resource of its cluster:
//  * being deleted (or deletion confirmed): `spec.resync_response` with `deletiontimestamp`;
//  * otherwise: the full spec when our version is 0 or greater than the agent's (0 = unknown);
//  * IDs the agent holds that we do not know: a data-less delete response with the agent's own
//    version, so the agent removes the orphan.
// Requests addressed to another source (`originalsource` neither "" nor our source id) are
// ignored. The stored payload and `metadata` are sent verbatim, so answers match what was
// published.
//
// Threads: Handle() runs the store read on the worker pool and queues the answers; at most
// `kMaxInFlight` answers are with the broker at once (a reconnect of thousands of agents would
// otherwise outrun the publish timeout), and one the broker did not accept is sent again after a
// growing delay (0.2 s doubling up to 10 s, ~23 s in all), up to `kMaxAttempts` times: an agent
// that stays connected never asks twice. Publisher callbacks only post to the worker pool.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/event.h"
#include "libs/common/clock.h"
#include "libs/common/log_summary.h"
#include "libs/common/loop.h"
#include "libs/store/dispatch_store.h"
#include "libs/transport/publisher.h"
#include "services/dispatcher/apps/metrics.h"

namespace mmi::dispatcher {

// The responses to `request` (a spec resync_request) given the store rows of its cluster.
// `new_id` makes event ids; `now` is the event time and the deletion time of orphans.
// kInvalidArgument when the request is malformed (no clustername, bad payload).
absl::StatusOr<std::vector<cloudevents::Event>> BuildSpecResyncResponses(
    const std::string& source_id, const cloudevents::Event& request,
    const std::vector<store::DispatchedResource>& rows, cloudevents::Timestamp now,
    const std::function<std::string()>& new_id);

// True when `event` is a spec resync request addressed to `source_id` (or to every source).
bool IsSpecResyncRequestFor(const cloudevents::Event& event, const std::string& source_id);

// The current spec (a delete answer while deleting) of each row whose resource is in `ids`.
std::vector<cloudevents::Event> BuildSpecReplays(const std::string& source_id,
                                                 const std::vector<store::DispatchedResource>& rows,
                                                 const absl::flat_hash_set<std::string>& ids,
                                                 cloudevents::Timestamp now,
                                                 const std::function<std::string()>& new_id);

class SpecResyncResponder {
 public:
  // True while a deletion of the resource is decided but not finished (Reconciler::IsDeleting).
  using DeletingCheck = std::function<bool(const std::string& resource_id)>;

  // Everything borrowed; must outlive the responder. `is_deleting` (optional) is asked right
  // before each answer carrying a spec is handed to the publisher: a resource whose deletion was
  // decided meanwhile (even not yet recorded) gets a delete answer instead. The delete request
  // itself leaves later on the same publisher, so an agent never gets the spec after the delete.
  SpecResyncResponder(std::string source_id, WorkerPool& workers, store::DispatchStore& store,
                      transport::Publisher& publisher, const Clock& clock,
                      DispatcherMetrics& metrics, DeletingCheck is_deleting = {});

  // Any thread: sends the current spec (or a delete answer) of each listed resource of each
  // cluster again, as spec resync responses, on the worker pool: after a resubscription, for
  // what the broker accepted just before the connection was lost (recent_acceptances.h).
  // Resources the store no longer holds are skipped.
  void Replay(std::map<std::string, std::vector<std::string>> resources_by_cluster);

  // Any thread (a Subscriber handler): answers `request` on the worker pool, then calls `done`
  // (the transport ack) once every response was handed to the publisher. Events that are not
  // spec resync requests for us are acknowledged at once.
  void Handle(cloudevents::Event request, std::function<void()> done);

  static constexpr int kMaxInFlight = 256;
  static constexpr int kMaxAttempts = 8;
  static constexpr std::chrono::milliseconds kFirstRetryDelay{200};
  static constexpr std::chrono::milliseconds kMaxRetryDelay{10'000};
  // The wait before attempt `attempts + 1` (attempts >= 1).
  static std::chrono::milliseconds RetryDelay(int attempts);

 private:
  struct PendingAnswer {
    cloudevents::Event event;
    std::string cluster;
    int attempts = 0;
  };
  // Sends queued answers while fewer than kMaxInFlight are with the broker.
  void Pump();
  void Completed(PendingAnswer answer, const absl::Status& status);
  void Enqueue(const std::string& cluster, std::vector<cloudevents::Event> answers);

  const std::string source_id_;
  const DeletingCheck is_deleting_;
  WorkerPool& workers_;
  store::DispatchStore& store_;
  transport::Publisher& publisher_;
  const Clock& clock_;
  DispatcherMetrics& metrics_;
  // Requests that cannot be answered (bad input from an agent): summed up, never one line each.
  log::WarnSummary unanswerable_;

  absl::Mutex mu_;
  std::deque<PendingAnswer> queue_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mmi::dispatcher
