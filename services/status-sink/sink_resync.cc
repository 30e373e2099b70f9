// The sink's status resyncs (full, and of lost reports) and fleet report (sink.h).
#include <utility>

#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "services/status-sink/sink.h"

namespace mmi::status_sink {
// --- resync and fleet report ----------------------------------------------------------------

void Sink::ResyncAfterLoss() {
  if (!resync_.wanted.exchange(true)) {
    ++resync_.asks;
  }
}

void Sink::RememberLost(const std::string& resource_id, const std::string& cluster) {
  if (!lost_.Remember(resource_id, cluster)) {
    ResyncAfterLoss();
  }
}

void Sink::ExpireLostAsks(std::chrono::steady_clock::time_point now) {
  const LostReports::Expired expired = lost_.ExpireAsks(now);
  for (uint64_t i = 0; i < expired.given_up; ++i) {
    metrics_.LostUnanswered(/*given_up=*/true);
  }
  for (uint64_t i = 0; i < expired.asked_again; ++i) {
    metrics_.LostUnanswered(/*given_up=*/false);
  }
  unlogged_.lost_given_up += expired.given_up;
  if (expired.full_resync) {
    ResyncAfterLoss();
  }
  if (expired.asked_again > 0) {
    Log().Info("lost reports asked for got no answer in time; asking again",
               {{"resources", expired.asked_again},
                {"timeout_ms", static_cast<int64_t>(settings_.lost_answer_timeout.count())}});
  }
}

bool Sink::RequestLostResync(std::chrono::steady_clock::time_point now) {
  const std::size_t max_pending = settings_.coalescer.max_pending;
  const std::size_t busy = coalescer_.pending() + lookup_.awaiting_count;
  const std::size_t room = busy >= max_pending ? 0 : max_pending - busy;
  std::size_t budget = lost_.RoundBudget(room, max_pending);
  if (budget == 0) {
    // Waiting volatile-only writes are room too: an answer (a report the hub lacks) sheds one to
    // be admitted, as any report needing a slot does. Under Argo CD's refresh churn the pending
    // set stays full of them, and counting free slots alone never recovered anything lost.
    if (!lost_.MayRecheckRoom(now)) {
      return false;
    }
    budget = lost_.RoundBudget(room + coalescer_.Sheddable(), max_pending);
  }
  if (budget == 0) {
    return false;
  }
  resync_.next_at = now + settings_.status_resync_min_interval;
  const std::size_t still_lost = lost_.lost();
  // The hash of the last report the sink holds (if any): the agent answers because its current
  // one differs - that is the report that was dropped, or a newer one.
  const ResyncLists per_cluster = lost_.TakeRound(
      budget, now, [this](const std::string& id) { return coalescer_.LatestHash(id); });
  const std::size_t asked = still_lost - lost_.lost();
  int requests = 0;
  for (const ResyncChunk& chunk : ChunkResyncLists(per_cluster, settings_.resync_chunk)) {
    absl::Status published = PublishResyncRequest(
        chunk, [this, cluster = chunk.cluster, ids = chunk.list](absl::Status status) mutable {
          metrics_.Resync(status.ok());
          if (status.ok()) {
            return;
          }
          Post([this, cluster = std::move(cluster), ids = std::move(ids),
                status = std::move(status)] { OnLostResyncFailed(cluster, ids, status); });
        });
    if (!published.ok()) {
      // Cannot happen for ids the sink took from events; fall back to asking for everything.
      Log().Warn("cannot build a status resync request for lost reports",
                 {{"cluster", chunk.cluster}, {"error", published.ToString()}});
      ResyncAfterLoss();
      continue;
    }
    ++requests;
  }
  resync_.failures = 0;  // as after a full resync: a failed publish counts up again
  Log().Info("status resync of lost reports requested",
             {{"resources", static_cast<int64_t>(asked)},
              {"clusters", static_cast<int64_t>(per_cluster.size())},
              {"requests", requests},
              {"still_lost", static_cast<int64_t>(lost_.lost())}});
  return true;
}

void Sink::OnLostResyncFailed(const std::string& cluster,
                              const cloudevents::ResourceStatusHashList& ids,
                              const absl::Status& status) {
  // Not asked after all: asked again in a later round, with the asks it had.
  if (!lost_.Unask(ids)) {
    ResyncAfterLoss();
  }
  resync_.retry_at = clock_.MonotonicNow() + RetryDelay(resync_.failures++);
  // Summed by LogDrops: a round may fail for thousands of clusters at once.
  ++unlogged_.lost_resync_failed;
  unlogged_.lost_resync_last_error = cluster + ": " + status.ToString();
}

absl::Status Sink::PublishResyncRequest(const ResyncChunk& chunk, transport::PublishCallback done) {
  auto event = cloudevents::MakeStatusResyncRequest(
      settings_.source_id, chunk.cluster, chunk.list, cloudevents::NewUuidV4(),
      std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now()));
  if (!event.ok()) {
    return event.status();
  }
  publisher_.Publish(*std::move(event), std::move(done));
  return absl::OkStatus();
}

