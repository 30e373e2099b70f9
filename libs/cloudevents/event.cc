#include "libs/cloudevents/event.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/json.h"

namespace mmi::cloudevents {
namespace {

using internal::Quote;
using std::chrono::nanoseconds;

// Days since 1970-01-01 of a proleptic Gregorian civil date (Howard Hinnant's algorithm).
constexpr std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
  std::int64_t year;
  unsigned month;
  unsigned day;
};

constexpr Civil CivilFromDays(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2 ? 1 : 0), m, d};
}

bool IsLeap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysInMonth(std::int64_t y, unsigned m) {
  constexpr std::array<unsigned, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

bool ParseDigits(std::string_view text, std::size_t pos, std::size_t count, unsigned* out) {
  if (pos + count > text.size()) {
    return false;
  }
  unsigned value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  *out = value;
  return true;
}

void AppendPadded(std::string& out, std::int64_t value, int width) {
  std::array<char, 24> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  const auto len = static_cast<int>(end - buffer.data());
  for (int i = len; i < width; ++i) {
    out.push_back('0');
  }
  out.append(buffer.data(), end);
}

absl::Status NotFound(std::string_view name) {
  return absl::NotFoundError(
      absl::StrCat("CloudEvent has no extension \"", std::string(name), "\""));
}

absl::Status WrongType(std::string_view name, std::string_view expected,
                       const AttributeValue& value) {
  static constexpr std::array<std::string_view, 5> kTypeNames = {"String", "Integer", "Boolean",
                                                                 "Timestamp", "Binary"};
  return absl::InvalidArgumentError(absl::StrCat("CloudEvent extension \"", std::string(name),
                                                 "\" must be ", std::string(expected), ", got ",
                                                 std::string(kTypeNames.at(value.index()))));
}

// Strict decimal int32: optional sign, 1-10 digits... (no spaces, no fraction, no exponent).
absl::StatusOr<std::int32_t> ParseDecimalInt32(std::string_view name, std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+') {
    digits.remove_prefix(1);
    if (!digits.empty() && digits.front() == '-') {
      digits = {};  // "+-1" is not a number
    }
  }
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent extension \"", std::string(name),
                     "\" must be an Integer or a decimal String, got ", Quote(text)));
  }
  if (value < std::numeric_limits<std::int32_t>::min() ||
      value > std::numeric_limits<std::int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("CloudEvent extension \"", std::string(name),
                                                   "\" is outside the int32 range: ", Quote(text)));
  }
  return static_cast<std::int32_t>(value);
}

absl::StatusOr<std::string> RequireNonEmpty(absl::StatusOr<std::string> value,
                                            std::string_view name) {
  if (value.ok() && value->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent extension \"", std::string(name), "\" must not be empty"));
  }
  return value;
}

}  // namespace

// --- timestamps --------------------------------------------------------------------------------

std::string FormatTimestamp(Timestamp time) {
  const auto since_epoch = time.time_since_epoch();
  auto days = std::chrono::floor<std::chrono::days>(since_epoch);
  auto rest = since_epoch - days;  // [0, 1 day)
  const Civil civil = CivilFromDays(days.count());
  const auto total_ns = rest.count();
  const std::int64_t secs_of_day = total_ns / 1'000'000'000;
  std::int64_t frac = total_ns % 1'000'000'000;

  std::string out;
  out.reserve(32);
  AppendPadded(out, civil.year, 4);
  out.push_back('-');
  AppendPadded(out, civil.month, 2);
  out.push_back('-');
  AppendPadded(out, civil.day, 2);
  out.push_back('T');
  AppendPadded(out, secs_of_day / 3600, 2);
  out.push_back(':');
  AppendPadded(out, (secs_of_day / 60) % 60, 2);
  out.push_back(':');
  AppendPadded(out, secs_of_day % 60, 2);
  if (frac != 0) {
    int width = 9;
    while (frac % 10 == 0) {
      frac /= 10;
      --width;
    }
    out.push_back('.');
    AppendPadded(out, frac, width);
  }
  out.push_back('Z');
  return out;
}

