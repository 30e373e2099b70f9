#include "libs/transport/grpc/grpc_subscriber.h"

#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/grpc_codec.h"
#include "libs/transport/internal/intake.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.grpc");
  return logger;
}

constexpr auto kWatchInterval = std::chrono::milliseconds(100);

}  // namespace

GrpcSubscriber::GrpcSubscriber(GrpcSettings settings, std::shared_ptr<grpc::Channel> channel,
                               Clock& clock, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      channel_(std::move(channel)),
      clock_(clock),
      intake_log_(Log(), clock_),
      metrics_(registry, "grpc", ClientRole::kSubscriber),
      token_(settings_, clock_),
      refusals_(Log(), metrics_, "subscriber") {}

GrpcSubscriber::~GrpcSubscriber() { Stop(); }

absl::Status GrpcSubscriber::Start(EventHandler handler, SubscribedHook on_subscribed) {
  if (!handler) {
    return absl::InvalidArgumentError("GrpcSubscriber::Start: handler must be set");
  }
  if (absl::Status s = ValidateGrpcSettings(settings_); !s.ok()) {
    return s;
  }
  if (absl::Status s = token_.Load(); !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) {
    return absl::FailedPreconditionError("GrpcSubscriber::Start called twice or after Stop");
  }
  started_ = true;
  stub_ = io::cloudevents::v1::CloudEventService::NewStub(channel_);
  handler_ = std::move(handler);
  on_subscribed_ = std::move(on_subscribed);
  metrics_.SetConnected(false);
  reader_ = std::thread([this] { ReadLoop(); });
  pthread_setname_np(reader_.native_handle(), "grpc-sub");
  watcher_ = std::thread([this] { WatchLoop(); });
  pthread_setname_np(watcher_.native_handle(), "grpc-sub-watch");
  Log().Info("gRPC subscriber started", {{"url", settings_.url}, {"source", settings_.source_id}});
  return absl::OkStatus();
}

void GrpcSubscriber::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    if (current_ != nullptr) {
      current_->TryCancel();
    }
  }
  if (reader_.joinable()) {
    reader_.join();
  }
  if (watcher_.joinable()) {
    watcher_.join();
  }
  metrics_.SetConnected(false);
  Log().Info("gRPC subscriber stopped");
}

bool GrpcSubscriber::connected() const {
  absl::MutexLock lock(&mu_);
  return established_ && !stopping_;
}

void GrpcSubscriber::ReadLoop() {
  Backoff backoff(settings_.reconnect_backoff);
  while (true) {
    bool established = false;
    const grpc::Status status = RunStream(established);
    {
      absl::MutexLock lock(&mu_);
      established_ = false;
      if (stopping_) {
        return;
      }
    }
    metrics_.SetConnected(false);
    if (established) {
      backoff.Reset();
    }
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      metrics_.RecordRejected(RejectReason::kOversize);
    }
    const std::chrono::milliseconds delay = backoff.Next();
    const internal::Refusal refusal = internal::ClassifyRefusal(status, settings_.tls.enabled);
    if (refusal != internal::Refusal::kNone) {
      // Logged once per outage by refusals_, not once per try.
      refusals_.Refused(refusal, status);
      token_.Invalidate();
    }
    Log().Log(refusal == internal::Refusal::kNone ? log::Level::kWarn : log::Level::kDebug,
              "gRPC Subscribe stream ended; re-subscribing",
              {{"code", static_cast<int>(status.error_code())},
               {"error", status.error_message()},
               {"retry_in_ms", static_cast<int64_t>(delay.count())}});
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::FromChrono(delay))) {
      return;
    }
  }
}

grpc::Status GrpcSubscriber::RunStream(bool& established) {
  grpc::ClientContext context;
  token_.Apply(context);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "stopping");
    }
    current_ = &context;
    last_activity_ = clock_.MonotonicNow();
  }
  io::cloudevents::v1::SubscriptionRequest request;
  request.set_source(settings_.source_id);
  request.set_data_type(settings_.data_type);
  std::unique_ptr<grpc::ClientReader<io::cloudevents::v1::CloudEvent>> reader =
      stub_->Subscribe(&context, request);
  reader->WaitForInitialMetadata();
  if (context.GetServerInitialMetadata().count("subscription-id") > 0) {
    established = true;
    MarkEstablished();
  }
  cloudevents::CodecLimits limits = settings_.limits;
  limits.max_event_bytes = std::max(limits.max_event_bytes, settings_.max_receive_bytes);
  io::cloudevents::v1::CloudEvent message;
  while (reader->Read(&message)) {
    if (!established) {
      established = true;
      MarkEstablished();
    }
    {
      absl::MutexLock lock(&mu_);
      last_activity_ = clock_.MonotonicNow();
    }
    internal::Intake(
        message.ByteSizeLong(), limits.max_event_bytes,
        [&]() { return cloudevents::DecodeGrpc(message, limits); }, metrics_, intake_log_,
        "subscribe", handler_, [] {});
  }
  grpc::Status status = reader->Finish();
  absl::MutexLock lock(&mu_);
  current_ = nullptr;
  return status;
}

void GrpcSubscriber::MarkEstablished() {
  {
    absl::MutexLock lock(&mu_);
    established_ = true;
    last_activity_ = clock_.MonotonicNow();
  }
  metrics_.SetConnected(true);
  refusals_.Accepted();
  const bool resubscribed = ever_established_;
  ever_established_ = true;
  if (resubscribed) {
    metrics_.RecordReconnect();
  }
  Log().Info("gRPC Subscribe stream established", {{"resubscribed", resubscribed}});
  if (on_subscribed_) {
    on_subscribed_(resubscribed);
  }
}

void GrpcSubscriber::WatchLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::FromChrono(kWatchInterval))) {
      return;
    }
    intake_log_.Flush();  // its own lock; logging under mu_ is fine (no callback)
    if (settings_.heartbeat_timeout.count() > 0 && current_ != nullptr && established_ &&
        clock_.MonotonicNow() - last_activity_ > settings_.heartbeat_timeout) {
      Log().Warn("no event or heartbeat within serverHealthinessTimeout; re-subscribing",
                 {{"timeout_ms", static_cast<int64_t>(settings_.heartbeat_timeout.count())}});
      current_->TryCancel();
      last_activity_ = clock_.MonotonicNow();  // one cancel per silence
    }
  }
}

}  // namespace mmi::transport
