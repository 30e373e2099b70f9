// Error helpers shared by every transport and by their callers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace mmi::transport {

// kFailedPrecondition carrying a marker payload: the target cluster is not registered as a
// Maestro consumer (Maestro's gRPC source server answers UNKNOWN with a foreign-key error,
// maestro-protocol.md §7.4). The fix is to create the consumer through Maestro's REST API
// (grpc/maestro_consumer_registry.h) and publish again.
absl::Status UnknownConsumerError(std::string_view cluster, std::string_view detail);

// True for a status built by UnknownConsumerError().
bool IsUnknownConsumer(const absl::Status& status);

// The cluster named in an UnknownConsumerError(), if any.
std::optional<std::string> UnknownConsumerCluster(const absl::Status& status);

// True for the codes STYLE.md §4 says to retry with backoff: kUnavailable, kDeadlineExceeded,
// kResourceExhausted.
bool IsRetryable(const absl::Status& status);

}  // namespace mmi::transport
