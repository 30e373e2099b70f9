#include "services/dispatcher/apps/spec_resync.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/common/backoff.h"
#include "libs/common/log.h"

namespace mmi::dispatcher {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.spec_resync");
  return logger;
}

cloudevents::ResourceEventHeader Header(const std::string& source_id, const std::string& cluster,
                                        const std::string& resource_id, int32_t version,
                                        std::string id, cloudevents::Timestamp now) {
  return {.id = std::move(id),
          .source = source_id,
          .time = now,
          .cluster = cluster,
          .resource_id = resource_id,
          .version = version};
}

// The answer that brings an agent to `row`: a delete answer (§6.5: `deletiontimestamp`, no
// spec) while the resource is being deleted, its stored spec otherwise.
cloudevents::Event AnswerFor(const std::string& source_id, const store::DispatchedResource& row,
                             cloudevents::Timestamp now,
                             const std::function<std::string()>& new_id) {
  const auto header = Header(source_id, row.cluster, row.resource_id, row.version, new_id(), now);
  if (row.deletion_state != store::DeletionState::kLive) {
    return cloudevents::MakeSpecResyncDeleteResponse(header, now);
  }
  return cloudevents::MakeSpecResyncResponse(header, row.metadata, row.payload);
}

}  // namespace

bool IsSpecResyncRequestFor(const cloudevents::Event& event, const std::string& source_id) {
  if (event.type != cloudevents::kSpecResyncRequestType) {
    return false;
  }
  auto original = event.OriginalSource();
  return !original.ok() || original->empty() || *original == source_id;
}

absl::StatusOr<std::vector<cloudevents::Event>> BuildSpecResyncResponses(
    const std::string& source_id, const cloudevents::Event& request,
    const std::vector<store::DispatchedResource>& rows, cloudevents::Timestamp now,
    const std::function<std::string()>& new_id) {
  auto cluster = request.ClusterName();
  if (!cluster.ok() || cluster->empty()) {
    return absl::InvalidArgumentError("spec resync request without a clustername");
  }
  if (!request.data) {
    return absl::InvalidArgumentError("spec resync request without data");
  }
  auto list = cloudevents::DecodeResourceVersionList(*request.data);
  if (!list.ok()) {
    return list.status();
  }
  absl::flat_hash_map<std::string, int64_t> agent;
  for (const auto& rv : list->resource_versions) {
    agent[rv.resource_id] = rv.resource_version;
  }
  std::vector<cloudevents::Event> out;
  absl::flat_hash_set<std::string> ours;
  for (const auto& row : rows) {
    if (row.cluster != *cluster) {
      continue;
    }
    ours.insert(row.resource_id);
    auto it = agent.find(row.resource_id);
    const int64_t agent_version = it == agent.end() ? 0 : it->second;
    if (row.deletion_state == store::DeletionState::kLive && row.version != 0 &&
        row.version <= agent_version) {
      continue;  // the agent is up to date
    }
    out.push_back(AnswerFor(source_id, row, now, new_id));
  }
  for (const auto& rv : list->resource_versions) {
    if (ours.contains(rv.resource_id)) {
      continue;
    }
    // Unknown to us: tell the agent to delete its orphan.
    out.push_back(cloudevents::MakeSpecResyncDeleteResponse(
        Header(source_id, *cluster, rv.resource_id, static_cast<int32_t>(rv.resource_version),
               new_id(), now),
        now));
  }
  return out;
}

std::vector<cloudevents::Event> BuildSpecReplays(const std::string& source_id,
                                                 const std::vector<store::DispatchedResource>& rows,
                                                 const absl::flat_hash_set<std::string>& ids,
                                                 cloudevents::Timestamp now,
                                                 const std::function<std::string()>& new_id) {
  std::vector<cloudevents::Event> out;
  for (const auto& row : rows) {
    if (ids.contains(row.resource_id)) {
      out.push_back(AnswerFor(source_id, row, now, new_id));
    }
  }
  return out;
}

SpecResyncResponder::SpecResyncResponder(std::string source_id, WorkerPool& workers,
                                         store::DispatchStore& store,
                                         transport::Publisher& publisher, const Clock& clock,
                                         DispatcherMetrics& metrics, DeletingCheck is_deleting)
    : source_id_(std::move(source_id)),
      is_deleting_(std::move(is_deleting)),
      workers_(workers),
      store_(store),
      publisher_(publisher),
      clock_(clock),
      metrics_(metrics),
      unanswerable_(Log(), "cannot answer spec resync requests", clock_) {}

