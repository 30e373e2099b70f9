#include "libs/transport/metrics.h"

#include "libs/common/status_label.h"
#include "libs/transport/errors.h"
#include "prometheus/family.h"

namespace mmi::transport {
namespace {

constexpr std::array<std::string_view, 10> kPublishResults = {"ok",
                                                              "unavailable",
                                                              "deadline_exceeded",
                                                              "resource_exhausted",
                                                              "invalid_argument",
                                                              "failed_precondition",
                                                              "unknown_consumer",
                                                              "not_found",
                                                              "already_exists",
                                                              "other"};

std::string_view RoleName(ClientRole role) {
  return role == ClientRole::kPublisher ? "publisher" : "subscriber";
}

}  // namespace

std::string_view RejectReasonName(RejectReason reason) {
  return reason == RejectReason::kOversize ? "oversize" : "malformed";
}

std::string_view PublishResultName(const absl::Status& status) {
  if (IsUnknownConsumer(status)) {
    return "unknown_consumer";
  }
  return StatusCodeLabel(status.code());
}

TransportMetrics::TransportMetrics(prometheus::Registry& registry, std::string_view transport,
                                   ClientRole role)
    : published_(prometheus::BuildCounter()
                     .Name("mmi_events_published_total")
                     .Help("CloudEvents handed to Publisher::Publish, by outcome")
                     .Register(registry)),
      transport_(transport),
      publish_duration_(
          prometheus::BuildHistogram()
              .Name("mmi_publish_duration_seconds")
              .Help("Time from Publisher::Publish to its callback")
              .Register(registry)
              .Add({{"transport", transport_}},
                   prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})),
      connected_(prometheus::BuildGauge()
                     .Name("mmi_transport_connected")
                     .Help("1 while the transport client is connected to its broker or server")
                     .Register(registry)
                     .Add({{"transport", transport_}, {"client", std::string(RoleName(role))}})),
      reconnects_(prometheus::BuildCounter()
                      .Name("mmi_transport_reconnects_total")
                      .Help("Successful re-connections after a connection loss")
                      .Register(registry)
                      .Add({{"transport", transport_}, {"client", std::string(RoleName(role))}})),
      auth_failures_(
          prometheus::BuildCounter()
              .Name("mmi_transport_auth_failures_total")
              .Help("Connections or calls the broker or server refused for our credentials")
              .Register(registry)
              .Add({{"transport", transport_}, {"client", std::string(RoleName(role))}})),
      publish_held_(prometheus::BuildGauge()
                        .Name("mmi_transport_publish_held")
                        .Help("Events a publisher holds back until the broker's in-flight window "
                              "(MQTT Receive Maximum) has room")
                        .Register(registry)
                        .Add({{"transport", transport_}})) {
  for (std::string_view result : kPublishResults) {
    published_.Add({{"transport", transport_}, {"result", std::string(result)}});
  }
  auto& received = prometheus::BuildCounter()
                       .Name("mmi_events_received_total")
                       .Help("CloudEvents received from agents or Maestro, by kind")
                       .Register(registry);
  for (cloudevents::ReceivedKind kind :
       {cloudevents::ReceivedKind::kStatus, cloudevents::ReceivedKind::kSpecResync,
        cloudevents::ReceivedKind::kStatusResync, cloudevents::ReceivedKind::kOther}) {
    received_[static_cast<size_t>(kind)] = &received.Add(
        {{"transport", transport_}, {"type", std::string(cloudevents::ReceivedKindName(kind))}});
  }
  auto& rejected = prometheus::BuildCounter()
                       .Name("mmi_transport_messages_rejected_total")
                       .Help("Received messages dropped because they are malformed or too large")
                       .Register(registry);
  for (RejectReason reason : {RejectReason::kMalformed, RejectReason::kOversize}) {
    rejected_[static_cast<size_t>(reason)] = &rejected.Add(
        {{"transport", transport_}, {"reason", std::string(RejectReasonName(reason))}});
  }
}

void TransportMetrics::RecordPublish(const absl::Status& status,
                                     std::chrono::steady_clock::duration elapsed) {
  published_.Add({{"transport", transport_}, {"result", std::string(PublishResultName(status))}})
      .Increment();
  publish_duration_.Observe(std::chrono::duration<double>(elapsed).count());
}

void TransportMetrics::SetConnected(bool connected) { connected_.Set(connected ? 1.0 : 0.0); }

void TransportMetrics::RecordReceived(cloudevents::ReceivedKind kind) {
  received_[static_cast<size_t>(kind)]->Increment();
}

void TransportMetrics::RecordRejected(RejectReason reason) {
  rejected_[static_cast<size_t>(reason)]->Increment();
}

void TransportMetrics::RecordReconnect() { reconnects_.Increment(); }

void TransportMetrics::RecordAuthFailure() { auth_failures_.Increment(); }

void TransportMetrics::SetPublishHeld(size_t held) { publish_held_.Set(static_cast<double>(held)); }

}  // namespace mmi::transport
