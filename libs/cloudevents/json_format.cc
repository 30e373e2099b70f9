#include "libs/cloudevents/json_format.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/attributes.h"
#include "libs/cloudevents/internal/json.h"

namespace mmi::cloudevents {
namespace {

using internal::Json;
using internal::Quote;

constexpr std::string_view kWhat = "structured CloudEvent";

absl::Status AppendMember(std::string_view name, std::string_view value, std::string& out) {
  out.push_back(',');
  out.push_back('"');
  out.append(name);
  out += "\":";
  return internal::AppendJsonString(value, out);
}

absl::Status AppendExtension(const std::string& name, const AttributeValue& value,
                             std::string& out) {
  out += ",\"";
  out += name;
  out += "\":";
  if (const auto* number = std::get_if<std::int32_t>(&value)) {
    out += std::to_string(*number);
    return absl::OkStatus();
  }
  if (const auto* flag = std::get_if<bool>(&value)) {
    out += *flag ? "true" : "false";
    return absl::OkStatus();
  }
  return internal::AppendJsonString(CanonicalString(value), out);
}

absl::Status Invalid(std::string_view member, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(kWhat), " member \"", std::string(member), "\" ", std::string(why)));
}

absl::StatusOr<std::string> RequiredString(const Json& value, std::string_view member) {
  if (!value.is_string()) {
    return Invalid(
        member, absl::StrCat("must be a string, got ", std::string(internal::JsonTypeName(value))));
  }
  std::string text = value.get<std::string>();
  if (text.empty()) {
    return Invalid(member, "must not be empty");
  }
  return text;
}

absl::StatusOr<AttributeValue> ExtensionValue(const std::string& name, const Json& value) {
  if (value.is_string()) {
    return AttributeValue(value.get<std::string>());
  }
  if (value.is_boolean()) {
    return AttributeValue(value.get<bool>());
  }
  if (value.is_number()) {
    double number = 0;
    if (value.is_number_integer()) {
      if (value.is_number_unsigned()) {
        const auto u = value.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
          return AttributeValue(static_cast<std::int32_t>(u));
        }
        return Invalid(name, "is outside the int32 range of a CloudEvents Integer");
      }
      const auto i = value.get<std::int64_t>();
      if (i >= std::numeric_limits<std::int32_t>::min() &&
          i <= std::numeric_limits<std::int32_t>::max()) {
        return AttributeValue(static_cast<std::int32_t>(i));
      }
      return Invalid(name, "is outside the int32 range of a CloudEvents Integer");
    }
    number = value.get<double>();
    if (number != std::trunc(number)) {
      return Invalid(name, "must be an integral number (CloudEvents Integer)");
    }
    if (number < std::numeric_limits<std::int32_t>::min() ||
        number > std::numeric_limits<std::int32_t>::max()) {
      return Invalid(name, "is outside the int32 range of a CloudEvents Integer");
    }
    return AttributeValue(static_cast<std::int32_t>(number));
  }
  return Invalid(name,
                 absl::StrCat("must be a string, number or boolean, got ",
                              std::string(internal::JsonTypeName(value)),
                              " (JSON-valued extensions such as metadata are sent as strings)"));
}

}  // namespace

bool IsJsonContentType(std::string_view content_type) {
  const std::string lower = internal::AsciiLower(content_type);
  std::string_view media(lower);
  if (const auto semicolon = media.find(';'); semicolon != std::string_view::npos) {
    media = media.substr(0, semicolon);
  }
  while (!media.empty() && media.back() == ' ') {
    media.remove_suffix(1);
  }
  return media == "application/json" || media == "text/json" ||
         (media.size() > 5 && media.substr(media.size() - 5) == "+json");
}

bool IsStructuredContentType(std::string_view content_type) {
  return internal::StartsWithIgnoreCase(content_type, "application/cloudevents");
}

absl::StatusOr<std::string> EncodeStructuredJson(const Event& event, const CodecLimits& limits) {
  if (auto status = internal::ValidateForEncoding(event); !status.ok()) {
    return status;
  }
  std::string out;
  out.reserve(256 + (event.data.has_value() ? event.data->size() : 0));
  out += "{\"specversion\":";
  if (auto status = internal::AppendJsonString(event.spec_version, out); !status.ok()) {
    return status;
  }
  for (const auto& [name, value] :
       {std::pair<std::string_view, const std::string*>{"id", &event.id},
        {"source", &event.source},
        {"type", &event.type}}) {
    if (name == "source" && value->empty()) {
      continue;  // heartbeat
    }
    if (auto status = AppendMember(name, *value, out); !status.ok()) {
      return status;
    }
  }
  if (event.data_content_type.has_value()) {
    if (auto status = AppendMember("datacontenttype", *event.data_content_type, out);
        !status.ok()) {
      return status;
    }
  }
  if (event.time.has_value()) {
    if (auto status = AppendMember("time", FormatTimestamp(*event.time), out); !status.ok()) {
      return status;
    }
  }
  if (event.data.has_value()) {
    if (!event.data_content_type.has_value() || IsJsonContentType(*event.data_content_type)) {
      // Embedded byte for byte (as Go does) once known to be exactly one JSON value.
      if (auto status = internal::ValidateJson(*event.data, limits, "CloudEvent data");
          !status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(status.message()),
                         " (datacontenttype is JSON or absent, so data must be JSON)"));
      }
      out += ",\"data\":";
      out += *event.data;
    } else {
      out += ",\"data_base64\":\"";
      out += absl::Base64Escape(*event.data);
      out.push_back('"');
    }
  }
  for (const auto& [name, value] : event.extensions) {
    if (auto status = AppendExtension(name, value, out); !status.ok()) {
      return status;
    }
  }
  out.push_back('}');
  if (out.size() > limits.max_event_bytes) {
    return internal::SizeLimitError("encoded structured CloudEvent", out.size(), limits);
  }
  return out;
}

