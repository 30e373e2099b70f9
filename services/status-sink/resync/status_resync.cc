#include "services/status-sink/resync/status_resync.h"

#include <utility>

#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"
#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {
StatusResync::StatusResync(StatusResyncSettings settings, transport::Publisher& publisher,
                           store::StatusStore& store, Executor& store_executor, Executor& loop,
                           const Clock& clock, SinkMetrics& metrics, const Coalescer& coalescer)
    : settings_(std::move(settings)),
      publisher_(publisher),
      store_(store),
      store_executor_(store_executor),
      loop_(loop),
      clock_(clock),
      metrics_(metrics),
      coalescer_(coalescer),
      lost_(settings_.lost) {}

void StatusResync::AskAfterLoss() {
  if (!wanted_.exchange(true)) {
    ++asks_;
  }
}

void StatusResync::AskAfterSubscribe() {
  ++asks_;
  wanted_.store(true);
}

void StatusResync::RememberLost(const std::string& resource_id, const std::string& cluster) {
  if (!lost_.Remember(resource_id, cluster)) {
    AskAfterLoss();
  }
}

void StatusResync::ReportArrived(const std::string& resource_id, bool overflowed) {
  lost_.AnswerArrived(resource_id);
  if (!overflowed) {
    lost_.Recovered(resource_id);  // nothing left to recover
  }
}

void StatusResync::Tick(TimePoint now, bool may_request, bool intake_has_room,
                        std::size_t awaiting_lookup) {
  if (wanted_.load() && may_request) {
    if (now < next_at_) {
      Defer(now);
    } else if (!in_flight_ && now >= retry_at_ && intake_has_room) {
      RequestFull();
    }
  } else if (lost_.lost() > 0 && may_request && !in_flight_ && now >= next_at_ &&
             now >= retry_at_ && intake_has_room) {
    RequestLost(now, awaiting_lookup);
  }
  ExpireLostAsks(now);
}

void StatusResync::LogUnlogged() {
  if (unlogged_.lost_given_up > 0) {
    SinkLog().Warn(
        "lost reports asked for by every allowed status resync got no answer; given up until the "
        "next report of each or the next full status resync",
        {{"resources", unlogged_.lost_given_up}, {"asks", settings_.lost.asks}});
    unlogged_.lost_given_up = 0;
  }
  if (unlogged_.failed > 0) {
    SinkLog().Warn(
        "cannot publish status resync requests for lost reports; their resources are asked for "
        "again in a later round",
        {{"failed_requests", unlogged_.failed}, {"last_error", unlogged_.last_error}});
    unlogged_.failed = 0;
  }
}

void StatusResync::ExpireLostAsks(TimePoint now) {
  const LostReports::Expired expired = lost_.ExpireAsks(now);
  for (uint64_t i = 0; i < expired.given_up; ++i) {
    metrics_.LostUnanswered(/*given_up=*/true);
  }
  for (uint64_t i = 0; i < expired.asked_again; ++i) {
    metrics_.LostUnanswered(/*given_up=*/false);
  }
  unlogged_.lost_given_up += expired.given_up;
  if (expired.full_resync) {
    AskAfterLoss();
  }
  if (expired.asked_again > 0) {
    SinkLog().Info("lost reports asked for got no answer in time; asking again",
                   {{"resources", expired.asked_again},
                    {"timeout_ms", static_cast<int64_t>(settings_.lost.answer_timeout.count())}});
  }
}

bool StatusResync::RequestLost(TimePoint now, std::size_t awaiting_lookup) {
  const std::size_t max_pending = settings_.max_pending;
  const std::size_t busy = coalescer_.pending() + awaiting_lookup;
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
  next_at_ = now + settings_.min_interval;
  const std::size_t still_lost = lost_.lost();
  // The hash of the last report the sink holds (if any): the agent answers because its current
  // one differs - that is the report that was dropped, or a newer one.
  const ResyncLists per_cluster = lost_.TakeRound(
      budget, now, [this](const std::string& id) { return coalescer_.LatestHash(id); });
  const std::size_t asked = still_lost - lost_.lost();
  int requests = 0;
  for (const ResyncChunk& chunk : ChunkResyncLists(per_cluster, settings_.chunk)) {
    absl::Status published = Publish(
        chunk, [this, cluster = chunk.cluster, ids = chunk.list](absl::Status status) mutable {
          metrics_.Resync(status.ok());
          if (status.ok()) {
            return;
          }
          loop_.Post([this, cluster = std::move(cluster), ids = std::move(ids),
                      status = std::move(status)] { OnLostResyncFailed(cluster, ids, status); });
        });
    if (!published.ok()) {
      // Cannot happen for ids the sink took from events; fall back to asking for everything.
      SinkLog().Warn("cannot build a status resync request for lost reports",
                     {{"cluster", chunk.cluster}, {"error", published.ToString()}});
      AskAfterLoss();
      continue;
    }
    ++requests;
  }
  failures_ = 0;  // as after a full resync: a failed publish counts up again
  SinkLog().Info("status resync of lost reports requested",
                 {{"resources", static_cast<int64_t>(asked)},
                  {"clusters", static_cast<int64_t>(per_cluster.size())},
                  {"requests", requests},
                  {"still_lost", static_cast<int64_t>(lost_.lost())}});
  return true;
}

