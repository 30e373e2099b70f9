#include "libs/transport/grpc/grpc_publisher.h"

#include <grpcpp/client_context.h>
#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/empty.pb.h"
#include "libs/cloudevents/grpc_codec.h"
#include "libs/transport/grpc/internal/status_mapping.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.grpc");
  return logger;
}

// How long the watcher waits for a state change before looking again (bounds Stop()).
constexpr auto kWatchSlice = std::chrono::milliseconds(250);
// Deadline of the probe that asks a failing channel why it fails.
constexpr auto kProbeTimeout = std::chrono::seconds(1);

std::string_view StateName(grpc_connectivity_state state) {
  switch (state) {
    case GRPC_CHANNEL_IDLE:
      return "idle";
    case GRPC_CHANNEL_CONNECTING:
      return "connecting";
    case GRPC_CHANNEL_READY:
      return "ready";
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
      return "transient_failure";
    case GRPC_CHANNEL_SHUTDOWN:
      return "shutdown";
  }
  return "unknown";
}

}  // namespace

struct GrpcPublisher::Call {
  grpc::ClientContext context;
  io::cloudevents::v1::PublishRequest request;
  google::protobuf::Empty response;
  PublishCallback done;
  std::chrono::steady_clock::time_point started;
  std::string event_id;
  std::string cluster;
};

GrpcPublisher::GrpcPublisher(GrpcSettings settings, std::shared_ptr<grpc::Channel> channel,
                             Clock& clock, prometheus::Registry& registry, ChannelKind kind)
    : settings_(std::move(settings)),
      channel_(std::move(channel)),
      kind_(kind),
      clock_(clock),
      metrics_(registry, "grpc", ClientRole::kPublisher),
      token_(settings_, clock_),
      refusals_(Log(), metrics_, "publisher") {}

GrpcPublisher::~GrpcPublisher() { Stop(); }

absl::Status GrpcPublisher::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("GrpcPublisher::Start called twice or after Stop");
  }
  if (absl::Status s = ValidateGrpcSettings(settings_); !s.ok()) {
    return s;
  }
  if (absl::Status s = token_.Load(); !s.ok()) {
    return s;
  }
  stub_ = io::cloudevents::v1::CloudEventService::NewStub(channel_);
  started_ = true;
  running_ = true;
  if (kind_ == ChannelKind::kNetwork) {
    channel_->GetState(/*try_to_connect=*/true);  // start connecting before the first event
    watcher_ = std::thread([this] { WatchConnectivity(); });
    pthread_setname_np(watcher_.native_handle(), "grpc-pub-conn");
  }
  Log().Info("gRPC publisher started",
             {{"summary", RedactedSummary(TransportSettings(settings_))}});
  return absl::OkStatus();
}

void GrpcPublisher::Publish(cloudevents::Event event, PublishCallback done) {
  auto call = std::make_unique<Call>();
  call->done = std::move(done);
  call->started = clock_.MonotonicNow();
  call->event_id = event.id;
  if (absl::StatusOr<std::string> cluster = event.ClusterName(); cluster.ok()) {
    call->cluster = *cluster;
  }
  absl::Status early;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopped_) {
      early =
          absl::FailedPreconditionError("GrpcPublisher: Publish() before Start() or after Stop()");
    }
  }
  if (early.ok() && event.source != settings_.source_id) {
    early = absl::InvalidArgumentError(
        absl::StrCat("event ", event.id, " has source \"", event.source,
                     "\" but this transport publishes as source id \"", settings_.source_id, "\""));
  }
  if (early.ok()) {
    absl::StatusOr<io::cloudevents::v1::CloudEvent> encoded =
        cloudevents::EncodeGrpc(event, settings_.limits);
    if (encoded.ok()) {
      *call->request.mutable_event() = *std::move(encoded);
    } else {
      early = absl::InvalidArgumentError(
          absl::StrCat("cannot encode event ", event.id,
                       " for gRPC: ", std::string(encoded.status().message())));
    }
  }
  if (!early.ok()) {
    Finish(*call, std::move(early));
    return;
  }
  call->context.set_deadline(std::chrono::system_clock::now() + settings_.publish_timeout);
  call->context.set_wait_for_ready(false);
  token_.Apply(call->context);
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      Finish(*call, absl::FailedPreconditionError("GrpcPublisher: stopped"));
      return;
    }
    calls_.insert(call.get());
  }
  Call* raw = call.release();  // owned by the completion below
  stub_->async()->Publish(&raw->context, &raw->request, &raw->response,
                          [this, raw](grpc::Status status) {
                            // The callback is handed to callbacks_ while the call still counts as
                            // in flight, so a Stop() waiting for calls_ to empty returns only after
                            // every callback has run.
                            std::unique_ptr<Call> owned(raw);
                            if (const internal::Refusal refusal =
                                    internal::ClassifyRefusal(status, settings_.tls.enabled);
                                refusal != internal::Refusal::kNone) {
                              refusals_.Refused(refusal, status);
                              token_.Invalidate();
                            } else if (status.ok()) {
                              refusals_.Accepted();
                            }
                            Finish(*owned, internal::FromPublishStatus(status, owned->cluster));
                            absl::MutexLock lock(&mu_);
                            calls_.erase(raw);
                          });
}