absl::StatusOr<Timestamp> ParseTimestamp(std::string_view text) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an RFC 3339 timestamp (", std::string(why), "): ", Quote(text)));
  };
  unsigned year = 0;
  unsigned month = 0;
  unsigned day = 0;
  unsigned hour = 0;
  unsigned minute = 0;
  unsigned second = 0;
  if (!ParseDigits(text, 0, 4, &year) || text.size() < 19 || text[4] != '-' ||
      !ParseDigits(text, 5, 2, &month) || text[7] != '-' || !ParseDigits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't') || !ParseDigits(text, 11, 2, &hour) || text[13] != ':' ||
      !ParseDigits(text, 14, 2, &minute) || text[16] != ':' || !ParseDigits(text, 17, 2, &second)) {
    return invalid("expected YYYY-MM-DDTHH:MM:SS");
  }
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month)) {
    return invalid("no such date");
  }
  if (hour > 23 || minute > 59 || second > 59) {
    return invalid("no such time of day");
  }
  std::size_t pos = 19;
  std::int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    std::int64_t scale = 100'000'000;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      nanos += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) {
      return invalid("empty fraction");
    }
  }
  std::int64_t offset_seconds = 0;
  if (pos >= text.size()) {
    return invalid("missing time zone");
  }
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    unsigned off_h = 0;
    unsigned off_m = 0;
    if (!ParseDigits(text, pos + 1, 2, &off_h) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !ParseDigits(text, pos + 4, 2, &off_m) || off_h > 23 || off_m > 59) {
      return invalid("bad offset");
    }
    offset_seconds = (static_cast<std::int64_t>(off_h) * 60 + off_m) * 60;
    if (text[pos] == '-') {
      offset_seconds = -offset_seconds;
    }
    pos += 6;
  } else {
    return invalid("bad time zone");
  }
  if (pos != text.size()) {
    return invalid("trailing characters");
  }
  const std::int64_t days = DaysFromCivil(year, month, day);
  const std::int64_t seconds = days * 86400 + static_cast<std::int64_t>(hour) * 3600 +
                               static_cast<std::int64_t>(minute) * 60 + second - offset_seconds;
  std::int64_t total = 0;
  if (__builtin_mul_overflow(seconds, std::int64_t{1'000'000'000}, &total) ||
      __builtin_add_overflow(total, nanos, &total)) {
    return invalid("outside the representable range 1678..2261");
  }
  return Timestamp(nanoseconds(total));
}

// --- values --------------------------------------------------------------------------------------

std::string CanonicalString(const AttributeValue& value) {
  struct Visitor {
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(std::int32_t v) const { return std::to_string(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(Timestamp v) const { return FormatTimestamp(v); }
    std::string operator()(const Binary& v) const { return absl::Base64Escape(v.bytes); }
  };
  return std::visit(Visitor{}, value);
}

bool IsValidExtensionName(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  static constexpr std::array<std::string_view, 7> kReserved = {
      "specversion", "id", "source", "type", "datacontenttype", "time", "data"};
  for (const auto reserved : kReserved) {
    if (name == reserved) {
      return false;
    }
  }
  return true;
}

// --- type grammar -------------------------------------------------------------------------------

std::string_view SubresourceName(Subresource subresource) {
  return subresource == Subresource::kSpec ? "spec" : "status";
}

std::string_view ActionName(Action action) {
  switch (action) {
    case Action::kCreateRequest:
      return "create_request";
    case Action::kUpdateRequest:
      return "update_request";
    case Action::kDeleteRequest:
      return "delete_request";
    case Action::kResyncRequest:
      return "resync_request";
    case Action::kResyncResponse:
      return "resync_response";
    case Action::kWatchRequest:
      return "watch_request";
  }
  return "unknown";
}

absl::StatusOr<Subresource> ParseSubresource(std::string_view text) {
  if (text == "spec") {
    return Subresource::kSpec;
  }
  if (text == "status") {
    return Subresource::kStatus;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown subresource ", Quote(text), " (want \"spec\" or \"status\")"));
}

absl::StatusOr<Action> ParseAction(std::string_view text) {
  for (const Action action :
       {Action::kCreateRequest, Action::kUpdateRequest, Action::kDeleteRequest,
        Action::kResyncRequest, Action::kResyncResponse, Action::kWatchRequest}) {
    if (text == ActionName(action)) {
      return action;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown action ", Quote(text)));
}

namespace {
std::vector<std::string_view> SplitDots(std::string_view text) {
  std::vector<std::string_view> tokens;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = text.find('.', start);
    if (dot == std::string_view::npos) {
      tokens.push_back(text.substr(start));
      return tokens;
    }
    tokens.push_back(text.substr(start, dot - start));
    start = dot + 1;
  }
}

absl::StatusOr<DataType> DataTypeFromTokens(const std::vector<std::string_view>& tokens,
                                            std::size_t count, std::string_view text,
                                            std::string_view what) {
  for (std::size_t i = 0; i < count; ++i) {
    if (tokens[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid CloudEvent ", std::string(what), " ",
                                                     Quote(text), ": empty token"));
    }
  }
  DataType data_type;
  data_type.resource = std::string(tokens[count - 1]);
  data_type.version = std::string(tokens[count - 2]);
  const auto group_end =
      static_cast<std::size_t>(tokens[count - 3].data() - text.data()) + tokens[count - 3].size();
  data_type.group = std::string(text.substr(0, group_end));
  return data_type;
}
}  // namespace

absl::StatusOr<DataType> DataType::Parse(std::string_view text) {
  const auto tokens = SplitDots(text);
  if (tokens.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat("invalid CloudEvent data type ", Quote(text),
                                                   ": want <group>.<version>.<resource>"));
  }
  return DataTypeFromTokens(tokens, tokens.size(), text, "data type");
}

std::string DataType::ToString() const { return absl::StrCat(group, ".", version, ".", resource); }

absl::StatusOr<EventType> EventType::Parse(std::string_view text) {
  const auto tokens = SplitDots(text);
  if (tokens.size() < 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid CloudEvent type ", Quote(text),
                     ": want <group>.<version>.<resource>.<subresource>.<action>"));
  }
  EventType type;
  auto subresource = ParseSubresource(tokens[tokens.size() - 2]);
  if (!subresource.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid CloudEvent type ", Quote(text), ": ",
                                                   std::string(subresource.status().message())));
  }
  auto action = ParseAction(tokens.back());
  if (!action.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid CloudEvent type ", Quote(text), ": ",
                                                   std::string(action.status().message())));
  }
  auto data_type = DataTypeFromTokens(tokens, tokens.size() - 2, text, "type");
  if (!data_type.ok()) {
    return data_type.status();
  }
  type.data_type = *std::move(data_type);
  type.subresource = *subresource;
  type.action = *action;
  return type;
}

