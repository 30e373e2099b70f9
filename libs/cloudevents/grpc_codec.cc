#include "libs/cloudevents/grpc_codec.h"

#include <chrono>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/attributes.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/cloudevents/json_format.h"

namespace mmi::cloudevents {
namespace {

namespace pb = ::io::cloudevents::v1;
using internal::Quote;

constexpr std::string_view kContentTypeKey = "contenttype";
constexpr std::string_view kTimeKey = "ce-time";

void ToProtoTimestamp(Timestamp time, google::protobuf::Timestamp* out) {
  const auto since_epoch = time.time_since_epoch();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  out->set_seconds(seconds.count());
  out->set_nanos(static_cast<std::int32_t>((since_epoch - seconds).count()));
}

absl::StatusOr<Timestamp> FromProtoTimestamp(const google::protobuf::Timestamp& value,
                                             std::string_view key) {
  // google.protobuf.Timestamp: nanos in [0, 1e9); the seconds must fit int64 nanoseconds.
  constexpr std::int64_t kMaxSeconds = std::numeric_limits<std::int64_t>::max() / 1'000'000'000;
  if (value.nanos() < 0 || value.nanos() > 999'999'999 || value.seconds() > kMaxSeconds - 1 ||
      value.seconds() < -kMaxSeconds + 1) {
    return absl::InvalidArgumentError(absl::StrCat("gRPC CloudEvent attribute \"", std::string(key),
                                                   "\" holds an invalid or unrepresentable"
                                                   " timestamp (seconds ",
                                                   value.seconds(), ", nanos ", value.nanos(),
                                                   ")"));
  }
  return Timestamp(std::chrono::seconds(value.seconds()) + std::chrono::nanoseconds(value.nanos()));
}

void ToProtoValue(const AttributeValue& value, pb::CloudEventAttributeValue* out) {
  struct Visitor {
    pb::CloudEventAttributeValue* out;
    void operator()(const std::string& v) const { out->set_ce_string(v); }
    void operator()(std::int32_t v) const { out->set_ce_integer(v); }
    void operator()(bool v) const { out->set_ce_boolean(v); }
    void operator()(Timestamp v) const { ToProtoTimestamp(v, out->mutable_ce_timestamp()); }
    void operator()(const Binary& v) const { out->set_ce_bytes(v.bytes); }
  };
  std::visit(Visitor{out}, value);
}

absl::StatusOr<AttributeValue> FromProtoValue(const pb::CloudEventAttributeValue& value,
                                              std::string_view key) {
  auto utf8 = [&](const std::string& text) -> absl::StatusOr<AttributeValue> {
    if (!internal::IsValidUtf8(text)) {
      return absl::InvalidArgumentError(absl::StrCat("gRPC CloudEvent attribute \"",
                                                     std::string(key),
                                                     "\" is not valid UTF-8: ", Quote(text)));
    }
    return AttributeValue(text);
  };
  switch (value.attr_case()) {
    case pb::CloudEventAttributeValue::kCeBoolean:
      return AttributeValue(value.ce_boolean());
    case pb::CloudEventAttributeValue::kCeInteger:
      return AttributeValue(value.ce_integer());
    case pb::CloudEventAttributeValue::kCeString:
      return utf8(value.ce_string());
    case pb::CloudEventAttributeValue::kCeBytes:
      return AttributeValue(Binary{value.ce_bytes()});
    case pb::CloudEventAttributeValue::kCeUri:
      return utf8(value.ce_uri());
    case pb::CloudEventAttributeValue::kCeUriRef:
      return utf8(value.ce_uri_ref());
    case pb::CloudEventAttributeValue::kCeTimestamp: {
      auto time = FromProtoTimestamp(value.ce_timestamp(), key);
      if (!time.ok()) {
        return time.status();
      }
      return AttributeValue(*time);
    }
    case pb::CloudEventAttributeValue::ATTR_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("gRPC CloudEvent attribute \"", std::string(key),
                                                 "\" has no value (empty oneof attr)"));
}

absl::StatusOr<std::string> StringValue(const AttributeValue& value, std::string_view key) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    return *text;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("gRPC CloudEvent attribute \"", std::string(key), "\" must be a ce_string"));
}

