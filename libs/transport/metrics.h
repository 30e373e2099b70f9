// The metrics every transport exports, declared in one struct built from an injected registry
// (STYLE.md §8). Label values come from closed sets only; never ids, names or topics.
//
//   mmi_events_published_total{transport,result}        result: ok, unavailable,
//       deadline_exceeded, resource_exhausted, invalid_argument, failed_precondition,
//       unknown_consumer, not_found, already_exists, other
//   mmi_publish_duration_seconds{transport}             Publish() call to callback
//   mmi_transport_connected{transport,client}           1 while connected; client: publisher,
//                                                       subscriber (they are separate
//                                                       connections on MQTT and Kafka)
//   mmi_events_received_total{transport,type}           type: status, spec_resync,
//                                                       status_resync, other
//   mmi_transport_messages_rejected_total{transport,reason}  reason: malformed, oversize
//   mmi_transport_reconnects_total{transport,client}    successful re-connections
//   mmi_transport_auth_failures_total{transport,client} connections or calls the broker/server
//                                                       refused for our credentials (TLS
//                                                       handshake, certificate, token, RBAC)
//   mmi_transport_publish_held{transport}               events a publisher holds back until
//                                                       the broker's in-flight window has room
//                                                       (MQTT Receive Maximum); 0 elsewhere
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/maestro_events.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace mmi::transport {

enum class ClientRole { kPublisher, kSubscriber };

enum class RejectReason { kMalformed, kOversize };
std::string_view RejectReasonName(RejectReason reason);

// The `result` label for a publish outcome.
std::string_view PublishResultName(const absl::Status& status);

// Thread-safe (prometheus-cpp metrics are atomic). Building two of them on one registry with the
// same labels shares the series (the registry merges families).
class TransportMetrics {
 public:
  TransportMetrics(prometheus::Registry& registry, std::string_view transport, ClientRole role);

  void RecordPublish(const absl::Status& status, std::chrono::steady_clock::duration elapsed);
  void SetConnected(bool connected);
  void RecordReceived(cloudevents::ReceivedKind kind);
  void RecordRejected(RejectReason reason);
  void RecordReconnect();
  void RecordAuthFailure();
  void SetPublishHeld(size_t held);

 private:
  prometheus::Family<prometheus::Counter>& published_;
  std::string transport_;
  prometheus::Histogram& publish_duration_;
  prometheus::Gauge& connected_;
  std::array<prometheus::Counter*, 4> received_{};
  std::array<prometheus::Counter*, 2> rejected_{};
  prometheus::Counter& reconnects_;
  prometheus::Counter& auth_failures_;
  prometheus::Gauge& publish_held_;
};

}  // namespace mmi::transport
