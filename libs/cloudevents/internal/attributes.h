// Pieces shared by the codecs: event validation before encoding, and the binary content mode
// of MQTT and Kafka (attributes as `ce-<name>` string properties/headers).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"

namespace mmi::cloudevents::internal {

using StringPairs = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view kBinaryPrefix = "ce-";

// kInvalidArgument unless the event can go on the wire: non-empty id, source (except for a
// heartbeat) and type, specversion "1.0", valid extension names, UTF-8 strings.
absl::Status ValidateForEncoding(const Event& event);

// kInvalidArgument when `datacontenttype` starts with `application/cloudevents`: in binary mode
// (MQTT, Kafka, gRPC) that content type makes readers parse the payload as a structured event.
absl::Status CheckBinaryModeContentType(const std::optional<std::string>& data_content_type);

// `ce-specversion`, `ce-id`, `ce-source`, `ce-type`, `ce-time`, then `ce-<extension>` in name
// order, each with its canonical string value. `datacontenttype` is not included.
StringPairs BinaryAttributes(const Event& event);

// Builds an Event from binary-mode attributes. `attributes` holds (name, value) pairs whose names
// may have any case; names without the `ce-` prefix are skipped. `content_type` is the
// transport's content type (MQTT Content Type property / Kafka `content-type` header). `kind`
// names the carrier in messages ("MQTT user property", "Kafka header").
absl::StatusOr<Event> DecodeBinaryAttributes(const StringPairs& attributes,
                                             const std::optional<std::string>& content_type,
                                             std::string_view payload, std::string_view kind);

std::string AsciiLower(std::string_view text);
bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix);

absl::Status SizeLimitError(std::string_view what, std::size_t size, const CodecLimits& limits);

}  // namespace mmi::cloudevents::internal
