#include "libs/cloudevents/internal/attributes.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/common/status_macros.h"

namespace mmi::cloudevents::internal {
namespace {

absl::Status CheckUtf8(std::string_view what, std::string_view value) {
  if (!IsValidUtf8(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent ", std::string(what), " is not valid UTF-8: ", Quote(value)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) {
    return false;
  }
  return AsciiLower(text.substr(0, prefix.size())) == AsciiLower(prefix);
}

absl::Status SizeLimitError(std::string_view what, std::size_t size, const CodecLimits& limits) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), " of ", size,
                                                 " bytes exceeds the limit of ",
                                                 limits.max_event_bytes, " bytes"));
}

absl::Status ValidateForEncoding(const Event& event) {
  if (event.spec_version != kSpecVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent specversion must be \"1.0\", got ", Quote(event.spec_version)));
  }
  if (event.id.empty()) {
    return absl::InvalidArgumentError("CloudEvent attribute \"id\" is required");
  }
  if (event.type.empty()) {
    return absl::InvalidArgumentError("CloudEvent attribute \"type\" is required");
  }
  if (event.source.empty() && !event.IsHeartbeat()) {
    return absl::InvalidArgumentError("CloudEvent attribute \"source\" is required");
  }
  for (const auto& [what, value] :
       {std::pair<std::string_view, const std::string*>{"id", &event.id},
        {"source", &event.source},
        {"type", &event.type}}) {
    if (auto status = CheckUtf8(what, *value); !status.ok()) {
      return status;
    }
  }
  if (event.data_content_type.has_value()) {
    if (event.data_content_type->empty()) {
      return absl::InvalidArgumentError(
          "CloudEvent attribute \"datacontenttype\" must not be empty when set");
    }
    if (auto status = CheckUtf8("datacontenttype", *event.data_content_type); !status.ok()) {
      return status;
    }
  }
  for (const auto& [name, value] : event.extensions) {
    if (!IsValidExtensionName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid CloudEvent extension name ", Quote(name),
                       ": use only a-z and 0-9, and no core attribute name"));
    }
    if (const auto* text = std::get_if<std::string>(&value)) {
      if (auto status = CheckUtf8(absl::StrCat("extension \"", name, "\""), *text); !status.ok()) {
        return status;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBinaryModeContentType(const std::optional<std::string>& data_content_type) {
  if (data_content_type.has_value() &&
      StartsWithIgnoreCase(*data_content_type, "application/cloudevents")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "datacontenttype ", Quote(*data_content_type),
        " cannot be carried in binary content mode (readers would take the payload for a "
        "structured event)"));
  }
  return absl::OkStatus();
}

StringPairs BinaryAttributes(const Event& event) {
  StringPairs out;
  out.reserve(5 + event.extensions.size());
  out.emplace_back("ce-specversion", event.spec_version);
  out.emplace_back("ce-id", event.id);
  if (!event.source.empty()) {
    out.emplace_back("ce-source", event.source);
  }
  out.emplace_back("ce-type", event.type);
  if (event.time.has_value()) {
    out.emplace_back("ce-time", FormatTimestamp(*event.time));
  }
  for (const auto& [name, value] : event.extensions) {
    out.emplace_back(absl::StrCat("ce-", name), CanonicalString(value));
  }
  return out;
}

namespace {

// One `ce-<attribute>` header (`name` lower-cased) stored in `event`.
absl::Status ApplyBinaryAttribute(const std::string& attribute, const std::string& name,
                                  const std::string& value, const std::string& kind_text,
                                  Event& event) {
  if (attribute == "specversion") {
    if (value != kSpecVersion) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind_text, " ce-specversion must be \"1.0\", got ", Quote(value)));
    }
    event.spec_version = value;
  } else if (attribute == "id") {
    event.id = value;
  } else if (attribute == "source") {
    event.source = value;
  } else if (attribute == "type") {
    event.type = value;
  } else if (attribute == "time") {
    auto time = ParseTimestamp(value);
    if (!time.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind_text, " ce-time: ", std::string(time.status().message())));
    }
    event.time = *time;
  } else if (attribute == "datacontenttype") {
    event.data_content_type = value;
  } else if (IsValidExtensionName(attribute)) {
    event.extensions.emplace(attribute, AttributeValue(value));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        kind_text, " ", Quote(name), " is not a valid CloudEvent attribute name (a-z, 0-9)"));
  }
  return absl::OkStatus();
}

// The attributes every binary-mode event must carry, non-empty (each header appears at most once,
// so an empty field means an absent or empty header).
absl::Status CheckRequiredBinaryAttributes(const Event& event, const std::string& kind_text) {
  if (event.spec_version.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a binary-mode CloudEvent: no ", kind_text, " ce-specversion"));
  }
  if (event.id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent is missing ", kind_text, " ce-id (or it is empty)"));
  }
  if (event.source.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent is missing ", kind_text, " ce-source (or it is empty)"));
  }
  if (event.type.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent is missing ", kind_text, " ce-type (or it is empty)"));
  }
  return absl::OkStatus();
}

// The transport's own content type (MQTT property, Kafka header), which must agree with
// `ce-datacontenttype` when both are present.
absl::Status MergeTransportContentType(const std::optional<std::string>& content_type,
                                       const std::string& kind_text, Event& event) {
  if (!content_type.has_value()) {
    return absl::OkStatus();
  }
  if (!IsValidUtf8(*content_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("content type is not valid UTF-8: ", Quote(*content_type)));
  }
  if (event.data_content_type.has_value() && *event.data_content_type != *content_type) {
    return absl::InvalidArgumentError(
        absl::StrCat("content type ", Quote(*content_type), " contradicts ", kind_text,
                     " ce-datacontenttype ", Quote(*event.data_content_type)));
  }
  if (!content_type->empty()) {
    event.data_content_type = *content_type;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Event> DecodeBinaryAttributes(const StringPairs& attributes,
                                             const std::optional<std::string>& content_type,
                                             std::string_view payload, std::string_view kind) {
  const std::string kind_text(kind);
  Event event;
  event.spec_version.clear();
  std::set<std::string, std::less<>> seen;
  for (const auto& [raw_name, value] : attributes) {
    if (!StartsWithIgnoreCase(raw_name, kBinaryPrefix)) {
      continue;
    }
    const std::string name = AsciiLower(raw_name);
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind_text, " ", Quote(name), " appears more than once"));
    }
    if (!IsValidUtf8(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind_text, " ", Quote(name), " is not valid UTF-8: ", Quote(value)));
    }
    RETURN_IF_ERROR(
        ApplyBinaryAttribute(name.substr(kBinaryPrefix.size()), name, value, kind_text, event));
  }
  RETURN_IF_ERROR(CheckRequiredBinaryAttributes(event, kind_text));
  RETURN_IF_ERROR(MergeTransportContentType(content_type, kind_text, event));
  RETURN_IF_ERROR(CheckBinaryModeContentType(event.data_content_type));
  if (!payload.empty()) {
    event.data = std::string(payload);
  }
  return event;
}

}  // namespace mmi::cloudevents::internal
