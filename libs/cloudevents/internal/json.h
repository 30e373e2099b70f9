// JSON plumbing shared by the codecs and payloads. Never throws; every failure is a Status whose
// message names the JSON path (`data.resourceStatus[0].conditions`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents::internal {

using Json = nlohmann::json;

// Shows untrusted text in an error message: quoted, escaped, cut after 80 bytes.
std::string Quote(std::string_view text);

// True if `text` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Parses `text` after checking its size and nesting depth against `limits`, so the parser can
// neither run out of memory on a huge document nor recurse without bound. `what` names the
// document in messages ("structured CloudEvent", "ManifestBundle data").
absl::StatusOr<Json> ParseJson(std::string_view text, const CodecLimits& limits,
                               std::string_view what);

// Checks that `text` is exactly one JSON value (whitespace around it allowed, no byte order
// mark) within `limits`, without building a document. kInvalidArgument naming `what` otherwise.
absl::Status ValidateJson(std::string_view text, const CodecLimits& limits, std::string_view what);

// Compact JSON the way Go's encoding/json writes it: object keys in byte order (nlohmann
// objects are sorted maps), no whitespace, `<`, `>`, `&`, U+2028 and U+2029 escaped as \u00XX,
// integers in decimal, floats in Go's shortest form. kInvalidArgument on invalid UTF-8 in a
// string, a NaN/infinite number, or nesting deeper than `max_depth`.
absl::Status AppendGoJson(const Json& value, std::string& out, int max_depth = 512);
absl::StatusOr<std::string> GoJson(const Json& value, int max_depth = 512);
// Appends a JSON string literal (Go escaping); kInvalidArgument on invalid UTF-8.
absl::Status AppendJsonString(std::string_view text, std::string& out);

// Path helpers for messages.
std::string MemberPath(std::string_view parent, std::string_view member);
std::string IndexPath(std::string_view parent, std::size_t index);

std::string_view JsonTypeName(const Json& value);

// Typed reads of one member of a JSON object. A member that is absent or `null` counts as
// absent (Go leaves the field at its zero value). A present member of the wrong type is
// kInvalidArgument naming `path.member`.
class ObjectReader {
 public:
  // kInvalidArgument unless `value` is an object.
  static absl::StatusOr<ObjectReader> Make(const Json& value, std::string path);

  const std::string& Path() const { return path_; }
  std::string PathOf(std::string_view member) const { return MemberPath(path_, member); }
  // nullptr when absent or null.
  const Json* Find(std::string_view member) const;

  absl::Status String(std::string_view member, std::string* out) const;
  absl::Status OptionalString(std::string_view member, std::optional<std::string>* out) const;
  absl::Status Int64(std::string_view member, std::int64_t* out) const;
  absl::Status OptionalInt64(std::string_view member, std::optional<std::int64_t>* out) const;
  absl::Status Int32(std::string_view member, std::int32_t* out) const;
  absl::Status Bool(std::string_view member, bool* out) const;
  absl::Status StringList(std::string_view member, std::vector<std::string>* out) const;
  absl::Status StringMap(std::string_view member, std::map<std::string, std::string>* out) const;
  // kInvalidArgument naming the member when it is absent or null.
  absl::Status Require(std::string_view member) const;

 private:
  ObjectReader(const Json* object, std::string path) : object_(object), path_(std::move(path)) {}
  const Json* object_;
  std::string path_;
};

// The int64 value of a JSON number that is an integer (1.0 is not: Go rejects it too).
absl::StatusOr<std::int64_t> JsonInt64(const Json& value, std::string_view path);

// kInvalidArgument unless `value` is an array (null counts as an empty array); returns the
// elements or nullptr for null.
absl::StatusOr<const Json::array_t*> JsonArray(const Json& value, std::string_view path);

}  // namespace mmi::cloudevents::internal
