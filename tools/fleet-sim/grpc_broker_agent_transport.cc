#include "tools/fleet-sim/grpc_broker_agent_transport.h"

#include <grpcpp/client_context.h>
#include <pthread.h>

#include <algorithm>
#include <regex>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/cloudevents/grpc_codec.h"
#include "libs/common/log.h"
#include "libs/transport/grpc/grpc_channel.h"

namespace mmi::fleet_sim {
namespace {

using io::cloudevents::v1::CloudEvent;

constexpr auto kLoopInterval = std::chrono::milliseconds(100);
// At most one "streams ended" warning per this interval (thousands can end at once).
constexpr auto kEndedLogInterval = std::chrono::seconds(5);
// Publish calls outstanding at most (as the MQTT transport's pending-publish window): past it a
// Publish fails at once with kUnavailable and the simulator's bounded retry queue holds the event,
// instead of a cold start keeping hundreds of thousands of encoded events in flight.
constexpr std::size_t kMaxPublishesInFlight = 100'000;

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.grpc");
  return logger;
}

// The broker answers bad input with INVALID_ARGUMENT and handling failures with
// FAILED_PRECONDITION (§4.7); everything else is worth another try.
absl::Status FromBrokerStatus(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::InvalidArgumentError(absl::StrCat("grpc broker: ", status.error_message()));
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::FailedPreconditionError(absl::StrCat("grpc broker: ", status.error_message()));
    default:
      return absl::UnavailableError(absl::StrCat("grpc broker: code ",
                                                 static_cast<int>(status.error_code()), ": ",
                                                 status.error_message()));
  }
}

}  // namespace

// One cluster's Subscribe stream (one attempt). Deleted by the transport in OnDone, the last
// reaction gRPC runs for it.
class GrpcBrokerAgentTransport::Stream final : public grpc::ClientReadReactor<CloudEvent> {
 public:
  Stream(GrpcBrokerAgentTransport* owner, std::size_t index, const std::string& cluster,
         const std::string& data_type)
      : owner_(owner), index_(index) {
    request_.set_cluster_name(cluster);
    request_.set_data_type(data_type);
  }

  void Begin(io::cloudevents::v1::CloudEventService::Stub& stub) {
    stub.async()->Subscribe(&context_, &request_, this);
    StartRead(&message_);
    StartCall();
  }
  // Safe before Begin: the call is then cancelled as it starts.
  void Cancel() { context_.TryCancel(); }

  void OnReadInitialMetadataDone(bool ok) override {
    if (!ok) {
      return;  // the stream failed; OnDone follows
    }
    if (context_.GetServerInitialMetadata().count("subscription-id") == 0) {
      missing_subscription_id_ = true;
      context_.TryCancel();
      return;
    }
    subscribed_ = true;
    owner_->OnSubscribed(index_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      return;  // the stream ended; OnDone follows
    }
    owner_->OnEvent(index_, message_);
    StartRead(&message_);
  }

  void OnDone(const grpc::Status& status) override {
    const grpc::Status outcome =
        missing_subscription_id_ ? grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                                "the broker sent no subscription-id header (§4.5)")
                                 : status;
    owner_->OnStreamDone(this, index_, subscribed_, outcome);  // deletes *this
  }

 private:
  GrpcBrokerAgentTransport* const owner_;
  const std::size_t index_;
  grpc::ClientContext context_;
  io::cloudevents::v1::SubscriptionRequest request_;
  CloudEvent message_;
  // Written by the initial-metadata reaction, read by OnDone, which gRPC runs after every other
  // reaction has finished.
  bool subscribed_ = false;
  bool missing_subscription_id_ = false;
};

// One unary Publish in flight.
class GrpcBrokerAgentTransport::PublishCall {
 public:
  PublishCall(CloudEvent message, PublishDone done, std::chrono::milliseconds timeout)
      : done_(std::move(done)) {
    *request_.mutable_event() = std::move(message);
    context_.set_deadline(std::chrono::system_clock::now() + timeout);
  }
  grpc::ClientContext& context() { return context_; }
  io::cloudevents::v1::PublishRequest& request() { return request_; }
  google::protobuf::Empty& response() { return response_; }
  PublishDone TakeDone() { return std::move(done_); }

 private:
  grpc::ClientContext context_;
  io::cloudevents::v1::PublishRequest request_;
  google::protobuf::Empty response_;
  PublishDone done_;
};

