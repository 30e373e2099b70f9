// An io.cloudevents.v1.CloudEventService for gRPC transport tests: it records Publish calls,
// answers them with scripted statuses, and lets the test push events, heartbeats and stream
// resets to Subscribe streams. It is a test double of the protocol (§4), NOT Maestro: it stores
// nothing and knows no consumers. It serves in process, or on a loopback TCP port where it can be
// stopped and started again on the same port (a Maestro restart as a client sees it: connections
// refused, then a new server).
#pragma once

#include <grpcpp/server.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/cloudevent.grpc.pb.h"

namespace mmi::transport::testing {

// Thread-safe.
class FakeCloudEventService final {
 public:
  struct PublishCall {
    io::cloudevents::v1::CloudEvent event;
    std::string authorization;  // the `authorization` metadata, "" when absent
  };
  struct SubscribeCall {
    io::cloudevents::v1::SubscriptionRequest request;
    std::string authorization;
  };

  enum class Listen { kInProcessOnly, kLoopbackTcp };
  // TLS on the loopback port, as Maestro's source server serves it.
  struct ServerTls {
    std::string cert_pem;  // the server's certificate (for 127.0.0.1)
    std::string key_pem;
    // When set, the TLS secrets of every connection are appended here in the NSS key log
    // format, which tells the protocol version (TLS 1.3 lines name traffic secrets, TLS 1.2
    // lines are CLIENT_RANDOM).
    std::string key_log_file;
  };

  // Starts the server (max message sizes: 64 MiB). kInProcessOnly: clients use
  // InProcessChannel(). kLoopbackTcp: also on 127.0.0.1 at a free port (address()).
  explicit FakeCloudEventService(Listen listen = Listen::kInProcessOnly);
  // On 127.0.0.1 at a free port, over TLS.
  explicit FakeCloudEventService(ServerTls tls);
  ~FakeCloudEventService();
  FakeCloudEventService(const FakeCloudEventService&) = delete;
  FakeCloudEventService& operator=(const FakeCloudEventService&) = delete;

  std::shared_ptr<grpc::Channel> InProcessChannel(const grpc::ChannelArguments& args);
  // "127.0.0.1:<port>" (kLoopbackTcp only); stays the same across StopServing/StartServing.
  std::string address() const;

  // Test thread only. kLoopbackTcp: shuts the server down (open streams end, connections close; new
  // ones are refused) / serves again on the same port. Recorded calls are kept.
  void StopServing();
  void StartServing();

  // Calls without `authorization: Bearer <token>` fail with UNAUTHENTICATED, as Maestro's
  // token authentication does. "" (the default) accepts any call.
  void RequireBearerToken(std::string token);
  // The next Publish calls fail with these statuses, in order (then OK).
  void FailNextPublish(grpc::Status status);
  // Whether Subscribe sends the `subscription-id` header first (default true), as newer Maestro
  // servers do (spec §4.5). The pinned real server (tests/peers/maestro) sends none: its headers
  // come with the first message, a heartbeat within --heartbeat-check-interval (10 s) at the
  // latest, so the stream counts as established only then (maestro_smoke_test).
  void SetSendSubscriptionId(bool send);

  // To every open Subscribe stream.
  void Send(const io::cloudevents::v1::CloudEvent& event);
  void SendHeartbeat();
  // Ends every open Subscribe stream with `status`.
  void EndStreams(grpc::Status status);

  std::vector<PublishCall> publishes() const;
  std::vector<SubscribeCall> subscribes() const;
  int open_streams() const;

  grpc::Status Publish(grpc::ServerContext* context,
                       const io::cloudevents::v1::PublishRequest* request);
  grpc::Status Subscribe(grpc::ServerContext* context,
                         const io::cloudevents::v1::SubscriptionRequest* request,
                         grpc::ServerWriter<io::cloudevents::v1::CloudEvent>* writer);

 private:
  class Handler;  // the registered gRPC service: one per server, forwards here
  struct Stream {
    std::deque<std::variant<io::cloudevents::v1::CloudEvent, grpc::Status>> outbox;
  };

  mutable absl::Mutex mu_;
  std::deque<grpc::Status> scripted_ ABSL_GUARDED_BY(mu_);
  bool send_subscription_id_ ABSL_GUARDED_BY(mu_) = true;
  std::string required_token_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<PublishCall> publishes_ ABSL_GUARDED_BY(mu_);
  std::vector<SubscribeCall> subscribes_ ABSL_GUARDED_BY(mu_);
  std::vector<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  int heartbeat_seq_ ABSL_GUARDED_BY(mu_) = 0;
  const Listen listen_;
  const std::optional<ServerTls> tls_;
  int port_ = 0;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace mmi::transport::testing