void Sink::DeferResync(std::chrono::steady_clock::time_point now) {
  // Stays wanted: sent by the first tick after resync_.next_at, so no ask is lost.
  if (const uint64_t asks = resync_.asks.exchange(0); asks > 0) {
    metrics_.ResyncSuppressed(static_cast<double>(asks));
  }
  if (!resync_.deferral_logged) {
    resync_.deferral_logged = true;
    Log().Info(
        "status resync deferred: the previous one was less than statusResyncMinInterval ago",
        {{"wait_ms", static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              resync_.next_at - now)
                                              .count())}});
  }
}

void Sink::RequestResync() {
  resync_.wanted.store(false);
  resync_.asks.store(0);  // all served by this resync
  resync_.deferral_logged = false;
  resync_.in_flight = true;
  store_executor_.Post([this] {
    std::vector<store::ResyncEntry> entries;
    absl::Status status =
        store_.ForEachResyncEntry([&](const store::ResyncEntry& e) { entries.push_back(e); });
    absl::StatusOr<std::vector<store::ResyncEntry>> result =
        status.ok() ? absl::StatusOr<std::vector<store::ResyncEntry>>(std::move(entries))
                    : absl::StatusOr<std::vector<store::ResyncEntry>>(status);
    Post([this, result = std::move(result)]() mutable { OnResyncEntries(std::move(result)); });
  });
}

void Sink::OnResyncEntries(absl::StatusOr<std::vector<store::ResyncEntry>> entries) {
  resync_.in_flight = false;
  const auto retry = [&](const absl::Status& status) {
    metrics_.Resync(false);
    resync_.wanted.store(true);
    resync_.retry_at = clock_.MonotonicNow() + RetryDelay(resync_.failures++);
    Log().Warn("status resync request failed; retrying", {{"error", status.ToString()}});
  };
  if (!entries.ok()) {
    metrics_.StoreError("resync");
    retry(entries.status());
    return;
  }
  // The minimum interval runs from the last resync that publishes (a failed store read above is
  // retried with backoff only).
  resync_.next_at = clock_.MonotonicNow() + settings_.status_resync_min_interval;
  // Everything is asked for: the lost resources too.
  lost_.Clear();
  // Per cluster (MQTT routes a request to the cluster's topic), in chunks that fit a message.
  ResyncLists per_cluster;
  for (const auto& e : *entries) {
    std::string hash = coalescer_.LatestHash(e.resource_id);
    if (hash.empty()) {
      hash = e.status_hash;
    }
    per_cluster[e.cluster].status_hashes.push_back({e.resource_id, std::move(hash)});
  }
  int requests = 0;
  for (const ResyncChunk& chunk : ChunkResyncLists(per_cluster, settings_.resync_chunk)) {
    absl::Status published =
        PublishResyncRequest(chunk, [this, cluster = chunk.cluster](absl::Status status) {
          metrics_.Resync(status.ok());
          if (!status.ok()) {
            Post([this, cluster, status = std::move(status)] {
              resync_.wanted.store(true);
              resync_.retry_at = clock_.MonotonicNow() + RetryDelay(resync_.failures++);
              Log().Warn("cannot publish a status resync request; retrying",
                         {{"cluster", cluster}, {"error", status.ToString()}});
            });
          }
        });
    if (!published.ok()) {
      retry(published);
      return;
    }
    ++requests;
  }
  resync_.failures = 0;
  Log().Info("status resync requested", {{"clusters", static_cast<int64_t>(per_cluster.size())},
                                         {"requests", requests},
                                         {"resources", static_cast<int64_t>(entries->size())}});
}

void Sink::RefreshCounts() {
  counts_.in_flight = true;
  counts_.next_at = clock_.MonotonicNow() + settings_.counts_interval;
  store_executor_.Post([this] {
    auto counts = store_.AppSetCounts();
    Post([this, counts = std::move(counts)]() mutable {
      counts_.in_flight = false;
      if (!counts.ok()) {
        metrics_.StoreError("counts");
        Log().Warn("cannot read the fleet report counts", {{"error", counts.status().ToString()}});
        return;
      }
      metrics_.SetAppSetCounts(*counts);
    });
  });
}

}  // namespace mmi::status_sink
