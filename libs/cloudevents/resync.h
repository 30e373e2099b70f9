// Resync payloads (../shared/spec/maestro-protocol.md §2.4, §6.5, §6.6).
//
//   spec resync_request (agent -> source):
//   {"resourceVersions":[{"resourceID":..,"resourceVersion":..}]} status resync_request (source ->
//   agent/Maestro): {"statusHashes":[{"resourceID":..,"statusHash":..}]}
//
// Note the upper-case `ID`. An empty list means "everything". The payload must be present and be
// a JSON object; decoding an absent/empty body is kInvalidArgument. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"

namespace mmi::cloudevents {

struct ResourceVersion {
  std::string resource_id;
  std::int64_t resource_version = 0;
  friend bool operator==(const ResourceVersion&, const ResourceVersion&) = default;
};

struct ResourceVersionList {
  std::vector<ResourceVersion> resource_versions;
  friend bool operator==(const ResourceVersionList&, const ResourceVersionList&) = default;
};

struct ResourceStatusHash {
  std::string resource_id;
  std::string status_hash;
  friend bool operator==(const ResourceStatusHash&, const ResourceStatusHash&) = default;
};

struct ResourceStatusHashList {
  std::vector<ResourceStatusHash> status_hashes;
  friend bool operator==(const ResourceStatusHashList&, const ResourceStatusHashList&) = default;
};

// Compact JSON for Event::data. kInvalidArgument on invalid UTF-8 in an ID or hash.
absl::StatusOr<std::string> EncodeResourceVersionList(const ResourceVersionList& list);
absl::StatusOr<std::string> EncodeResourceStatusHashList(const ResourceStatusHashList& list);

absl::StatusOr<ResourceVersionList> DecodeResourceVersionList(std::string_view data,
                                                              const CodecLimits& limits = {});
absl::StatusOr<ResourceStatusHashList> DecodeResourceStatusHashList(std::string_view data,
                                                                    const CodecLimits& limits = {});

}  // namespace mmi::cloudevents
