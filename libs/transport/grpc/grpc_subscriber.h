// Subscriber over Maestro's gRPC source API (maestro-protocol.md §4.5-§4.9): one Subscribe
// server stream.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/transport/grpc/internal/credentials.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/metrics.h"
#include "libs/transport/settings.h"
#include "libs/transport/subscriber.h"
#include "prometheus/registry.h"
#include "proto/cloudevent.grpc.pb.h"

namespace mmi::transport {

// Opens Subscribe(SubscriptionRequest{source = sourceId, data_type = dataType}) and delivers
// every status event Maestro streams for this source, all clusters, in stream order (one stream,
// so per-cluster order is Maestro's order). Heartbeats (§4.6) are dropped but reset a liveness
// timer: with serverHealthinessTimeout > 0 a silent stream is cancelled and re-opened. When the
// stream ends for any reason it is re-opened after reconnectBackoff (5 s growing to 1 min by
// default, as the Go client, §4.9), and the SubscribedHook runs with resubscribed=true: Maestro
// replays nothing (§8.18), so the service should publish a status resync request (answered on
// this stream) or re-list through REST. The stream counts as established when Maestro's
// `subscription-id` header (§4.5) or the first message arrives. A message over maxReceiveBytes
// breaks the stream (gRPC RESOURCE_EXHAUSTED): it is counted as rejected (oversize) and the
// stream is re-opened. The ack is a no-op: gRPC cannot redeliver.
//
// A stream Maestro refuses for our credentials (internal::ClassifyRefusal: TLS handshake, token,
// certificate, RBAC) is retried the same way, counted in
// mmi_transport_auth_failures_total{client="subscriber"} and logged at error level once until a
// stream is established again; the token file is re-read before the next try.
//
// Threads: "grpc-sub" (blocking reads, handler calls) and "grpc-sub-watch" (liveness).
// Thread-safe.
class GrpcSubscriber final : public Subscriber {
 public:
  // `channel` is shared with the GrpcPublisher of the same source (factory.h). `clock` drives
  // the liveness timer.
  GrpcSubscriber(GrpcSettings settings, std::shared_ptr<grpc::Channel> channel, Clock& clock,
                 prometheus::Registry& registry);
  ~GrpcSubscriber() override;

  absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) override;
  void Stop() override;
  bool connected() const override;

 private:
  void ReadLoop();
  void WatchLoop();
  // Runs one Subscribe stream until it ends; returns how it ended.
  grpc::Status RunStream(bool& established);
  void MarkEstablished();

  const GrpcSettings settings_;
  std::shared_ptr<grpc::Channel> channel_;
  Clock& clock_;
  internal::IntakeLog intake_log_;
  TransportMetrics metrics_;
  internal::BearerToken token_;
  internal::RefusalLog refusals_;
  std::unique_ptr<io::cloudevents::v1::CloudEventService::Stub> stub_;
  EventHandler handler_;           // read thread only after Start()
  SubscribedHook on_subscribed_;   // read thread only after Start()
  bool ever_established_ = false;  // read thread only
  std::thread reader_;
  std::thread watcher_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool established_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* current_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::chrono::steady_clock::time_point last_activity_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::transport
