#include "libs/transport/grpc/testing/fake_agent_broker.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "libs/cloudevents/grpc_codec.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/transport/grpc/grpc_channel.h"

namespace mmi::transport::testing {
namespace {

using io::cloudevents::v1::CloudEvent;

// Maestro answers a handling failure with FAILED_PRECONDITION and the error JSON-encoded (§4.7).
grpc::Status Precondition(std::string_view message) {
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      absl::StrCat("{\"reason\":\"", absl::StrReplaceAll(std::string(message), {{"\"", "'"}}),
                   "\"}"));
}

}  // namespace

// One Subscribe stream. Writes go out one at a time from `outbox_`; Finish waits for a write in
// progress. Deleted in OnDone, after the broker has forgotten it.
class FakeAgentBroker::Stream final : public grpc::ServerWriteReactor<CloudEvent> {
 public:
  Stream(FakeAgentBroker* broker, std::string cluster)
      : broker_(broker), cluster_(std::move(cluster)) {}

  const std::string& cluster() const { return cluster_; }

  void Push(CloudEvent event) {
    {
      absl::MutexLock lock(&mu_);
      if (finishing_) {
        return;
      }
      outbox_.push_back(std::move(event));
    }
    WriteNext();
  }

  void End(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (finishing_) {
        return;
      }
      finishing_ = true;
      final_status_ = std::move(status);
      if (writing_) {
        return;  // OnWriteDone finishes
      }
      finished_ = true;
    }
    Finish(final_status_);
  }

  void OnWriteDone(bool ok) override {
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok && !finishing_) {
        finishing_ = true;  // the client is gone
        final_status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
      }
      if (finishing_ && !finished_) {
        finished_ = true;
        finish = true;
      }
    }
    if (finish) {
      Finish(final_status_);
      return;
    }
    WriteNext();
  }

  void OnCancel() override { End(grpc::Status::CANCELLED); }

  void OnDone() override {
    broker_->Forget(this);
    delete this;
  }

 private:
  void WriteNext() {
    {
      absl::MutexLock lock(&mu_);
      if (writing_ || finishing_ || outbox_.empty()) {
        return;
      }
      writing_ = true;
      current_ = std::move(outbox_.front());
      outbox_.pop_front();
    }
    StartWrite(&current_);
  }

  FakeAgentBroker* const broker_;
  const std::string cluster_;
  absl::Mutex mu_;
  std::deque<CloudEvent> outbox_ ABSL_GUARDED_BY(mu_);
  CloudEvent current_;  // the message being written; touched only by the writer of the moment
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_;  // set once under mu_ before Finish reads it
};

FakeAgentBroker::FakeAgentBroker(FakeAgentBrokerSettings settings) : settings_(settings) {}

FakeAgentBroker::~FakeAgentBroker() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (heartbeat_.joinable()) {
    heartbeat_.join();
  }
  if (server_ != nullptr) {
    // Cancels the open streams (OnCancel -> Finish -> OnDone); Wait returns when every callback
    // has run.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
  }
}

absl::Status FakeAgentBroker::Start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(this);
  // As Maestro (§4.8): 4 MiB in, unlimited streams per connection.
  builder.SetMaxReceiveMessageSize(4 * 1024 * 1024);
  builder.SetMaxSendMessageSize(64 * 1024 * 1024);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 1 << 30);
  PinGrpcCallbackCompletionQueue();  // before this callback-API server takes its reference
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::InternalError("FakeAgentBroker: cannot listen on 127.0.0.1");
  }
  if (settings_.heartbeat_interval.count() > 0) {
    heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  }
  return absl::OkStatus();
}

std::string FakeAgentBroker::address() const { return absl::StrCat("127.0.0.1:", port_); }

int FakeAgentBroker::SendToCluster(const std::string& cluster, const CloudEvent& event) {
  absl::MutexLock lock(&mu_);
  int sent = 0;
  auto [begin, end] = streams_.equal_range(cluster);
  for (auto it = begin; it != end; ++it) {
    it->second->Push(event);
    ++sent;
  }
  return sent;
}

void FakeAgentBroker::EndStreams(const std::string& cluster, const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  for (auto& [name, stream] : streams_) {
    if (cluster.empty() || name == cluster) {
      stream->End(status);
    }
  }
}

void FakeAgentBroker::SetSendSubscriptionId(bool send) {
  absl::MutexLock lock(&mu_);
  send_subscription_id_ = send;
}

void FakeAgentBroker::FailNextPublishes(int count) {
  absl::MutexLock lock(&mu_);
  fail_publishes_ = count;
}

int FakeAgentBroker::open_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

