// UUIDs: the deterministic resource ID OCM's Go work client derives for a ManifestWork
// (../shared/spec/maestro-protocol.md §6.8: UUIDv5, ISO OID namespace, name =
// "<source>-manifestworks.work.open-cluster-management.io-<consumer>-<work name>"), generic
// UUIDv5, and random UUIDv4 for CloudEvent `id`s. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mmi::cloudevents {

using Uuid = std::array<std::uint8_t, 16>;

// 6ba7b812-9dad-11d1-80b4-00c04fd430c8 (RFC 4122 name space for ISO OIDs).
inline constexpr Uuid kOidNamespace = {0x6b, 0xa7, 0xb8, 0x12, 0x9d, 0xad, 0x11, 0xd1,
                                       0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
inline constexpr std::string_view kManifestWorksResource =
    "manifestworks.work.open-cluster-management.io";

// Lowercase 8-4-4-4-12 form.
std::string FormatUuid(const Uuid& uuid);
// Accepts the 8-4-4-4-12 form in either case; kInvalidArgument otherwise.
absl::StatusOr<Uuid> ParseUuid(std::string_view text);

// Name-based UUID, version 5 (SHA-1 via OpenSSL), RFC 4122 variant.
Uuid UuidV5(const Uuid& name_space, std::string_view name);

// The `resourceid` (= ManifestWork metadata.uid = Maestro resource ID) of a work.
std::string WorkResourceId(std::string_view source_id, std::string_view consumer_name,
                           std::string_view work_name);

// A fresh random UUID (version 4) from OpenSSL's CSPRNG, formatted.
std::string NewUuidV4();

}  // namespace mmi::cloudevents
