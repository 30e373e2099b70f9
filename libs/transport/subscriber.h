// The source-side receiving interface: delivers CloudEvents sent by agents (or relayed by
// Maestro) to this source, over one of the transports.
//
//   RETURN_IF_ERROR(subscriber->Start(
//       [&loop](cloudevents::Event event, transport::AckFn ack) {
//         loop.Post([event = std::move(event), ack = std::move(ack)]() mutable {
//           WriteStatus(event);  // once durable:
//           std::move(ack)();
//         });
//       },
//       [&loop](bool resubscribed) { if (resubscribed) loop.Post(RequestStatusResync); }));
#pragma once

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "libs/cloudevents/event.h"

namespace mmi::transport {

// Acknowledges one delivery. Call it at most once, from any thread, when the event's effect is
// durable (or the event was deliberately skipped). An event whose ack is never called is
// redelivered where the transport can do so (Kafka: after a restart or a partition rebalance,
// the consumer group resumes at the oldest unacknowledged offset). MQTT (clean start, §3.1) and
// gRPC (no replay, §4.9) cannot redeliver: after a reconnect the service recovers with a status
// resync, triggered from the SubscribedHook.
using AckFn = absl::AnyInvocable<void() &&>;

// Receives every decoded event (status update_request / resync_response, spec resync_request,
// ...). Runs on a transport thread, one call at a time, in arrival order (which preserves the
// per-cluster order the transport guarantees, see README.md), and must only enqueue.
// Heartbeats never reach it; malformed and oversize messages are rejected, counted
// (`mmi_transport_messages_rejected_total{transport,client,reason}`) and logged instead.
using EventHandler = absl::AnyInvocable<void(cloudevents::Event event, AckFn ack)>;

// Runs on a transport thread each time the subscription becomes active: `resubscribed` is false
// the first time and true after every reconnect, when events may have been missed and the
// service should request a status resync (or re-list through Maestro's REST API). Must only
// enqueue.
using SubscribedHook = absl::AnyInvocable<void(bool resubscribed)>;

// Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction.
class Subscriber {
 public:
  virtual ~Subscriber() = default;

  // Validates the settings, then subscribes in the background (reconnecting with backoff
  // forever). kInvalidArgument / kFailedPrecondition for unusable settings; never fails because
  // the broker is down. `handler` must be set; `on_subscribed` may be empty.
  virtual absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) = 0;

  // Idempotent. Stops intake; when it returns, no handler or hook call is running or will run.
  // Acks called afterwards are ignored (the events count as unacknowledged).
  virtual void Stop() = 0;

  // True while the subscription is active.
  virtual bool connected() const = 0;
};

}  // namespace mmi::transport