std::string EventType::ToString() const {
  return absl::StrCat(data_type.ToString(), ".", std::string(SubresourceName(subresource)), ".",
                      std::string(ActionName(action)));
}

// --- Event -------------------------------------------------------------------------------------

void Event::SetString(std::string_view name, std::string value) {
  extensions.insert_or_assign(std::string(name), AttributeValue(std::move(value)));
}
void Event::SetInteger(std::string_view name, std::int32_t value) {
  extensions.insert_or_assign(std::string(name), AttributeValue(value));
}
void Event::SetBoolean(std::string_view name, bool value) {
  extensions.insert_or_assign(std::string(name), AttributeValue(value));
}
void Event::SetTimestamp(std::string_view name, Timestamp value) {
  extensions.insert_or_assign(std::string(name), AttributeValue(value));
}
void Event::SetBinary(std::string_view name, std::string bytes) {
  extensions.insert_or_assign(std::string(name), AttributeValue(Binary{std::move(bytes)}));
}

bool Event::RemoveExtension(std::string_view name) {
  const auto it = extensions.find(name);
  if (it == extensions.end()) {
    return false;
  }
  extensions.erase(it);
  return true;
}

bool Event::HasExtension(std::string_view name) const { return extensions.contains(name); }

const AttributeValue* Event::FindExtension(std::string_view name) const {
  const auto it = extensions.find(name);
  return it == extensions.end() ? nullptr : &it->second;
}