absl::Status ValidateGrpcBrokerAgentSettings(const GrpcBrokerAgentSettings& settings) {
  static const std::regex kHostPort("^(dns:///)?[^:/ ]+:[0-9]+$");
  if (!std::regex_match(settings.grpc.url, kHostPort)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "grpc.url: must be host:port of Maestro's gRPC broker, got \"", settings.grpc.url, "\""));
  }
  if (!cloudevents::DataType::Parse(settings.grpc.data_type).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("grpc.dataType: not a data type: \"", settings.grpc.data_type, "\""));
  }
  if (settings.clusters.empty()) {
    return absl::InvalidArgumentError("clusters: at least one cluster is required");
  }
  std::unordered_set<std::string> seen;
  for (const std::string& cluster : settings.clusters) {
    if (cluster.empty()) {
      return absl::InvalidArgumentError("clusters: empty cluster name");
    }
    if (!seen.insert(cluster).second) {
      return absl::InvalidArgumentError(absl::StrCat("clusters: \"", cluster, "\" twice"));
    }
  }
  if (settings.grpc.keep_alive_time.count() != 0 &&
      settings.grpc.keep_alive_time < std::chrono::seconds(5)) {
    return absl::InvalidArgumentError(
        "grpc.keepAliveTime: 0 or at least 5s (Maestro disconnects clients that ping more "
        "often, §4.8)");
  }
  if (!settings.grpc.tls.client_cert_file.empty() && settings.grpc.tls.client_key_file.empty()) {
    return absl::InvalidArgumentError("grpc.tls.clientKeyFile: required with clientCertFile");
  }
  return absl::OkStatus();
}

GrpcBrokerAgentTransport::GrpcBrokerAgentTransport(GrpcBrokerAgentSettings settings)
    : settings_(std::move(settings)) {}

GrpcBrokerAgentTransport::~GrpcBrokerAgentTransport() { Stop(); }

absl::Status GrpcBrokerAgentTransport::Start(ReceiveHandler on_receive,
                                             SubscribedHandler on_subscribed) {
  if (absl::Status status = ValidateGrpcBrokerAgentSettings(settings_); !status.ok()) {
    return status;
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      transport::MakeGrpcChannel(settings_.grpc);
  if (!channel.ok()) {
    return channel.status();
  }
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) {
    return absl::FailedPreconditionError("GrpcBrokerAgentTransport: Start twice or after Stop");
  }
  started_ = true;
  channel_ = *std::move(channel);
  stub_ = io::cloudevents::v1::CloudEventService::NewStub(channel_);
  on_receive_ = std::move(on_receive);
  on_subscribed_ = std::move(on_subscribed);
  clusters_.reserve(settings_.clusters.size());
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < settings_.clusters.size(); ++i) {
    clusters_.push_back(
        ClusterState{Backoff(settings_.grpc.reconnect_backoff, i + 1), false, false, now});
  }
  thread_ = std::thread([this] { Loop(); });
  Log().Info("gRPC broker agent transport started",
             {{"url", settings_.grpc.url},
              {"clusters", static_cast<int64_t>(settings_.clusters.size())},
              {"data_type", settings_.grpc.data_type}});
  return absl::OkStatus();
}

void GrpcBrokerAgentTransport::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    for (Stream* stream : streams_) {
      stream->Cancel();
    }
    for (PublishCall* call : publishes_) {
      call->context().TryCancel();
    }
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  // Every stream's OnDone and every publish completion removes itself; wait for the last.
  absl::MutexLock lock(&mu_);
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return streams_.empty() && publishes_.empty();
  };
  mu_.Await(absl::Condition(&drained));
  subscribed_ = 0;
}

bool GrpcBrokerAgentTransport::connected() const {
  return subscribed_.load() == static_cast<int>(settings_.clusters.size());
}

std::size_t GrpcBrokerAgentTransport::SubscribedClusters(std::size_t /*total*/) const {
  return static_cast<std::size_t>(std::max(0, subscribed_.load()));
}

GrpcBrokerAgentTransport::Stream* GrpcBrokerAgentTransport::Open(std::size_t index) {
  auto* stream = new Stream(this, index, settings_.clusters[index], settings_.grpc.data_type);
  streams_.insert(stream);
  clusters_[index].open = true;
  return stream;
}