namespace {

// One context attribute or extension member (`name` lower-cased, not `data`/`data_base64`)
// stored in `event`.
absl::Status ApplyStructuredMember(const std::string& name, const std::string& raw_name,
                                   const Json& value, Event& event) {
  if (name == "specversion") {
    auto text = RequiredString(value, name);
    if (!text.ok()) {
      return text.status();
    }
    if (*text != kSpecVersion) {
      return Invalid(name, absl::StrCat("must be \"1.0\", got ", Quote(*text)));
    }
    event.spec_version = *std::move(text);
  } else if (name == "id" || name == "source" || name == "type") {
    auto text = RequiredString(value, name);
    if (!text.ok()) {
      return text.status();
    }
    (name == "id" ? event.id : name == "source" ? event.source : event.type) = *std::move(text);
  } else if (name == "datacontenttype") {
    auto text = RequiredString(value, name);
    if (!text.ok()) {
      return text.status();
    }
    event.data_content_type = *std::move(text);
  } else if (name == "time") {
    auto text = RequiredString(value, name);
    if (!text.ok()) {
      return text.status();
    }
    auto time = ParseTimestamp(*text);
    if (!time.ok()) {
      return Invalid(name, std::string(time.status().message()));
    }
    event.time = *time;
  } else {
    if (!IsValidExtensionName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(kWhat), " member ", Quote(raw_name),
                       " is not a valid CloudEvent attribute name (a-z, 0-9)"));
    }
    auto ext = ExtensionValue(name, value);
    if (!ext.ok()) {
      return ext.status();
    }
    if (!event.extensions.emplace(name, *std::move(ext)).second) {
      return Invalid(name, "appears more than once (names are case-insensitive)");
    }
  }
  return absl::OkStatus();
}

// The `data` or `data_base64` member (either may be null = absent) stored in `event`, after the
// attributes, since a JSON `data` is kept as text only under a JSON (or absent) content type.
absl::Status ApplyStructuredData(const Json* data, const Json* data_base64, Event& event) {
  if (data != nullptr && data_base64 != nullptr) {
    return Invalid("data", "and \"data_base64\" must not both be present");
  }
  if (data_base64 != nullptr) {
    if (!data_base64->is_string()) {
      return Invalid("data_base64", "must be a string");
    }
    std::string bytes;
    if (!absl::Base64Unescape(data_base64->get<std::string>(), &bytes)) {
      return Invalid("data_base64", "is not valid base64");
    }
    event.data = std::move(bytes);
  } else if (data != nullptr) {
    const bool json_type =
        !event.data_content_type.has_value() || IsJsonContentType(*event.data_content_type);
    if (!json_type && data->is_string()) {
      event.data = data->get<std::string>();
    } else {
      auto bytes = internal::GoJson(*data);
      if (!bytes.ok()) {
        return Invalid("data", std::string(bytes.status().message()));
      }
      event.data = *std::move(bytes);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Event> DecodeStructuredJson(std::string_view json, const CodecLimits& limits) {
  auto document = internal::ParseJson(json, limits, kWhat);
  if (!document.ok()) {
    return document.status();
  }
  if (!document->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(kWhat),
                                                   " must be a JSON object, got ",
                                                   std::string(internal::JsonTypeName(*document))));
  }
  Event event;
  event.spec_version.clear();
  const Json* data = nullptr;
  const Json* data_base64 = nullptr;
  for (auto& [raw_name, value] : document->get_ref<Json::object_t&>()) {
    if (value.is_null()) {
      continue;  // null = absent
    }
    const std::string name = internal::AsciiLower(raw_name);
    if (name == "data") {
      data = &value;
    } else if (name == "data_base64") {
      data_base64 = &value;
    } else if (auto status = ApplyStructuredMember(name, raw_name, value, event); !status.ok()) {
      return status;
    }
  }
  if (event.spec_version.empty()) {
    return Invalid("specversion", "is required");
  }
  if (event.id.empty()) {
    return Invalid("id", "is required");
  }
  if (event.type.empty()) {
    return Invalid("type", "is required");
  }
  if (event.source.empty() && !event.IsHeartbeat()) {
    return Invalid("source", "is required");
  }
  if (auto status = ApplyStructuredData(data, data_base64, event); !status.ok()) {
    return status;
  }
  return event;
}

}  // namespace mmi::cloudevents