absl::StatusOr<std::string> Event::GetString(std::string_view name) const {
  const AttributeValue* value = FindExtension(name);
  if (value == nullptr) {
    return NotFound(name);
  }
  if (const auto* text = std::get_if<std::string>(value)) {
    return *text;
  }
  return WrongType(name, "a String", *value);
}

absl::StatusOr<std::int32_t> Event::GetInteger(std::string_view name) const {
  const AttributeValue* value = FindExtension(name);
  if (value == nullptr) {
    return NotFound(name);
  }
  if (const auto* number = std::get_if<std::int32_t>(value)) {
    return *number;
  }
  if (const auto* text = std::get_if<std::string>(value)) {
    return ParseDecimalInt32(name, *text);
  }
  return WrongType(name, "an Integer or a decimal String", *value);
}

absl::StatusOr<bool> Event::GetBoolean(std::string_view name) const {
  const AttributeValue* value = FindExtension(name);
  if (value == nullptr) {
    return NotFound(name);
  }
  if (const auto* flag = std::get_if<bool>(value)) {
    return *flag;
  }
  if (const auto* text = std::get_if<std::string>(value)) {
    if (*text == "true") {
      return true;
    }
    if (*text == "false") {
      return false;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent extension \"", std::string(name),
                     "\" must be a Boolean or \"true\"/\"false\", got ", Quote(*text)));
  }
  return WrongType(name, "a Boolean", *value);
}

absl::StatusOr<Timestamp> Event::GetTimestamp(std::string_view name) const {
  const AttributeValue* value = FindExtension(name);
  if (value == nullptr) {
    return NotFound(name);
  }
  if (const auto* time_value = std::get_if<Timestamp>(value)) {
    return *time_value;
  }
  if (const auto* text = std::get_if<std::string>(value)) {
    auto parsed = ParseTimestamp(*text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("CloudEvent extension \"", std::string(name),
                       "\": ", std::string(parsed.status().message())));
    }
    return parsed;
  }
  return WrongType(name, "a Timestamp or an RFC 3339 String", *value);
}

absl::StatusOr<std::string> Event::ClusterName() const { return GetString(kExtClusterName); }
absl::StatusOr<std::string> Event::OriginalSource() const { return GetString(kExtOriginalSource); }
absl::StatusOr<std::string> Event::ResourceId() const {
  return RequireNonEmpty(GetString(kExtResourceId), kExtResourceId);
}
absl::StatusOr<std::int32_t> Event::ResourceVersion() const {
  return GetInteger(kExtResourceVersion);
}
absl::StatusOr<std::string> Event::SequenceId() const {
  return RequireNonEmpty(GetString(kExtSequenceId), kExtSequenceId);
}
absl::StatusOr<Timestamp> Event::DeletionTimestamp() const {
  return GetTimestamp(kExtDeletionTimestamp);
}
absl::StatusOr<std::string> Event::StatusHash() const { return GetString(kExtStatusHash); }
absl::StatusOr<std::string> Event::MetadataJson() const { return GetString(kExtMetadata); }
absl::StatusOr<std::string> Event::LogTracingJson() const { return GetString(kExtLogTracing); }

absl::StatusOr<EventType> Event::ParsedType() const { return EventType::Parse(type); }

}  // namespace mmi::cloudevents