void StatusResync::OnLostResyncFailed(const std::string& cluster,
                                      const cloudevents::ResourceStatusHashList& ids,
                                      const absl::Status& status) {
  // Not asked after all: asked again in a later round, with the asks it had.
  if (!lost_.Unask(ids)) {
    AskAfterLoss();
  }
  retry_at_ = clock_.MonotonicNow() + RetryDelay();
  // Summed by LogUnlogged: a round may fail for thousands of clusters at once.
  ++unlogged_.failed;
  unlogged_.last_error = cluster + ": " + status.ToString();
}

absl::Status StatusResync::Publish(const ResyncChunk& chunk, transport::PublishCallback done) {
  auto event = cloudevents::MakeStatusResyncRequest(
      settings_.source_id, chunk.cluster, chunk.list, cloudevents::NewUuidV4(),
      std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now()));
  if (!event.ok()) {
    return event.status();
  }
  publisher_.Publish(*std::move(event), std::move(done));
  return absl::OkStatus();
}

void StatusResync::Defer(TimePoint now) {
  // Stays wanted: sent by the first tick after next_at_, so no ask is lost.
  if (const uint64_t asks = asks_.exchange(0); asks > 0) {
    metrics_.ResyncSuppressed(static_cast<double>(asks));
  }
  if (!deferral_logged_) {
    deferral_logged_ = true;
    SinkLog().Info(
        "status resync deferred: the previous one was less than statusResyncMinInterval ago",
        {{"wait_ms",
          static_cast<int64_t>(
              std::chrono::duration_cast<std::chrono::milliseconds>(next_at_ - now).count())}});
  }
}

void StatusResync::RequestFull() {
  wanted_.store(false);
  asks_.store(0);  // all served by this resync
  deferral_logged_ = false;
  in_flight_ = true;
  store_executor_.Post([this] {
    std::vector<store::ResyncEntry> entries;
    absl::Status status =
        store_.ForEachResyncEntry([&](const store::ResyncEntry& e) { entries.push_back(e); });
    absl::StatusOr<std::vector<store::ResyncEntry>> result =
        status.ok() ? absl::StatusOr<std::vector<store::ResyncEntry>>(std::move(entries))
                    : absl::StatusOr<std::vector<store::ResyncEntry>>(status);
    loop_.Post(
        [this, result = std::move(result)]() mutable { OnResyncEntries(std::move(result)); });
  });
}

void StatusResync::OnResyncEntries(absl::StatusOr<std::vector<store::ResyncEntry>> entries) {
  in_flight_ = false;
  const auto retry = [&](const absl::Status& status) {
    metrics_.Resync(false);
    wanted_.store(true);
    retry_at_ = clock_.MonotonicNow() + RetryDelay();
    SinkLog().Warn("status resync request failed; retrying", {{"error", status.ToString()}});
  };
  if (!entries.ok()) {
    metrics_.StoreError("resync");
    retry(entries.status());
    return;
  }
  // The minimum interval runs from the last resync that publishes (a failed store read above is
  // retried with backoff only).
  next_at_ = clock_.MonotonicNow() + settings_.min_interval;
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
  for (const ResyncChunk& chunk : ChunkResyncLists(per_cluster, settings_.chunk)) {
    absl::Status published = Publish(chunk, [this, cluster = chunk.cluster](absl::Status status) {
      metrics_.Resync(status.ok());
      if (!status.ok()) {
        loop_.Post([this, cluster, status = std::move(status)] {
          wanted_.store(true);
          retry_at_ = clock_.MonotonicNow() + RetryDelay();
          SinkLog().Warn("cannot publish a status resync request; retrying",
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
  failures_ = 0;
  SinkLog().Info("status resync requested", {{"clusters", static_cast<int64_t>(per_cluster.size())},
                                             {"requests", requests},
                                             {"resources", static_cast<int64_t>(entries->size())}});
}

}  // namespace mmi::status_sink
