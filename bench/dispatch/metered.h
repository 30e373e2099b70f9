// Decorators that measure the stages that run behind the dispatcher's interfaces: the client-side
// CPU of DispatchStore::Record ("record") and MarkPublished ("mark published") on the worker
// threads, of Publisher::Publish on the reconcile loop ("publish", the hand-over to the MQTT
// publisher), and the count of events the broker acknowledged. Same contract and thread safety as
// the wrapped object; counters are atomics readable from any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "libs/store/dispatch_store.h"
#include "libs/transport/publisher.h"

namespace mmi::bench {

// Thread CPU spent inside one kind of call, and how many calls and items.
struct CallCost {
  std::atomic<int64_t> cpu_ns{0};
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> items{0};
};

class MeteredStore final : public store::DispatchStore {
 public:
  explicit MeteredStore(store::DispatchStore& inner) : inner_(inner) {}

  absl::Status ForEachResource(
      const std::function<void(const store::DispatchedResource&)>& fn) override;
  absl::StatusOr<bool> HasResources() override { return inner_.HasResources(); }
  absl::StatusOr<std::optional<store::DispatchedResource>> GetResource(
      const std::string& resource_id) override {
    return inner_.GetResource(resource_id);
  }
  absl::StatusOr<store::ApplicationRows> LoadApplications(
      const std::vector<store::HubKey>& keys, const std::vector<std::string>& ids) override {
    return inner_.LoadApplications(keys, ids);
  }
  absl::StatusOr<std::vector<store::DispatchedResource>> ResourcesOfCluster(
      const std::string& cluster) override {
    return inner_.ResourcesOfCluster(cluster);
  }
  absl::StatusOr<std::vector<int64_t>> Record(
      const std::vector<store::DispatchChange>& changes) override;
  absl::StatusOr<std::vector<store::OutboxEntry>> PendingOutbox(int64_t after_seq,
                                                                int limit) override {
    return inner_.PendingOutbox(after_seq, limit);
  }
  absl::Status MarkPublished(const std::vector<int64_t>& seqs,
                             std::chrono::system_clock::time_point at) override;
  absl::Status RecordPublishFailure(int64_t seq, const std::string& error) override {
    return inner_.RecordPublishFailure(seq, error);
  }
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) override {
    return inner_.MarkDeletionConfirmed(resource_id);
  }
  absl::StatusOr<std::vector<std::string>> ConfirmedDeletions() override {
    return inner_.ConfirmedDeletions();
  }
  absl::Status Forget(const std::string& resource_id) override {
    return inner_.Forget(resource_id);
  }
  absl::Status PutManifestRender(const store::ManifestRender& render) override {
    return inner_.PutManifestRender(render);
  }
  absl::StatusOr<std::optional<store::ManifestRender>> GetManifestRender(
      const std::string& resource_id) override {
    return inner_.GetManifestRender(resource_id);
  }
  absl::StatusOr<store::AckSnapshot> UnacknowledgedResources(
      const store::AckWindow& window) override {
    return inner_.UnacknowledgedResources(window);
  }
  absl::StatusOr<std::vector<store::AcknowledgedHandover>> AcknowledgedHandovers(
      int limit) override {
    return inner_.AcknowledgedHandovers(limit);
  }

  const CallCost& record() const { return record_; }
  const CallCost& mark() const { return mark_; }
  // Seqs removed from the outbox so far (MarkPublished calls that succeeded).
  int64_t marked() const { return marked_.load(); }
  // Wall time spent in ForEachResource() (the warm load), summed over its calls.
  double load_seconds() const { return static_cast<double>(load_wall_ns_.load()) / 1e9; }

 private:
  store::DispatchStore& inner_;
  CallCost record_;
  CallCost mark_;
  std::atomic<int64_t> marked_{0};
  std::atomic<int64_t> load_wall_ns_{0};
};

class MeteredPublisher final : public transport::Publisher {
 public:
  explicit MeteredPublisher(transport::Publisher& inner) : inner_(inner) {}

  absl::Status Start() override { return inner_.Start(); }
  void Publish(cloudevents::Event event, transport::PublishCallback done) override;
  void Stop() override { inner_.Stop(); }
  bool connected() const override { return inner_.connected(); }
  size_t max_in_flight() const override { return inner_.max_in_flight(); }

  const CallCost& publish() const { return publish_; }
  int64_t acknowledged() const { return acknowledged_.load(); }
  int64_t failed() const { return failed_.load(); }
  // Publish() to its callback (the broker's PUBACK), summed over every event; and the most
  // events awaiting theirs at once.
  double ack_wait_seconds() const { return static_cast<double>(ack_wait_ns_.load()) * 1e-9; }
  int64_t max_awaiting() const { return max_awaiting_.load(); }

 private:
  transport::Publisher& inner_;
  CallCost publish_;
  std::atomic<int64_t> ack_wait_ns_{0};
  std::atomic<int64_t> awaiting_{0};
  std::atomic<int64_t> max_awaiting_{0};
  std::atomic<int64_t> acknowledged_{0};
  std::atomic<int64_t> failed_{0};
};

}  // namespace mmi::bench