void GrpcPublisher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    running_ = false;
    if (started_) {
      // Let in-flight calls finish (each has its own deadline), then cancel the stragglers.
      auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_.empty(); };
      mu_.AwaitWithTimeout(absl::Condition(&drained),
                           absl::FromChrono(std::min<std::chrono::milliseconds>(
                               settings_.publish_timeout, std::chrono::seconds(10))));
      for (Call* call : calls_) {
        call->context.TryCancel();
      }
      mu_.Await(absl::Condition(&drained));
    }
  }
  if (watcher_.joinable()) {
    watcher_.join();  // sees running_ == false within one slice
  }
  ready_ = false;
  metrics_.SetConnected(false);
  callbacks_.Stop();
  Log().Info("gRPC publisher stopped");
}

bool GrpcPublisher::connected() const {
  if (!running_) {
    return false;
  }
  return kind_ == ChannelKind::kInProcess || ready_.load();
}

void GrpcPublisher::ProbeFailure() {
  // A channel in TRANSIENT_FAILURE fails a call at once, without sending it, with the reason of
  // its last failed connection. The event is one Maestro could never store (its type does not
  // parse), so should the channel be READY by then it is refused after authentication and
  // authorization, which is what we want to know anyway.
  io::cloudevents::v1::PublishRequest request;
  io::cloudevents::v1::CloudEvent& probe = *request.mutable_event();
  probe.set_id("mmi-connectivity-probe");
  probe.set_source(settings_.source_id);
  probe.set_spec_version("1.0");
  probe.set_type("io.mmi.connectivity-probe");
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kProbeTimeout);
  context.set_wait_for_ready(false);
  token_.Apply(context);
  google::protobuf::Empty response;
  const grpc::Status status = stub_->Publish(&context, request, &response);
  if (const internal::Refusal refusal = internal::ClassifyRefusal(status, settings_.tls.enabled);
      refusal != internal::Refusal::kNone) {
    refusals_.Refused(refusal, status);
    token_.Invalidate();
  }
}

size_t GrpcPublisher::max_in_flight() const { return settings_.max_in_flight; }

void GrpcPublisher::WatchConnectivity() {
  bool ever_ready = false;
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/false);
  grpc_connectivity_state previous = GRPC_CHANNEL_IDLE;
  while (running_.load()) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE && previous != GRPC_CHANNEL_TRANSIENT_FAILURE) {
      // The outbox publishes only while connected(), so without this a refused TLS handshake
      // would never reach a call and never be counted or logged.
      ProbeFailure();
    } else if (state == GRPC_CHANNEL_READY && previous != GRPC_CHANNEL_READY &&
               settings_.token_file.empty() && settings_.bearer_token.empty()) {
      // The handshake went through and the channel holds no token that Maestro could refuse.
      refusals_.Accepted();
    }
    previous = state;
    if (state == GRPC_CHANNEL_IDLE) {
      // Idle after a lost connection or the client idle timeout: nothing else would wake it.
      state = channel_->GetState(/*try_to_connect=*/true);
    }
    const bool ready = state == GRPC_CHANNEL_READY;
    if (ready_.load() != ready) {
      // The metrics first: whoever sees connected() change finds them up to date.
      metrics_.SetConnected(ready);
      if (ready) {
        if (ever_ready) {
          metrics_.RecordReconnect();
        }
        Log().Info("gRPC channel ready", {{"url", settings_.url}, {"reconnected", ever_ready}});
        ever_ready = true;
      } else {
        Log().Warn("gRPC channel not ready; publishing waits while it reconnects",
                   {{"url", settings_.url}, {"state", std::string(StateName(state))}});
      }
      ready_.store(ready);
    }
    channel_->WaitForStateChange(state, std::chrono::system_clock::now() + kWatchSlice);
    state = channel_->GetState(/*try_to_connect=*/false);
  }
}

void GrpcPublisher::Finish(Call& call, absl::Status status) {
  metrics_.RecordPublish(status, clock_.MonotonicNow() - call.started);
  if (!status.ok()) {
    Log().Debug("publish failed", {{"event_id", call.event_id},
                                   {"cluster", call.cluster},
                                   {"error", std::string(status.message())}});
  }
  callbacks_.Post([done = std::move(call.done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

}  // namespace mmi::transport
