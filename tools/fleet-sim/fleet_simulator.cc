#include "tools/fleet-sim/fleet_simulator.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "absl/time/time.h"
#include "libs/common/log.h"

namespace mmi::fleet_sim {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.loop");
  return logger;
}

}  // namespace

FleetSimulator::FleetSimulator(SimulatorSettings settings, AgentTransport& transport,
                               const Clock& clock, FleetMetrics& metrics)
    : settings_(std::move(settings)),
      transport_(transport),
      clock_(clock),
      metrics_(metrics),
      fleet_(settings_.fleet, clock, metrics) {
  applications_ = fleet_.application_count();
}

FleetSimulator::~FleetSimulator() { Stop(); }

void FleetSimulator::AddSpoke(SpokeAgentRunner& spoke) { spokes_[spoke.cluster()] = &spoke; }

absl::Status FleetSimulator::Start() {
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
  for (auto& [cluster, spoke] : spokes_) {
    spoke->Start([this](std::vector<cloudevents::Event> events) {
      if (!events.empty()) {
        Enqueue(SpokeReplies{std::move(events)});
      }
    });
  }
  absl::Status status =
      transport_.Start([this](ReceivedEvent received) { Enqueue(std::move(received)); },
                       [this](Subscription subscription) { Enqueue(std::move(subscription)); });
  if (!status.ok()) {
    Stop();
  }
  return status;
}

void FleetSimulator::Stop() {
  transport_.Stop();  // no more intake
  for (auto& [cluster, spoke] : spokes_) {
    spoke->Stop();
  }
  {
    absl::MutexLock lock(&mu_);
    if (std::exchange(stopping_, true)) {
      return;  // stopped already
    }
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

void FleetSimulator::Enqueue(Item item) {
  absl::MutexLock lock(&mu_);
  // (Re)subscription cues are never dropped: they are rare and drive recovery.
  if (std::holds_alternative<ReceivedEvent>(item) && intake_.size() >= settings_.max_intake) {
    metrics_.intake_dropped.Increment();
    return;
  }
  intake_.push_back(std::move(item));
  metrics_.intake_queue_depth.Set(static_cast<double>(intake_.size()));
}

void FleetSimulator::RequestSnapshot(SnapshotCallback done) {
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    return;
  }
  intake_.push_back(SnapshotRequest{std::move(done)});
}

void FleetSimulator::PublishAll(std::vector<cloudevents::Event> events) {
  for (cloudevents::Event& event : events) {
    PublishOne(std::move(event));
  }
}

void FleetSimulator::PublishOne(cloudevents::Event event) {
  // The transport consumes its event; the copy is what a retry sends.
  cloudevents::Event copy = event;
  transport_.Publish(std::move(event), [this, copy = std::move(copy)](absl::Status status) mutable {
    if (!status.ok()) {
      OnPublishFailed(std::move(copy));
    }
  });
}

void FleetSimulator::OnPublishFailed(cloudevents::Event event) {
  metrics_.publish_failures.Increment();
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    return;
  }
  if (retry_.size() >= settings_.max_retry) {
    retry_.pop_front();
    metrics_.retry_dropped.Increment();
  }
  retry_.push_back(std::move(event));
}

bool FleetSimulator::RouteToSpokes(const ReceivedEvent& received) {
  if (spokes_.empty() || !received.event.ok()) {
    return false;
  }
  const cloudevents::Event& event = *received.event;
  std::string cluster = received.topic_cluster;
  if (cluster.empty()) {
    cluster = event.ClusterName().value_or("");
  }
  if (auto it = spokes_.find(cluster); it != spokes_.end()) {
    it->second->Post(event);
    return true;
  }
  if (cluster.empty()) {  // e.g. a status resync request for every cluster
    for (auto& [name, spoke] : spokes_) {
      spoke->Post(event);
    }
  }
  return false;
}

void FleetSimulator::Loop() {
  pthread_setname_np(pthread_self(), "fleet-loop");
  auto next_tick = clock_.MonotonicNow() + settings_.tick;
  while (true) {
    std::deque<Item> batch;
    {
      absl::MutexLock lock(&mu_);
      // With churn left to publish the loop only looks at the intake and goes on.
      const auto wait = churn_.empty() ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                             next_tick - clock_.MonotonicNow())
                                       : std::chrono::milliseconds(0);
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](FleetSimulator* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
                                 return self->stopping_ || !self->intake_.empty();
                               },
                               this),
                           absl::FromChrono(std::max(wait, std::chrono::milliseconds(0))));
      if (stopping_) {
        return;
      }
      batch.swap(intake_);
      metrics_.intake_queue_depth.Set(0);
      metrics_.connected.Set(transport_.connected() ? 1 : 0);
      metrics_.subscribed_clusters.Set(
          static_cast<double>(transport_.SubscribedClusters(fleet_.cluster_count())));
    }
    for (Item& item : batch) {
      HandleItem(item);
    }
    // Received events first, then one slice of the churn.
    for (std::size_t n = 0; n < settings_.churn_slice && !churn_.empty(); ++n) {
      PublishOne(std::move(churn_.front()));
      churn_.pop_front();
    }
    metrics_.churn_backlog.Set(static_cast<double>(churn_.size()));
    if (churn_.empty() && clock_.MonotonicNow() >= next_tick) {
      Tick();
      next_tick = clock_.MonotonicNow() + settings_.tick;
    }
    applications_ = fleet_.application_count();
  }
}

void FleetSimulator::HandleItem(Item& item) {
  if (auto* received = std::get_if<ReceivedEvent>(&item)) {
    if (!RouteToSpokes(*received)) {
      PublishAll(fleet_.Handle(received->topic_cluster, received->event));
    }
  } else if (auto* replies = std::get_if<SpokeReplies>(&item)) {
    PublishAll(std::move(replies->events));
  } else if (auto* request = std::get_if<SnapshotRequest>(&item)) {
    std::move(request->done)(fleet_.Snapshot());
  } else {
    Subscribed(std::get<Subscription>(item));
  }
}

void FleetSimulator::Subscribed(const Subscription& subscription) {
  std::vector<cloudevents::Event> requests = fleet_.SpecResyncRequests(subscription.clusters);
  for (auto& [cluster, spoke] : spokes_) {
    if (subscription.clusters.empty() ||
        std::find(subscription.clusters.begin(), subscription.clusters.end(), cluster) !=
            subscription.clusters.end()) {
      spoke->PostSpecResync();
    }
  }
  Log().Info(
      "subscribed; sending spec resync requests",
      {{"clusters", static_cast<int64_t>(requests.size())}, {"reconnect", subscription.reconnect}});
  PublishAll(std::move(requests));
  ++resync_rounds_;
}

void FleetSimulator::Tick() {
  std::deque<cloudevents::Event> retry;
  bool backlogged = false;
  // Retried while any cluster can publish: over gRPC one stream in its backoff must not hold
  // back every other cluster's retries (unary Publish needs no Subscribe stream).
  const bool can_publish = transport_.SubscribedClusters(fleet_.cluster_count()) > 0;
  {
    absl::MutexLock lock(&mu_);
    if (can_publish) {
      retry.swap(retry_);
    }
    backlogged = settings_.postpone_refreshes_above > 0 &&
                 intake_.size() > settings_.postpone_refreshes_above;
  }
  metrics_.publish_retries.Increment(static_cast<double>(retry.size()));
  for (cloudevents::Event& event : retry) {
    PublishOne(std::move(event));
  }
  for (cloudevents::Event& event : fleet_.Tick(backlogged)) {
    churn_.push_back(std::move(event));
  }
}

}  // namespace mmi::fleet_sim