std::vector<std::string> FakeAgentBroker::subscribed_clusters() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, stream] : streams_) {
    if (out.empty() || out.back() != name) {
      out.push_back(name);
    }
  }
  return out;
}

int FakeAgentBroker::subscribes_accepted() const {
  absl::MutexLock lock(&mu_);
  return subscribes_accepted_;
}

int FakeAgentBroker::subscribes_refused() const {
  absl::MutexLock lock(&mu_);
  return subscribes_refused_;
}

std::vector<cloudevents::Event> FakeAgentBroker::published() const {
  absl::MutexLock lock(&mu_);
  return published_;
}

int FakeAgentBroker::published_count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(published_.size());
}

int FakeAgentBroker::publishes_refused() const {
  absl::MutexLock lock(&mu_);
  return publishes_refused_;
}

grpc::Status FakeAgentBroker::CheckPublish(const io::cloudevents::v1::PublishRequest& request,
                                           cloudevents::Event* decoded) const {
  absl::StatusOr<cloudevents::Event> event = cloudevents::DecodeGrpc(request.event());
  if (!event.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("failed to decode cloudevent: ", event.status().message()));
  }
  absl::StatusOr<cloudevents::EventType> type = event->ParsedType();
  if (!type.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("failed to parse cloud event type ", event->type));
  }
  if (type->data_type.ToString() != cloudevents::kManifestBundlesDataType) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("unsupported data type ", type->data_type.ToString()));
  }
  const bool spec_resync = type->subresource == cloudevents::Subresource::kSpec &&
                           type->action == cloudevents::Action::kResyncRequest;
  if (!spec_resync && type->subresource != cloudevents::Subresource::kStatus) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("unsupported event type ", event->type));
  }
  absl::StatusOr<std::string> cluster = event->ClusterName();
  if (!cluster.ok() || cluster->empty()) {
    return Precondition("event names no cluster (clustername)");
  }
  if (!spec_resync) {
    absl::StatusOr<std::string> original = event->OriginalSource();
    if (!original.ok() || *original != "maestro") {
      return Precondition("status event must carry originalsource maestro");
    }
  }
  *decoded = *std::move(event);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* FakeAgentBroker::Publish(
    grpc::CallbackServerContext* context, const io::cloudevents::v1::PublishRequest* request,
    google::protobuf::Empty* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  cloudevents::Event decoded;
  grpc::Status status = CheckPublish(*request, &decoded);
  {
    absl::MutexLock lock(&mu_);
    if (status.ok() && fail_publishes_ > 0) {
      --fail_publishes_;
      status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted failure");
    }
    if (status.ok()) {
      published_.push_back(std::move(decoded));
    } else {
      ++publishes_refused_;
    }
  }
  reactor->Finish(status);
  return reactor;
}

grpc::ServerWriteReactor<CloudEvent>* FakeAgentBroker::Subscribe(
    grpc::CallbackServerContext* context, const io::cloudevents::v1::SubscriptionRequest* request) {
  auto* stream = new Stream(this, request->cluster_name());
  grpc::Status refusal = grpc::Status::OK;
  if (request->cluster_name().empty()) {
    refusal = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "missing cluster name");
  } else if (!cloudevents::DataType::Parse(request->data_type()).ok()) {
    refusal = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                           absl::StrCat("invalid data type ", request->data_type()));
  }
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    refusal = grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
  }
  if (!refusal.ok()) {
    ++subscribes_refused_;
    stream->End(refusal);  // not registered: OnDone's Forget finds nothing
    return stream;
  }
  ++subscribes_accepted_;
  if (send_subscription_id_) {
    context->AddInitialMetadata("subscription-id", cloudevents::NewUuidV4());
  }
  // Registered before the client can see the header, so nothing sent after it is lost.
  streams_.emplace(request->cluster_name(), stream);
  stream->StartSendInitialMetadata();
  return stream;
}

void FakeAgentBroker::Forget(Stream* stream) {
  absl::MutexLock lock(&mu_);
  auto [begin, end] = streams_.equal_range(stream->cluster());
  for (auto it = begin; it != end; ++it) {
    if (it->second == stream) {
      streams_.erase(it);
      return;
    }
  }
}

void FakeAgentBroker::HeartbeatLoop() {
  int seq = 0;
  absl::MutexLock lock(&mu_);
  while (true) {
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping),
                             absl::FromChrono(settings_.heartbeat_interval))) {
      return;
    }
    const CloudEvent heartbeat = cloudevents::MakeHeartbeat(absl::StrCat("heartbeat-", ++seq));
    for (auto& [name, stream] : streams_) {
      stream->Push(heartbeat);
    }
  }
}

}  // namespace mmi::transport::testing