absl::Status CheckField(std::string_view field, const std::string& value) {
  if (!internal::IsValidUtf8(value)) {
    return absl::InvalidArgumentError(absl::StrCat("gRPC CloudEvent field \"", std::string(field),
                                                   "\" is not valid UTF-8: ", Quote(value)));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsHeartbeat(const pb::CloudEvent& message) { return message.type() == kHeartbeatType; }

pb::CloudEvent MakeHeartbeat(std::string id) {
  pb::CloudEvent message;
  message.set_id(std::move(id));
  message.set_spec_version(std::string(kSpecVersion));
  message.set_type(std::string(kHeartbeatType));
  return message;
}

absl::StatusOr<pb::CloudEvent> EncodeGrpc(const Event& event, const CodecLimits& limits) {
  if (auto status = internal::ValidateForEncoding(event); !status.ok()) {
    return status;
  }
  if (auto status = internal::CheckBinaryModeContentType(event.data_content_type); !status.ok()) {
    return status;
  }
  pb::CloudEvent message;
  message.set_id(event.id);
  message.set_source(event.source);
  message.set_spec_version(event.spec_version);
  message.set_type(event.type);
  auto& attributes = *message.mutable_attributes();
  if (event.data_content_type.has_value()) {
    attributes[std::string(kContentTypeKey)].set_ce_string(*event.data_content_type);
  }
  if (event.time.has_value()) {
    ToProtoTimestamp(*event.time, attributes[std::string(kTimeKey)].mutable_ce_timestamp());
  }
  for (const auto& [name, value] : event.extensions) {
    ToProtoValue(value, &attributes[absl::StrCat(std::string(internal::kBinaryPrefix), name)]);
  }
  if (attributes.empty() && !event.IsHeartbeat()) {
    // Readers (Go's and ours) take an empty attributes map for "not a binary-mode event"; a
    // `ce-specversion` key is understood by both and keeps such a minimal event decodable.
    attributes[absl::StrCat(std::string(internal::kBinaryPrefix), "specversion")].set_ce_string(
        event.spec_version);
  }
  if (event.data.has_value()) {
    message.set_binary_data(*event.data);
  }
  if (const std::size_t size = message.ByteSizeLong(); size > limits.max_event_bytes) {
    return internal::SizeLimitError("encoded gRPC CloudEvent", size, limits);
  }
  return message;
}

namespace {

// One binary-mode attribute `name` (the key without `ce-`; `contenttype` read as
// `datacontenttype`) applied to `event`. `have_content_type` remembers whether a content type was
// already taken, as Go rejects both spellings at once.
absl::Status ApplyGrpcAttribute(const std::string& name, const std::string& raw_key,
                                AttributeValue value, bool& have_content_type, Event& event) {
  if (name == "datacontenttype") {
    if (have_content_type) {
      return absl::InvalidArgumentError(
          "gRPC CloudEvent has both \"contenttype\" and \"ce-datacontenttype\"");
    }
    have_content_type = true;
    auto text = StringValue(value, raw_key);
    if (!text.ok()) {
      return text.status();
    }
    if (!text->empty()) {
      event.data_content_type = *std::move(text);
    }
    return internal::CheckBinaryModeContentType(event.data_content_type);
  }
  if (name == "time") {
    if (const auto* time = std::get_if<Timestamp>(&value)) {
      event.time = *time;
      return absl::OkStatus();
    }
    if (const auto* text = std::get_if<std::string>(&value)) {
      auto parsed = ParseTimestamp(*text);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("gRPC CloudEvent attribute \"ce-time\": ",
                                                       std::string(parsed.status().message())));
      }
      event.time = *parsed;
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        "gRPC CloudEvent attribute \"ce-time\" must be a ce_timestamp or an RFC 3339 "
        "ce_string");
  }
  if (name == "id" || name == "source" || name == "type" || name == "specversion") {
    // Go lets a `ce-<core>` key override the field.
    auto text = StringValue(value, raw_key);
    if (!text.ok()) {
      return text.status();
    }
    if (name == "specversion") {
      if (*text != kSpecVersion) {
        return absl::InvalidArgumentError(absl::StrCat(
            "gRPC CloudEvent attribute \"ce-specversion\" must be \"1.0\", got ", Quote(*text)));
      }
    } else {
      (name == "id" ? event.id : name == "source" ? event.source : event.type) = *text;
    }
    return absl::OkStatus();
  }
  if (IsValidExtensionName(name)) {
    event.extensions.emplace(name, std::move(value));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("gRPC CloudEvent attribute key ", Quote(raw_key),
                   " does not name a valid CloudEvent attribute (ce- followed by a-z, 0-9)"));
}

// Every `contenttype` / `ce-*` key of the attributes map applied to `event`; other keys are
// skipped, as Go skips them.
absl::Status ApplyGrpcAttributes(const pb::CloudEvent& message, Event& event) {
  std::set<std::string, std::less<>> seen;
  bool have_content_type = false;
  for (const auto& [raw_key, raw_value] : message.attributes()) {
    const std::string key = internal::AsciiLower(raw_key);
    if (key != kContentTypeKey && !key.starts_with(internal::kBinaryPrefix)) {
      continue;  // Go ignores keys that are neither `contenttype` nor `ce-*`.
    }
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("gRPC CloudEvent attribute ", Quote(key),
                                                     " appears more than once (keys differ only "
                                                     "in case)"));
    }
    auto value = FromProtoValue(raw_value, raw_key);
    if (!value.ok()) {
      return value.status();
    }
    const std::string name =
        key == kContentTypeKey ? "datacontenttype" : key.substr(internal::kBinaryPrefix.size());
    if (auto status =
            ApplyGrpcAttribute(name, raw_key, *std::move(value), have_content_type, event);
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

// A binary-mode gRPC CloudEvent (not a heartbeat, not structured).
absl::StatusOr<Event> DecodeGrpcBinary(const pb::CloudEvent& message) {
  if (message.attributes().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gRPC CloudEvent of type ", Quote(message.type()),
        " has an empty attributes map: not a binary-mode event (only heartbeats may have none)"));
  }
  if (message.spec_version() != kSpecVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gRPC CloudEvent spec_version must be \"1.0\", got ", Quote(message.spec_version())));
  }
  for (const auto& [field, value] :
       {std::pair<std::string_view, const std::string*>{"id", &message.id()},
        {"source", &message.source()},
        {"type", &message.type()}}) {
    if (auto status = CheckField(field, *value); !status.ok()) {
      return status;
    }
  }
  Event event;
  event.id = message.id();
  event.source = message.source();
  event.type = message.type();
  if (auto status = ApplyGrpcAttributes(message, event); !status.ok()) {
    return status;
  }
  if (event.id.empty()) {
    return absl::InvalidArgumentError("gRPC CloudEvent has an empty id");
  }
  if (event.source.empty()) {
    return absl::InvalidArgumentError("gRPC CloudEvent has an empty source");
  }
  if (event.type.empty()) {
    return absl::InvalidArgumentError("gRPC CloudEvent has an empty type");
  }
  if (message.data_case() == pb::CloudEvent::kBinaryData) {
    event.data = message.binary_data();
  }
  return event;
}

}  // namespace

