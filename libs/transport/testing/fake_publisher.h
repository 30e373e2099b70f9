// A call-recording Publisher for unit tests of code that publishes (the dispatcher) and for the
// transport contract suite. No network, no threads.
#pragma once

#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/event.h"
#include "libs/transport/metrics.h"
#include "libs/transport/publisher.h"
#include "prometheus/registry.h"

namespace mmi::transport::testing {

// Thread-safe. Completion modes:
//   kImmediate (default): the callback runs inside Publish() with the next scripted result
//     (FailNext) or OK. Real transports never complete inside Publish(); code under test must
//     work either way.
//   kManual: callbacks wait until CompleteNext()/CompleteAll(), so tests can hold events
//     "in flight" (e.g. to test back-pressure or Stop()).
// Publish() before Start() or after Stop() completes with kFailedPrecondition, as the real
// transports do. Stop() fails every pending callback with kUnavailable.
class FakePublisher final : public Publisher {
 public:
  enum class Mode { kImmediate, kManual };

  explicit FakePublisher(Mode mode = Mode::kImmediate) : mode_(mode) {}
  // Also records the transport metrics (transport="fake") in `registry`, which must outlive it.
  FakePublisher(Mode mode, prometheus::Registry& registry);

  absl::Status Start() override;
  void Publish(cloudevents::Event event, PublishCallback done) override;
  void Stop() override;
  bool connected() const override;
  size_t max_in_flight() const override;

  // Test controls.
  void SetStartResult(absl::Status status);
  void SetConnected(bool connected);
  // What max_in_flight() reports (unbounded by default), as a broker's Receive Maximum would.
  void SetMaxInFlight(size_t max_in_flight);
  // The next Publish() calls complete with these results, in order (then OK again).
  void FailNext(absl::Status status);
  // kManual: completes the oldest pending publish with `status`; false when none is pending.
  bool CompleteNext(absl::Status status = absl::OkStatus());
  // kManual: completes every pending publish with `status`; returns how many.
  int CompleteAll(absl::Status status = absl::OkStatus());

  // Every event passed to Publish(), in call order (also the failed ones).
  std::vector<cloudevents::Event> published() const;
  // Events whose callback got OK, in completion order.
  std::vector<cloudevents::Event> accepted() const;
  int pending() const;
  int start_calls() const;
  int stop_calls() const;

 private:
  struct Pending {
    cloudevents::Event event;
    PublishCallback done;
  };

  void Record(const absl::Status& status);

  const Mode mode_;
  std::unique_ptr<TransportMetrics> metrics_;  // null when built without a registry
  mutable absl::Mutex mu_;
  absl::Status start_result_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = true;
  size_t max_in_flight_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<size_t>::max();
  int start_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int stop_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<absl::Status> scripted_ ABSL_GUARDED_BY(mu_);
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<cloudevents::Event> published_ ABSL_GUARDED_BY(mu_);
  std::vector<cloudevents::Event> accepted_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::transport::testing
