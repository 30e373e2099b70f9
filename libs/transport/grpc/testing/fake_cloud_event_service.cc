#include "libs/transport/grpc/testing/fake_cloud_event_service.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/grpc_codec.h"
#include "libs/transport/grpc/grpc_channel.h"

namespace mmi::transport::testing {
namespace {

std::string Authorization(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

}  // namespace

class FakeCloudEventService::Handler final
    : public io::cloudevents::v1::CloudEventService::Service {
 public:
  explicit Handler(FakeCloudEventService& owner) : owner_(owner) {}

  grpc::Status Publish(grpc::ServerContext* context,
                       const io::cloudevents::v1::PublishRequest* request,
                       google::protobuf::Empty* /*response*/) override {
    return owner_.Publish(context, request);
  }
  grpc::Status Subscribe(grpc::ServerContext* context,
                         const io::cloudevents::v1::SubscriptionRequest* request,
                         grpc::ServerWriter<io::cloudevents::v1::CloudEvent>* writer) override {
    return owner_.Subscribe(context, request, writer);
  }

 private:
  FakeCloudEventService& owner_;
};

FakeCloudEventService::FakeCloudEventService(Listen listen) : listen_(listen) { StartServing(); }

FakeCloudEventService::FakeCloudEventService(ServerTls tls)
    : listen_(Listen::kLoopbackTcp), tls_(std::move(tls)) {
  StartServing();
}

void FakeCloudEventService::RequireBearerToken(std::string token) {
  absl::MutexLock lock(&mu_);
  required_token_ = std::move(token);
}

FakeCloudEventService::~FakeCloudEventService() { StopServing(); }

void FakeCloudEventService::StartServing() {
  if (server_ != nullptr) {
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = false;
  }
  // A gRPC service object belongs to one server for life: a restart registers a new one.
  handler_ = std::make_unique<Handler>(*this);
  grpc::ServerBuilder builder;
  builder.RegisterService(handler_.get());
  builder.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  builder.SetMaxSendMessageSize(64 * 1024 * 1024);
  if (listen_ == Listen::kLoopbackTcp) {
    std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
    if (tls_.has_value()) {
      auto provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
          std::vector<grpc::experimental::IdentityKeyCertPair>{{tls_->key_pem, tls_->cert_pem}});
      grpc::experimental::TlsServerCredentialsOptions options(provider);
      options.watch_identity_key_cert_pairs();
      options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
      if (!tls_->key_log_file.empty()) {
        options.set_tls_session_key_log_file_path(tls_->key_log_file);
      }
      credentials = grpc::experimental::TlsServerCredentials(options);
    }
    // Port 0 the first time (a free one), then the same port again.
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port_), credentials,
                             port_ == 0 ? &port_ : nullptr);
  }
  PinGrpcCallbackCompletionQueue();  // before this callback-API server takes its reference
  server_ = builder.BuildAndStart();
  // The port of a server shut down a moment ago can linger: retry for a few seconds.
  for (int attempt = 0; server_ == nullptr && attempt < 25; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server_ = builder.BuildAndStart();
  }
  GPR_ASSERT(server_ != nullptr);  // the test cannot go on without its server
}

void FakeCloudEventService::StopServing() {
  if (server_ == nullptr) {
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
  handler_.reset();
}

std::string FakeCloudEventService::address() const { return absl::StrCat("127.0.0.1:", port_); }

std::shared_ptr<grpc::Channel> FakeCloudEventService::InProcessChannel(
    const grpc::ChannelArguments& args) {
  return server_->InProcessChannel(args);
}

void FakeCloudEventService::FailNextPublish(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  scripted_.push_back(std::move(status));
}

void FakeCloudEventService::SetSendSubscriptionId(bool send) {
  absl::MutexLock lock(&mu_);
  send_subscription_id_ = send;
}

void FakeCloudEventService::Send(const io::cloudevents::v1::CloudEvent& event) {
  absl::MutexLock lock(&mu_);
  for (Stream* stream : streams_) {
    stream->outbox.emplace_back(event);
  }
}

void FakeCloudEventService::SendHeartbeat() {
  int seq = 0;
  {
    absl::MutexLock lock(&mu_);
    seq = ++heartbeat_seq_;
  }
  Send(cloudevents::MakeHeartbeat(absl::StrCat("heartbeat-", seq)));
}

void FakeCloudEventService::EndStreams(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  for (Stream* stream : streams_) {
    stream->outbox.emplace_back(status);
  }
}

std::vector<FakeCloudEventService::PublishCall> FakeCloudEventService::publishes() const {
  absl::MutexLock lock(&mu_);
  return publishes_;
}

std::vector<FakeCloudEventService::SubscribeCall> FakeCloudEventService::subscribes() const {
  absl::MutexLock lock(&mu_);
  return subscribes_;
}

int FakeCloudEventService::open_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

grpc::Status FakeCloudEventService::Publish(grpc::ServerContext* context,
                                            const io::cloudevents::v1::PublishRequest* request) {
  absl::MutexLock lock(&mu_);
  if (!required_token_.empty() && Authorization(*context) != "Bearer " + required_token_) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
  }
  publishes_.push_back(PublishCall{request->event(), Authorization(*context)});
  if (!scripted_.empty()) {
    grpc::Status status = scripted_.front();
    scripted_.pop_front();
    return status;
  }
  return grpc::Status::OK;
}

grpc::Status FakeCloudEventService::Subscribe(
    grpc::ServerContext* context, const io::cloudevents::v1::SubscriptionRequest* request,
    grpc::ServerWriter<io::cloudevents::v1::CloudEvent>* writer) {
  Stream stream;
  {
    absl::MutexLock lock(&mu_);
    subscribes_.push_back(SubscribeCall{*request, Authorization(*context)});
    if (!required_token_.empty() && Authorization(*context) != "Bearer " + required_token_) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
    }
    if (send_subscription_id_) {
      context->AddInitialMetadata("subscription-id", absl::StrCat("sub-", subscribes_.size()));
    }
  }
  {
    // Registered before the client can see the stream as established, so nothing sent after
    // that is lost.
    absl::MutexLock lock(&mu_);
    streams_.push_back(&stream);
  }
  writer->SendInitialMetadata();
  grpc::Status result = grpc::Status::OK;
  while (true) {
    std::optional<std::variant<io::cloudevents::v1::CloudEvent, grpc::Status>> next;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, &stream]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shutting_down_ || !stream.outbox.empty();
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(20));
      if (shutting_down_) {
        break;
      }
      if (!stream.outbox.empty()) {
        next = std::move(stream.outbox.front());
        stream.outbox.pop_front();
      }
    }
    if (context->IsCancelled()) {
      result = grpc::Status::CANCELLED;
      break;
    }
    if (!next.has_value()) {
      continue;
    }
    if (auto* status = std::get_if<grpc::Status>(&*next)) {
      result = *status;
      break;
    }
    if (!writer->Write(std::get<io::cloudevents::v1::CloudEvent>(*next))) {
      break;
    }
  }
  absl::MutexLock lock(&mu_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), &stream), streams_.end());
  return result;
}

}  // namespace mmi::transport::testing
