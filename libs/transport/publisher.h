// The source-side publishing interface: sends CloudEvents towards Maestro or the agents over one
// of the transports (MQTT, gRPC, Kafka) without the caller knowing which.
//
//   ASSIGN_OR_RETURN(auto publisher, transport::MakePublisher(settings, deps));
//   RETURN_IF_ERROR(publisher->Start());
//   publisher->Publish(std::move(event), [&loop](absl::Status status) {
//     loop.Post([status] { ... });  // only enqueue: this runs on a transport thread
//   });
//   publisher->Stop();
#pragma once

#include <cstddef>
#include <limits>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "libs/cloudevents/event.h"

namespace mmi::transport {

// Receives the outcome of one Publish(). Runs exactly once, on a transport-owned thread (never
// inside Publish() itself), and must only enqueue work: it must not block and must not call back
// into the Publisher.
using PublishCallback = absl::AnyInvocable<void(absl::Status) &&>;

// Publishes CloudEvents produced by this source (spec events, status resync requests, spec
// resync responses). Delivery is at-least-once: a callback with OK means the broker accepted the
// event durably for that transport (MQTT PUBACK for QoS 1, Kafka delivery report, gRPC Publish
// returned OK = Maestro committed the row); on any error the caller may retry, so receivers must
// be idempotent by CloudEvent `id`.
//
// Errors passed to the callback use the codes of STYLE.md §4:
//   kUnavailable, kDeadlineExceeded, kResourceExhausted: transient, retry with backoff;
//   kInvalidArgument: this event can never be sent (not encodable, too large, no `clustername`,
//     `source` differs from the transport's source id): count it and skip;
//   kFailedPrecondition: the peer refused the event for a reason the caller must fix first;
//     IsUnknownConsumer() (errors.h) tells when the target cluster is not registered in Maestro;
//   kNotFound / kAlreadyExists: Maestro reported a missing resource / a conflict, the caller
//     decides; kPermissionDenied / kUnauthenticated: configuration problem (credentials).
//
// Events of one cluster published from one thread are handed to the broker in call order; MQTT
// and Kafka also deliver them in that order, while gRPC unary calls are independent streams, so
// callers that need strict order for one resource wait for the callback before the next update.
// Thread-safe: Publish() may be called from any thread, concurrently.
class Publisher {
 public:
  virtual ~Publisher() = default;

  // Validates the settings and starts connecting in the background; does not wait for the
  // broker. kInvalidArgument / kFailedPrecondition for unusable settings (e.g. TLS files that
  // cannot be read). Call once, before Publish().
  virtual absl::Status Start() = 0;

  // Non-blocking. Before Start() or after Stop() the callback gets kFailedPrecondition; while
  // the transport is disconnected it gets kUnavailable (MQTT, gRPC) or is queued by the client
  // library until its delivery timeout (Kafka).
  virtual void Publish(cloudevents::Event event, PublishCallback done) = 0;

  // Idempotent. Waits (bounded by the transport's flush timeout) for in-flight events and then
  // fails the rest with kUnavailable, so that every callback has run when Stop() returns.
  virtual void Stop() = 0;

  // True while the transport believes it is connected to its broker or server.
  virtual bool connected() const = 0;

  // The most events that should await their acknowledgement at once: what the broker said it
  // takes (MQTT 5 Receive Maximum). NativeMqttPublisher keeps the excess itself (held in call
  // order), so callers need not cap their window with it. Unbounded where the transport has no
  // such limit.
  virtual size_t max_in_flight() const { return std::numeric_limits<size_t>::max(); }
};

}  // namespace mmi::transport
