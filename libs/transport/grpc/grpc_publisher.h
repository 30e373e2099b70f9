// Publisher over Maestro's gRPC source API (maestro-protocol.md §4): unary Publish.
#pragma once

#include <grpcpp/channel.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/transport/grpc/internal/credentials.h"
#include "libs/transport/internal/serial_executor.h"
#include "libs/transport/metrics.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"
#include "prometheus/registry.h"
#include "proto/cloudevent.grpc.pb.h"

namespace mmi::transport {

// Sends each event as a PublishRequest (binary mode, OCM attribute keys, §4.3) with a
// publishTimeout deadline and, when configured, `authorization: Bearer <token>` metadata. OK
// means Maestro committed the resource row (§6.9); delivery to the agent is asynchronous. An
// event for a cluster Maestro does not know fails with IsUnknownConsumer() (errors.h); see
// internal/status_mapping.h for the rest of the mapping. Calls are not queued while the channel
// is down: they fail fast with kUnavailable. Per-cluster order: calls issued from one thread
// leave in order on one HTTP/2 connection, but each is its own stream, so a caller that needs
// strict order for one resource waits for the callback before sending the next update (the
// dispatcher does: one in-flight event per resource).
//
// Connectivity: a gRPC channel connects only when asked. After its peer goes away (a Maestro
// restart) or after the client idle timeout it drops to IDLE and stays there until the next
// call; a caller that publishes only while connected() (the dispatcher's outbox) would then wait
// for ever. A watcher thread therefore asks an IDLE channel to connect, so the channel is always
// READY or on its way back, connected() is true exactly while it is READY, and each return to
// READY after a loss counts as a reconnect (mmi_transport_reconnects_total{client="publisher"}).
//
// Credentials: the token comes from `token` or `tokenFile` (re-read every minute and after a
// refusal). A call Maestro refuses for our credentials (internal::ClassifyRefusal) fails with
// kUnauthenticated / kPermissionDenied (kUnavailable for a failed TLS handshake), is counted in
// mmi_transport_auth_failures_total{client="publisher"} and logged at error level once until a
// call succeeds again (internal::RefusalLog).
//
// Threads: gRPC's own (completions), "grpc-pub-cb" (callbacks), "grpc-pub-conn" (the watcher,
// network channels only). Thread-safe.
class GrpcPublisher final : public Publisher {
 public:
  // kNetwork: connected() follows the channel's connectivity state (READY), which the watcher
  // keeps from resting in IDLE. kInProcess (a
  // grpc::Server::InProcessChannel, tests only): such a channel has no connectivity state and
  // is connected from Start() to Stop().
  enum class ChannelKind { kNetwork, kInProcess };

  // `channel` is shared with the GrpcSubscriber of the same source (factory.h); shared_ptr is
  // gRPC's own ownership model for channels.
  GrpcPublisher(GrpcSettings settings, std::shared_ptr<grpc::Channel> channel, Clock& clock,
                prometheus::Registry& registry, ChannelKind kind = ChannelKind::kNetwork);
  ~GrpcPublisher() override;

  absl::Status Start() override;
  void Publish(cloudevents::Event event, PublishCallback done) override;
  void Stop() override;
  bool connected() const override;
  // settings.max_in_flight: Maestro has no flow control of its own (see GrpcSettings).
  size_t max_in_flight() const override;

 private:
  struct Call;

  // Records the outcome and hands `call`'s callback to callbacks_ (the caller frees the call).
  void Finish(Call& call, absl::Status status);
  // The "grpc-pub-conn" thread: until Stop(), wakes an IDLE channel and mirrors READY into
  // ready_, the connected gauge and the reconnect counter. On each entry into
  // TRANSIENT_FAILURE it probes the channel (ProbeFailure), so a refused TLS handshake is
  // counted and logged even while nothing is published.
  void WatchConnectivity();
  // One Publish of an event Maestro cannot store, on a failing channel; records a refusal.
  void ProbeFailure();

  const GrpcSettings settings_;
  std::shared_ptr<grpc::Channel> channel_;
  const ChannelKind kind_;
  Clock& clock_;
  TransportMetrics metrics_;
  internal::BearerToken token_;
  internal::RefusalLog refusals_;
  internal::SerialExecutor callbacks_{"grpc-pub-cb"};
  std::unique_ptr<io::cloudevents::v1::CloudEventService::Stub> stub_;

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::set<Call*> calls_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> running_{false};  // started and not stopped
  std::atomic<bool> ready_{false};    // kNetwork: the channel was READY when last looked at
  std::thread watcher_;
};

}  // namespace mmi::transport
