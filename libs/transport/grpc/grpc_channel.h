// The single gRPC channel to Maestro's source server that GrpcPublisher and GrpcSubscriber share
// (maestro-protocol.md §6.6: Publish and Subscribe must reach the same replica).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>

#include "absl/status/statusor.h"
#include "libs/transport/settings.h"

namespace mmi::transport {

// Channel arguments from the settings: receive limit (maxReceiveBytes, above 4 MiB, §8.20),
// keep-alive pings only while a call is active and never more often than keepAliveTime (>= 5 s,
// §4.8), and the channel's own reconnect backoff aligned with reconnectBackoff.
grpc::ChannelArguments GrpcChannelArguments(const GrpcSettings& settings);

// A lazily-connecting channel to `url`: plaintext, or TLS verifying the server against caFile
// (system roots when empty) with an optional client certificate (mTLS). Reads the PEM files now:
// kFailedPrecondition naming the field when one cannot be read.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeGrpcChannel(const GrpcSettings& settings);

// Sends gRPC core's own log (plain text on stderr, ERROR and up by default) through the log
// facade at debug level, component "grpc.core", instead. Without it a refused TLS 1.3 client
// certificate writes three or four lines ("tlsv1 alert unknown ca", "Decryption error:
// TSI_DATA_CORRUPTED", ...) on every retry; our clients log such an outage once themselves
// (internal/credentials.h) and the debug level still shows gRPC's detail. Process-wide and
// idempotent; MakeGrpcChannel calls it.
void RouteGrpcCoreLogs();

// Keeps gRPC's process-wide callback completion queue alive until the process exits (works around
// a shutdown race of gRPC 1.51; see grpc_channel.cc). Idempotent; MakeGrpcChannel calls it. Call it
// before creating a callback-API server or a channel by other means.
void PinGrpcCallbackCompletionQueue();

}  // namespace mmi::transport