absl::StatusOr<Event> DecodeGrpc(const pb::CloudEvent& message, const CodecLimits& limits) {
  if (const std::size_t size = message.ByteSizeLong(); size > limits.max_event_bytes) {
    return internal::SizeLimitError("gRPC CloudEvent", size, limits);
  }
  if (IsHeartbeat(message)) {
    Event heartbeat;
    heartbeat.id = message.id();
    heartbeat.spec_version = message.spec_version();
    heartbeat.type = message.type();
    return heartbeat;
  }
  const auto& attributes = message.attributes();
  if (const auto it = attributes.find(std::string(kContentTypeKey));
      it != attributes.end() && it->second.attr_case() == pb::CloudEventAttributeValue::kCeString &&
      IsStructuredContentType(it->second.ce_string())) {
    return DecodeStructuredJson(message.binary_data(), limits);
  }
  return DecodeGrpcBinary(message);
}

absl::StatusOr<Event> DecodeGrpcBytes(std::string_view serialized, const CodecLimits& limits) {
  if (serialized.size() > limits.max_event_bytes) {
    return internal::SizeLimitError("serialized gRPC CloudEvent", serialized.size(), limits);
  }
  pb::CloudEvent message;
  if (!message.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes (", serialized.size(),
                     ") are not a valid io.cloudevents.v1.CloudEvent protobuf message"));
  }
  return DecodeGrpc(message, limits);
}

}  // namespace mmi::cloudevents
