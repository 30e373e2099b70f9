// Test-only: status feedback values as the work agent reports them, for the table tests.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "libs/cloudevents/manifest_bundle.h"
#include "nlohmann/json.hpp"

namespace mmi::status_sink::testing {

// A value of `type` named `name`; the callers below fill its one member.
inline cloudevents::FeedbackValue Typed(std::string name, cloudevents::FieldValueType type) {
  cloudevents::FeedbackValue out{.name = std::move(name), .field_value = {}};
  out.field_value.type = type;
  return out;
}

inline cloudevents::FeedbackValue Int(std::string name, std::int64_t value) {
  cloudevents::FeedbackValue out = Typed(std::move(name), cloudevents::FieldValueType::kInteger);
  out.field_value.integer = value;
  return out;
}

inline cloudevents::FeedbackValue Str(std::string name, std::string value) {
  cloudevents::FeedbackValue out = Typed(std::move(name), cloudevents::FieldValueType::kString);
  out.field_value.string = std::move(value);
  return out;
}

inline cloudevents::FeedbackValue Bool(std::string name, bool value) {
  cloudevents::FeedbackValue out = Typed(std::move(name), cloudevents::FieldValueType::kBoolean);
  out.field_value.boolean = value;
  return out;
}

// A JsonRaw value: the text and its parse, as the bundle decoder fills them.
inline cloudevents::FeedbackValue Raw(std::string name, nlohmann::json value) {
  cloudevents::FeedbackValue out = Typed(std::move(name), cloudevents::FieldValueType::kJsonRaw);
  out.field_value.json_raw = value.dump();
  out.field_value.json_raw_value = std::move(value);
  return out;
}

}  // namespace mmi::status_sink::testing
