// Everything the status sink can be configured with, in one struct, with its defaults.
// Sources, weakest first: the defaults below < the YAML config file (--config) < environment
// (secrets and pod identity) < command-line flags. Only status_sink_app.cc reads them.
//
// YAML keys (camelCase) are given in parentheses; README.md has a full example. Validation
// reports every problem with its full field path.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/service/settings.h"
#include "libs/transport/settings.h"
#include "services/status-sink/sink.h"
#include "services/status-sink/writes/writer.h"

namespace mmi::status_sink {

struct StatusSinkSettings {
  std::string log_level = "info";             // (logLevel) debug|info|warn|error
  std::string admin_listen = "0.0.0.0:8080";  // (admin.listenAddress) /metrics /healthz /readyz
  // (kube), (store), (leaderElection): the sections shared with the dispatcher
  // (libs/service/settings.h), with the status sink's defaults: kube.requestTimeout bounds one
  // status PATCH; store.poolSize is also the number of store worker threads.
  service::HubSettings kube{.qps = 100, .burst = 200, .request_timeout = std::chrono::seconds(30)};
  service::StoreSettings store;
  service::LeaderSettings leader{.lease_name = "mmi-status-sink"};
  // (transport) `type: mqtt|grpc|kafka` plus one section per type (libs/transport/settings.h).
  // Its sourceId must be the dispatcher's: status events are addressed to that source.
  transport::TransportSettings transport;
  // (status) intakeCapacity, maxInFlight, maxPending, volatileInterval,
  // ignoreResourceHealthMessages, persistBatch, persistInterval, countsInterval, resyncChunk,
  // maxStatusBytes, maxManifestPayloads, maxManifestStatuses (see sink.h, coalescer.h,
  // status_patch.h for meaning and defaults).
  SinkSettings sink;
  int writers = 16;       // (status.writers) threads issuing hub PATCHes concurrently
  WriterSettings writer;  // (status.fieldManager)
  // (shutdownTimeout) drain budget on SIGTERM; keep below terminationGracePeriodSeconds.
  std::chrono::milliseconds shutdown_timeout{25'000};
};

// Parses the YAML config file text over the defaults. kInvalidArgument naming the field path of
// every bad value and of every unknown key.
absl::StatusOr<StatusSinkSettings> ParseSettingsYaml(std::string_view yaml);

// Applies environment values (`getenv` is injected for tests): MMI_STORE_DSN,
// MMI_TRANSPORT_PASSWORD (MQTT password / Kafka SASL password), MMI_TRANSPORT_TOKEN (gRPC bearer
// token), POD_NAME, POD_NAMESPACE, KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT.
using EnvLookup = service::EnvLookup;
void ApplyEnvironment(StatusSinkSettings& settings, const EnvLookup& env);

// Fills derived defaults (identity, lease namespace, the resync source id) and validates
// everything, reporting each problem by field path.
absl::Status FinalizeSettings(StatusSinkSettings& settings);

// Flags (CLI11) + file + environment, then FinalizeSettings(). `--help` returns kCancelled with
// the help text as message.
absl::StatusOr<StatusSinkSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env);

// One line for the start-up log, secrets redacted.
std::string SettingsSummary(const StatusSinkSettings& settings);

}  // namespace mmi::status_sink
