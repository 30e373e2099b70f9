// Registers clusters as Maestro consumers through Maestro's REST API (maestro-protocol.md §7.2,
// §7.3), so that gRPC publishes for them stop failing with an unknown-consumer error (§7.4).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/transport/grpc/maestro_rest.h"

namespace mmi::transport {

// Blocking (one HTTP request per call): use it from a worker thread, never from a loop thread.
// Thread-safe when the sender is (the libcurl sender is: one easy handle per request).
class MaestroConsumerRegistry {
 public:
  explicit MaestroConsumerRegistry(MaestroRestSettings settings);
  MaestroConsumerRegistry(MaestroRestSettings settings, RestSender sender);

  // Creates consumer `name` with `labels`; OK when it was created (201) or already exists (409,
  // or the pinned server's 500 "duplicated key not allowed"), so it is idempotent. kInvalidArgument
  // when `name` is not a DNS-1123 label (Maestro would answer 500 for it); kUnavailable for 5xx and
  // transport failures (retry); kFailedPrecondition for other 4xx (message includes Maestro's
  // `reason`).
  absl::Status EnsureConsumer(std::string_view name,
                              const std::map<std::string, std::string>& labels = {});

  // Whether a consumer with this name exists (GET /consumers?search=name='<name>').
  absl::StatusOr<bool> ConsumerExists(std::string_view name);

 private:
  MaestroRestSettings settings_;
  RestSender sender_;
};

}  // namespace mmi::transport