void SpecResyncResponder::Handle(cloudevents::Event request, std::function<void()> done) {
  if (!IsSpecResyncRequestFor(request, source_id_)) {
    if (request.type == cloudevents::kSpecResyncRequestType) {
      metrics_.SpecResync("ignored");
    }
    done();
    return;
  }
  workers_.Post([this, request = std::move(request), done = std::move(done)] {
    unanswerable_.Flush();  // the summary of earlier bad requests, once its interval passed
    const std::string cluster = request.ClusterName().value_or("");
    auto rows = cluster.empty()
                    ? absl::StatusOr<std::vector<store::DispatchedResource>>(
                          absl::InvalidArgumentError("spec resync request without a clustername"))
                    : store_.ResourcesOfCluster(cluster);
    absl::StatusOr<std::vector<cloudevents::Event>> responses =
        rows.ok() ? BuildSpecResyncResponses(
                        source_id_, request, *rows,
                        std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now()),
                        [] { return cloudevents::NewUuidV4(); })
                  : rows.status();
    if (!responses.ok()) {
      metrics_.SpecResync("error");
      unanswerable_.Add(request.id, {{"cluster", cluster},
                                     {"event_id", request.id},
                                     {"error", std::string(responses.status().message())}});
      done();
      return;
    }
    metrics_.SpecResync("ok");
    Log().Info("answering a spec resync request",
               {{"cluster", cluster}, {"responses", static_cast<int64_t>(responses->size())}});
    Enqueue(cluster, *std::move(responses));
    done();
  });
}

void SpecResyncResponder::Replay(
    std::map<std::string, std::vector<std::string>> resources_by_cluster) {
  for (auto& [cluster, ids] : resources_by_cluster) {
    workers_.Post([this, cluster = cluster, ids = std::move(ids)] {
      auto rows = store_.ResourcesOfCluster(cluster);
      if (!rows.ok()) {
        metrics_.SpecResync("replay_error");
        unanswerable_.Add(cluster, {{"cluster", cluster},
                                    {"replay", static_cast<int64_t>(ids.size())},
                                    {"error", std::string(rows.status().message())}});
        return;
      }
      std::vector<cloudevents::Event> answers = BuildSpecReplays(
          source_id_, *rows, absl::flat_hash_set<std::string>(ids.begin(), ids.end()),
          std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now()),
          [] { return cloudevents::NewUuidV4(); });
      metrics_.SpecResync("replayed");
      Log().Info("sending recently accepted specs again after a resubscription",
                 {{"cluster", cluster}, {"responses", static_cast<int64_t>(answers.size())}});
      Enqueue(cluster, std::move(answers));
    });
  }
}

void SpecResyncResponder::Enqueue(const std::string& cluster,
                                  std::vector<cloudevents::Event> answers) {
  {
    absl::MutexLock lock(&mu_);
    for (auto& e : answers) {
      queue_.push_back(PendingAnswer{std::move(e), cluster, 0});
    }
  }
  Pump();
}

void SpecResyncResponder::Pump() {
  std::vector<PendingAnswer> batch;
  {
    absl::MutexLock lock(&mu_);
    while (in_flight_ < kMaxInFlight && !queue_.empty()) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      ++in_flight_;
    }
  }
  for (PendingAnswer& answer : batch) {
    if (is_deleting_ && answer.event.data.has_value() &&
        is_deleting_(answer.event.ResourceId().value_or(""))) {
      // Its deletion was decided after the answer was built: the spec must not follow the
      // delete request to the agent. Answer as for a resource being deleted (§6.5).
      cloudevents::ToSpecResyncDeleteResponse(
          answer.event, std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now()));
      metrics_.SpecResync("answered_as_deleting");
    }
    cloudevents::Event event = answer.event;  // kept for a retry
    publisher_.Publish(std::move(event),
                       [this, answer = std::move(answer)](absl::Status status) mutable {
                         workers_.Post([this, answer = std::move(answer), status]() mutable {
                           Completed(std::move(answer), status);
                         });
                       });
  }
}

void SpecResyncResponder::Completed(PendingAnswer answer, const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }
  if (!status.ok()) {
    // kFailedPrecondition: the publisher stopped (we are shutting down); the agent asks again
    // when it reconnects to the next leader. Anything else is a broker hiccup: try again later,
    // not at once (while disconnected, publishes fail immediately).
    if (status.code() != absl::StatusCode::kFailedPrecondition &&
        ++answer.attempts < kMaxAttempts) {
      metrics_.SpecResync("response_retried");
      const auto delay = RetryDelay(answer.attempts);
      workers_.PostAfter(delay, [this, answer = std::move(answer)]() mutable {
        {
          absl::MutexLock lock(&mu_);
          queue_.push_back(std::move(answer));
        }
        Pump();
      });
    } else {
      metrics_.SpecResync("response_dropped");
      Log().Warn("spec resync response not accepted; giving up (the agent resyncs on reconnect)",
                 {{"cluster", answer.cluster},
                  {"resource", answer.event.ResourceId().value_or("")},
                  {"attempts", static_cast<int64_t>(answer.attempts)},
                  {"error", std::string(status.message())}});
    }
  }
  Pump();
}

std::chrono::milliseconds SpecResyncResponder::RetryDelay(int attempts) {
  return BackoffDelay(BackoffSettings{kFirstRetryDelay, kMaxRetryDelay, 2.0, 0.0}, attempts - 1);
}

}  // namespace mmi::dispatcher
