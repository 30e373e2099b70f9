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

// Keeps gRPC's process-wide callback completion queue alive until the process exits (works around
// a shutdown race of gRPC 1.51; see grpc_channel.cc). Idempotent; MakeGrpcChannel calls it. Call it
// before creating a callback-API server or a channel by other means.
void PinGrpcCallbackCompletionQueue();

}  // namespace mmi::transport
