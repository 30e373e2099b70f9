// An in-memory Subscriber for unit tests of code that consumes events (the status sink) and for
// the transport contract suite: the test plays the broker and delivers events by hand.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"
#include "libs/common/log.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/metrics.h"
#include "libs/transport/subscriber.h"
#include "prometheus/registry.h"

namespace mmi::transport::testing {

// Thread-safe. Handler and hook run on the thread that calls Deliver*/Simulate* (or inside
// Start() for the first SubscribedHook call), never concurrently with each other. Metrics use
// the label transport="fake". Acks handed out must not be called after the fake is destroyed.
class FakeSubscriber final : public Subscriber {
 public:
  // `registry` receives the transport metrics; the default uses a private registry.
  explicit FakeSubscriber(cloudevents::CodecLimits limits = {});
  FakeSubscriber(prometheus::Registry& registry, cloudevents::CodecLimits limits = {});

  absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) override;
  void Stop() override;
  bool connected() const override;

  // Delivers one event as the broker would; returns its delivery id, or kFailedPrecondition
  // when not started or stopped, kUnavailable while disconnected.
  absl::StatusOr<int64_t> Deliver(cloudevents::Event event);
  // Delivers a structured-mode JSON event (`application/cloudevents+json`), decoding it like a
  // real transport: malformed or oversize input is rejected and counted, and the subscription
  // stays alive. Returns the delivery id, or the rejection (kInvalidArgument).
  absl::StatusOr<int64_t> DeliverEncoded(std::string_view json);
  // Delivers again, in original order, every event whose ack was not called (what Kafka does
  // after a restart); returns how many.
  int RedeliverUnacked();
  // Connection loss and recovery: the hook runs with resubscribed=true on reconnect.
  void SimulateDisconnect();
  void SimulateReconnect();

  bool acked(int64_t delivery_id) const;
  std::vector<int64_t> unacked() const;
  // The events of unacked(), in delivery order.
  std::vector<cloudevents::Event> unacked_events() const;
  // Events handed to the handler (redeliveries included), and rejected messages.
  int deliveries() const;
  int rejected() const;
  // Acks of delivery ids that were acknowledged twice (a bug in the code under test).
  int double_acks() const;

 private:
  struct Record {
    cloudevents::Event event;
    bool acked = false;
  };

  absl::StatusOr<int64_t> DeliverLocked(
      std::size_t wire_bytes, absl::FunctionRef<absl::StatusOr<cloudevents::Event>()> decode)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(deliver_mu_);
  void Ack(int64_t id);

  std::unique_ptr<prometheus::Registry> own_registry_;
  TransportMetrics metrics_;
  const cloudevents::CodecLimits limits_;
  internal::IntakeLog intake_log_;

  // Serializes handler/hook calls (a real transport has one receive thread).
  absl::Mutex deliver_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  EventHandler handler_ ABSL_GUARDED_BY(deliver_mu_);
  SubscribedHook on_subscribed_ ABSL_GUARDED_BY(deliver_mu_);

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, Record> records_ ABSL_GUARDED_BY(mu_);
  int delivered_ ABSL_GUARDED_BY(mu_) = 0;
  int rejected_ ABSL_GUARDED_BY(mu_) = 0;
  int double_acks_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mmi::transport::testing