void GrpcBrokerAgentTransport::Loop() {
  pthread_setname_np(pthread_self(), "fleet-grpc");
  auto last_ended_log = std::chrono::steady_clock::time_point{};
  while (true) {
    std::vector<Stream*> opened;
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::FromChrono(kLoopInterval))) {
        return;
      }
      const auto now = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < clusters_.size(); ++i) {
        if (!clusters_[i].open && clusters_[i].retry_at <= now) {
          opened.push_back(Open(i));
        }
      }
      if (ended_since_log_ > 0 && now - last_ended_log >= kEndedLogInterval) {
        last_ended_log = now;
        Log().Warn("Subscribe streams ended; each is re-opened after its backoff",
                   {{"streams", ended_since_log_}, {"last_error", last_end_error_}});
        ended_since_log_ = 0;
      }
      // Handlers run under mu_, so none runs after Stop() returns; they only enqueue.
      if (on_subscribed_) {
        if (!newly_subscribed_.empty()) {
          on_subscribed_(Subscription{false, std::exchange(newly_subscribed_, {})});
        }
        if (!resubscribed_.empty()) {
          on_subscribed_(Subscription{true, std::exchange(resubscribed_, {})});
        }
      }
    }
    // Begun outside mu_: a stream Stop() cancelled in between is cancelled as it starts.
    for (Stream* stream : opened) {
      stream->Begin(*stub_);
    }
    if (!opened.empty()) {
      Log().Debug("opened Subscribe streams", {{"streams", static_cast<int64_t>(opened.size())}});
    }
  }
}

void GrpcBrokerAgentTransport::OnSubscribed(std::size_t index) {
  absl::MutexLock lock(&mu_);
  ++subscribed_;  // OnStreamDone takes it back
  if (stopping_) {
    return;
  }
  ClusterState& state = clusters_[index];
  state.backoff.Reset();
  (state.ever_subscribed ? resubscribed_ : newly_subscribed_).push_back(settings_.clusters[index]);
  state.ever_subscribed = true;
}

void GrpcBrokerAgentTransport::OnEvent(std::size_t index, const CloudEvent& message) {
  if (cloudevents::IsHeartbeat(message)) {
    ++heartbeats_;
    return;
  }
  cloudevents::CodecLimits limits = settings_.grpc.limits;
  limits.max_event_bytes = std::max(limits.max_event_bytes, settings_.grpc.max_receive_bytes);
  ReceivedEvent received{settings_.clusters[index], cloudevents::DecodeGrpc(message, limits)};
  absl::MutexLock lock(&mu_);
  if (!stopping_ && on_receive_) {
    on_receive_(std::move(received));
  }
}

void GrpcBrokerAgentTransport::OnStreamDone(Stream* stream, std::size_t index, bool was_subscribed,
                                            const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    streams_.erase(stream);
    ClusterState& state = clusters_[index];
    state.open = false;
    if (was_subscribed) {
      --subscribed_;
    }
    if (!stopping_) {
      const std::chrono::milliseconds delay = state.backoff.Next();
      state.retry_at = std::chrono::steady_clock::now() + delay;
      ++ended_since_log_;
      last_end_error_ = absl::StrCat("code ", static_cast<int>(status.error_code()), ": ",
                                     status.error_message());
    }
  }
  delete stream;
}

void GrpcBrokerAgentTransport::Publish(cloudevents::Event event, PublishDone done) {
  absl::StatusOr<std::string> cluster = event.ClusterName();
  if (!cluster.ok() || cluster->empty()) {
    std::move(done)(absl::InvalidArgumentError(
        "grpc broker: the event names no cluster (clustername); cannot be routed"));
    return;
  }
  absl::StatusOr<CloudEvent> message = cloudevents::EncodeGrpc(event, settings_.grpc.limits);
  if (!message.ok()) {
    std::move(done)(message.status());
    return;
  }
  PublishCall* call = nullptr;
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopping_) {
      refused = absl::UnavailableError("grpc broker: transport not running");
    } else if (publishes_.size() >= kMaxPublishesInFlight) {
      refused = absl::UnavailableError(
          absl::StrCat("grpc broker: ", kMaxPublishesInFlight, " publishes already in flight"));
    } else {
      call = new PublishCall(*std::move(message), std::move(done), settings_.grpc.publish_timeout);
      publishes_.insert(call);
    }
  }
  if (call == nullptr) {
    std::move(done)(std::move(refused));
    return;
  }
  stub_->async()->Publish(&call->context(), &call->request(), &call->response(),
                          [this, call](grpc::Status status) {
                            // `done` runs before the call is forgotten, so Stop() (which waits
                            // for every call to be forgotten) never returns before it.
                            if (PublishDone finished = call->TakeDone()) {
                              std::move(finished)(FromBrokerStatus(status));
                            }
                            {
                              absl::MutexLock lock(&mu_);
                              publishes_.erase(call);
                            }
                            delete call;
                          });
}

}  // namespace mmi::fleet_sim
