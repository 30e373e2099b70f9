// CloudEvents JSON format (`application/cloudevents+json`, structured content mode).
//
// Encoding writes compact JSON: core attributes, then `data`, then extensions sorted by name
// (the order Go produces; order has no meaning). `data` is embedded as JSON, byte for byte after
// validation, when `datacontenttype` is absent or JSON (`application/json`, `text/json`,
// `*/*+json`), and as `data_base64` otherwise. Integer extensions are JSON numbers, Timestamps RFC
// 3339 strings, Binary base64 strings.
//
// Decoding accepts any member order, stores JSON `data` as compact JSON (keys sorted, as Go's
// encoding/json writes maps), validates every attribute (names, types, `specversion`
// "1.0", RFC 3339 `time`) and returns kInvalidArgument naming the offending member. Extension
// values must be JSON strings, integral numbers in int32 range, or booleans; an object or array
// (e.g. `metadata` sent as an object) is rejected, as the Go decoder does; `null` means absent.
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"

namespace mmi::cloudevents {

// kInvalidArgument when the event is not encodable: empty id/source/type, `specversion` not
// "1.0", an invalid extension name, invalid UTF-8 in a string, JSON `datacontenttype` with data
// that is not JSON, or a result larger than `limits.max_event_bytes`.
absl::StatusOr<std::string> EncodeStructuredJson(const Event& event,
                                                 const CodecLimits& limits = {});

absl::StatusOr<Event> DecodeStructuredJson(std::string_view json, const CodecLimits& limits = {});

// True if `content_type` names a JSON media type (data is embedded as JSON, not base64).
bool IsJsonContentType(std::string_view content_type);
// True if `content_type` selects structured mode (`application/cloudevents...`).
bool IsStructuredContentType(std::string_view content_type);

}  // namespace mmi::cloudevents
