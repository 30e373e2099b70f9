// A stand-in for the *agent* side of Maestro's gRPC broker (maestro-protocol.md §4.7, port 8091)
// for tests of agent-side clients (tools/fleet-sim). It listens on a loopback TCP port and, as
// the broker does:
//   - Subscribe: `cluster_name` is required (INVALID_ARGUMENT "missing cluster name"),
//     `data_type` must parse as a data type (INVALID_ARGUMENT); the `subscription-id` header
//     (a fresh UUID) is sent before anything else (§4.5); optional heartbeats (§4.6); a stream
//     then carries the spec events the test hands to its cluster.
//   - Publish: an undecodable event, a type that is neither `status.*` nor `spec.resync_request`,
//     or a data type other than manifestbundles is INVALID_ARGUMENT; a status event whose
//     `originalsource` is not `maestro` or that names no cluster is FAILED_PRECONDITION with a
//     JSON-encoded error message; everything else is recorded and answered with Empty.
// It is a test double of the protocol, NOT Maestro: it stores no resources, relays nothing to
// sources and answers no spec resync by itself (the test does, with SendToCluster).
//
// Thread-safe. Uses gRPC's callback API, so thousands of open streams need no thread each.
#pragma once

#include <grpcpp/server.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/event.h"
#include "proto/cloudevent.grpc.pb.h"

namespace mmi::transport::testing {

struct FakeAgentBrokerSettings {
  // A heartbeat on every open stream this often; 0 = none.
  std::chrono::milliseconds heartbeat_interval{0};
};

class FakeAgentBroker final : public io::cloudevents::v1::CloudEventService::CallbackService {
 public:
  explicit FakeAgentBroker(FakeAgentBrokerSettings settings = {});
  ~FakeAgentBroker() override;
  FakeAgentBroker(const FakeAgentBroker&) = delete;
  FakeAgentBroker& operator=(const FakeAgentBroker&) = delete;

  // Listens on 127.0.0.1 at a free port. kInternal when the server cannot start.
  absl::Status Start();
  // `127.0.0.1:<port>`, valid after Start().
  std::string address() const;

  // Queues `event` on every open stream of `cluster`; returns how many streams it went to.
  int SendToCluster(const std::string& cluster, const io::cloudevents::v1::CloudEvent& event);
  // Ends the open streams of `cluster` ("" = every stream) with `status`.
  void EndStreams(const std::string& cluster, const grpc::Status& status);
  // Whether Subscribe sends the `subscription-id` header first (default true).
  void SetSendSubscriptionId(bool send);
  // The next `count` Publish calls fail with UNAVAILABLE.
  void FailNextPublishes(int count);

  int open_streams() const;
  // Clusters with at least one open stream.
  std::vector<std::string> subscribed_clusters() const;
  // Subscribe calls accepted so far (re-subscriptions included).
  int subscribes_accepted() const;
  // Subscribe calls refused (no cluster name, bad data type).
  int subscribes_refused() const;
  // Publishes accepted so far, decoded, in arrival order.
  std::vector<cloudevents::Event> published() const;
  int published_count() const;
  // Publishes refused (by validation or FailNextPublishes).
  int publishes_refused() const;

  // CallbackService.
  grpc::ServerUnaryReactor* Publish(grpc::CallbackServerContext* context,
                                    const io::cloudevents::v1::PublishRequest* request,
                                    google::protobuf::Empty* response) override;
  grpc::ServerWriteReactor<io::cloudevents::v1::CloudEvent>* Subscribe(
      grpc::CallbackServerContext* context,
      const io::cloudevents::v1::SubscriptionRequest* request) override;

 private:
  class Stream;

  grpc::Status CheckPublish(const io::cloudevents::v1::PublishRequest& request,
                            cloudevents::Event* decoded) const;
  void Forget(Stream* stream);
  void HeartbeatLoop();

  const FakeAgentBrokerSettings settings_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool send_subscription_id_ ABSL_GUARDED_BY(mu_) = true;
  int fail_publishes_ ABSL_GUARDED_BY(mu_) = 0;
  std::multimap<std::string, Stream*> streams_ ABSL_GUARDED_BY(mu_);
  int subscribes_accepted_ ABSL_GUARDED_BY(mu_) = 0;
  int subscribes_refused_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<cloudevents::Event> published_ ABSL_GUARDED_BY(mu_);
  int publishes_refused_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread heartbeat_;
};

}  // namespace mmi::transport::testing
