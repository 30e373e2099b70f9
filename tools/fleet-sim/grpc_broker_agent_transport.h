// The agent side of Maestro's gRPC broker (../shared/spec/maestro-protocol.md §4.7, the broker
// on port 8091 that Maestro runs with `--message-broker-type=grpc`) for many simulated clusters
// over ONE gRPC channel.
//
// A real agent opens one `Subscribe` stream with `cluster_name` = its cluster and `data_type` =
// manifestbundles; this transport opens one such stream per simulated cluster, all multiplexed
// on one HTTP/2 connection (Maestro allows 2^32-1 concurrent streams, §4.8). A stream counts as
// subscribed when the broker's `subscription-id` header arrives (§4.5; the Go SDK v2 client fails
// a subscription without it, and so does this one). Heartbeats (§4.6) are recognised by type
// before decoding and counted (heartbeats()); nothing uses them for liveness, the channel's
// keepalive does that. Each received spec event is handed on with the
// stream's cluster as `topic_cluster`. Agent events (statuses, spec resync requests) go out as
// unary `Publish` calls in binary mode (§4.3), deadline `publish_timeout`.
//
// A stream that ends (server restart, GOAWAY, an error status) is re-opened for its cluster
// alone after a per-cluster backoff; the SubscribedHandler then names the clusters whose streams
// became active (batched every 100 ms), so only they send their spec resync requests (§6.5).
// connected() is true while every cluster's stream is subscribed (readiness); publishing needs
// only the channel, and fails at once with kUnavailable past 100,000 publishes in flight.
//
// Threads: "fleet-grpc" re-opens streams when their backoff expires and hands out subscription
// batches; gRPC's callback threads run stream reads and publish completions. Thread-safe.
#pragma once

#include <grpcpp/channel.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/transport/settings.h"
#include "proto/cloudevent.grpc.pb.h"
#include "tools/fleet-sim/agent_transport.h"

namespace mmi::fleet_sim {

struct GrpcBrokerAgentSettings {
  // The channel: `url` (required, `host:port` of the broker), `tls`, `data_type`,
  // `publish_timeout`, `keep_alive_time` / `keep_alive_timeout`, `max_receive_bytes`, `limits`
  // and `reconnect_backoff` (per stream) as for the source-side client; `source_id` and
  // `bearer_token` are not used (the broker ignores `source` and checks no token, §4.7).
  transport::GrpcSettings grpc;
  // One Subscribe stream per name (required, non-empty, no duplicates).
  std::vector<std::string> clusters;
};

// kInvalidArgument naming the field (`grpc.url`, `clusters`, ...) when unusable.
absl::Status ValidateGrpcBrokerAgentSettings(const GrpcBrokerAgentSettings& settings);

class GrpcBrokerAgentTransport final : public AgentTransport {
 public:
  explicit GrpcBrokerAgentTransport(GrpcBrokerAgentSettings settings);
  ~GrpcBrokerAgentTransport() override;
  GrpcBrokerAgentTransport(const GrpcBrokerAgentTransport&) = delete;
  GrpcBrokerAgentTransport& operator=(const GrpcBrokerAgentTransport&) = delete;

  absl::Status Start(ReceiveHandler on_receive, SubscribedHandler on_subscribed) override;
  void Publish(cloudevents::Event event, PublishDone done) override;
  void Stop() override;
  bool connected() const override;
  std::size_t SubscribedClusters(std::size_t total) const override;

  // Streams currently subscribed (0 .. clusters.size()).
  int subscribed_streams() const { return subscribed_.load(); }
  // Heartbeats received across all streams.
  std::int64_t heartbeats() const { return heartbeats_.load(); }

 private:
  class Stream;
  class PublishCall;

  struct ClusterState {
    Backoff backoff;
    bool ever_subscribed = false;
    bool open = false;  // a Stream object exists for it
    std::chrono::steady_clock::time_point retry_at{};
  };

  void Loop();
  // Registers a new stream for cluster `index` (not open); the caller begins it outside mu_.
  Stream* Open(std::size_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stream callbacks.
  void OnSubscribed(std::size_t index);
  void OnEvent(std::size_t index, const io::cloudevents::v1::CloudEvent& message);
  void OnStreamDone(Stream* stream, std::size_t index, bool was_subscribed,
                    const grpc::Status& status);

  const GrpcBrokerAgentSettings settings_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<io::cloudevents::v1::CloudEventService::Stub> stub_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  ReceiveHandler on_receive_ ABSL_GUARDED_BY(mu_);
  SubscribedHandler on_subscribed_ ABSL_GUARDED_BY(mu_);
  std::vector<ClusterState> clusters_ ABSL_GUARDED_BY(mu_);
  std::set<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  std::set<PublishCall*> publishes_ ABSL_GUARDED_BY(mu_);
  // Clusters whose stream became active since the last batch: first time / again.
  std::vector<std::string> newly_subscribed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> resubscribed_ ABSL_GUARDED_BY(mu_);
  // Streams that ended since the last warning, and the last reason (logged at most every 5 s).
  int ended_since_log_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_end_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;

  std::atomic<int> subscribed_{0};
  std::atomic<std::int64_t> heartbeats_{0};
};

}  // namespace mmi::fleet_sim
