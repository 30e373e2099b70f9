// Maestro's gRPC errors mapped to the STYLE.md status codes (maestro-protocol.md §4.7, §7.4).
#pragma once

#include <grpcpp/support/status.h>

#include <string_view>

#include "absl/status/status.h"

namespace mmi::transport::internal {

// The outcome of a Publish of an event for `cluster`. Maestro's source server reports every
// handling failure as UNKNOWN with a text message, so the text decides:
//   foreign-key violation on the consumer (fk_resources_consumers / SQLSTATE 23503) ->
//     UnknownConsumerError (kFailedPrecondition, errors.h);
//   `maestro-7` (not found) -> kNotFound; `maestro-6` (conflict, e.g. a stale resourceversion)
//   -> kAlreadyExists; `maestro-8`/`-17`/`-21` (validation, malformed, bad request) ->
//   kInvalidArgument; its authentication and authorization refusals (credentials.h) ->
//   kUnauthenticated / kPermissionDenied; any other UNKNOWN -> kUnavailable (retryable, as the Go
//   client treats it).
// Other gRPC codes keep their meaning (UNIMPLEMENTED -> kFailedPrecondition: wrong port).
absl::Status FromPublishStatus(const grpc::Status& status, std::string_view cluster);

// The same mapping for non-Publish calls (no unknown-consumer detection).
absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view context);

}  // namespace mmi::transport::internal
