// An in-process io.cloudevents.v1.CloudEventService for gRPC transport tests: it records
// Publish calls, answers them with scripted statuses, and lets the test push events, heartbeats
// and stream resets to Subscribe streams. It is a test double of the protocol (§4), NOT Maestro:
// it stores nothing and knows no consumers.
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

// Thread-safe. Runs without a listening port: clients use InProcessChannel().
class FakeCloudEventService final : public io::cloudevents::v1::CloudEventService::Service {
 public:
  struct PublishCall {
    io::cloudevents::v1::CloudEvent event;
    std::string authorization;  // the `authorization` metadata, "" when absent
  };
  struct SubscribeCall {
    io::cloudevents::v1::SubscriptionRequest request;
    std::string authorization;
  };

  // Starts the in-process server (max message sizes: 64 MiB).
  FakeCloudEventService();
  ~FakeCloudEventService() override;

  std::shared_ptr<grpc::Channel> InProcessChannel(const grpc::ChannelArguments& args);

  // The next Publish calls fail with these statuses, in order (then OK).
  void FailNextPublish(grpc::Status status);
  // Whether Subscribe sends the `subscription-id` header first, as Maestro does (default true).
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
                       const io::cloudevents::v1::PublishRequest* request,
                       google::protobuf::Empty* response) override;
  grpc::Status Subscribe(grpc::ServerContext* context,
                         const io::cloudevents::v1::SubscriptionRequest* request,
                         grpc::ServerWriter<io::cloudevents::v1::CloudEvent>* writer) override;

 private:
  struct Stream {
    std::deque<std::variant<io::cloudevents::v1::CloudEvent, grpc::Status>> outbox;
  };

  mutable absl::Mutex mu_;
  std::deque<grpc::Status> scripted_ ABSL_GUARDED_BY(mu_);
  bool send_subscription_id_ ABSL_GUARDED_BY(mu_) = true;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<PublishCall> publishes_ ABSL_GUARDED_BY(mu_);
  std::vector<SubscribeCall> subscribes_ ABSL_GUARDED_BY(mu_);
  std::vector<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  int heartbeat_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace mmi::transport::testing
