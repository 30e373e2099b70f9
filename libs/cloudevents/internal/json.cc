#include "libs/cloudevents/internal/json.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "libs/common/status_macros.h"

namespace mmi::cloudevents::internal {

std::string Quote(std::string_view text) {
  constexpr std::size_t kMaxShown = 80;
  std::string shown(text.substr(0, kMaxShown));
  if (text.size() > kMaxShown) {
    shown += "...";
  }
  return absl::StrCat("\"", absl::CHexEscape(shown), "\"");
}

namespace {

// Length of the UTF-8 sequence at `pos`, or 0 when it is malformed. Stores the code point.
std::size_t Utf8SequenceAt(std::string_view text, std::size_t pos, char32_t* code_point) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  }
  std::size_t len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    len = 2;
    cp = lead & 0x1F;
    min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3;
    cp = lead & 0x0F;
    min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4;
    cp = lead & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  if (pos + len > text.size()) {
    return 0;
  }
  for (std::size_t i = 1; i < len; ++i) {
    const unsigned char next = byte(pos + i);
    if ((next & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (next & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  *code_point = cp;
  return len;
}

// Deepest nesting of arrays/objects in `text`, stopping early once above `limit`.
int NestingDepth(std::string_view text, int limit) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        ++depth;
        if (depth > max_depth) {
          max_depth = depth;
          if (max_depth > limit) {
            return max_depth;
          }
        }
        break;
      case ']':
      case '}':
        --depth;
        break;
      default:
        break;
    }
  }
  return max_depth;
}

void AppendGoFloat(double value, std::string& out) {
  std::array<char, 64> buffer{};
  const double abs = std::fabs(value);
  const bool exponent = abs != 0 && (abs < 1e-6 || abs >= 1e21);
  const auto [end, ec] =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                    exponent ? std::chars_format::scientific : std::chars_format::fixed);
  std::string text(buffer.data(), end);
  if (exponent) {
    // Go writes e-7, not e-07.
    const std::size_t n = text.size();
    if (n >= 4 && text[n - 4] == 'e' && text[n - 3] == '-' && text[n - 2] == '0') {
      text.erase(n - 2, 1);
    }
  }
  out += text;
}

absl::Status AppendGoJsonAt(const Json& value, std::string& out, int depth, int max_depth) {
  if (depth > max_depth) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON nesting deeper than ", max_depth, " levels"));
  }
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      out += "null";
      return absl::OkStatus();
    case Json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return absl::OkStatus();
    case Json::value_t::number_integer:
      out += std::to_string(value.get<std::int64_t>());
      return absl::OkStatus();
    case Json::value_t::number_unsigned:
      out += std::to_string(value.get<std::uint64_t>());
      return absl::OkStatus();
    case Json::value_t::number_float: {
      const double number = value.get<double>();
      if (!std::isfinite(number)) {
        return absl::InvalidArgumentError("JSON cannot represent NaN or infinity");
      }
      AppendGoFloat(number, out);
      return absl::OkStatus();
    }
    case Json::value_t::string:
      return AppendJsonString(value.get_ref<const std::string&>(), out);
    case Json::value_t::binary:
      return absl::InvalidArgumentError("JSON cannot represent a binary value");
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& element : value.get_ref<const Json::array_t&>()) {
        if (!first) {
          out.push_back(',');
        }
        first = false;
        if (auto status = AppendGoJsonAt(element, out, depth + 1, max_depth); !status.ok()) {
          return status;
        }
      }
      out.push_back(']');
      return absl::OkStatus();
    }
    case Json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const Json::object_t&>()) {
        if (!first) {
          out.push_back(',');
        }
        first = false;
        if (auto status = AppendJsonString(key, out); !status.ok()) {
          return status;
        }
        out.push_back(':');
        if (auto status = AppendGoJsonAt(member, out, depth + 1, max_depth); !status.ok()) {
          return status;
        }
      }
      out.push_back('}');
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown JSON value type");
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    // Fast path for ASCII runs.
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = Utf8SequenceAt(text, pos, &cp);
    if (len == 0) {
      return false;
    }
    pos += len;
  }
  return true;
}

namespace {

// The checks before any parse or validation: the size, no NUL byte, the nesting depth.
absl::Status CheckSizeAndDepth(std::string_view text, const CodecLimits& limits,
                               std::string_view what) {
  if (text.size() > limits.max_event_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " of ", text.size(),
                                                   " bytes exceeds the limit of ",
                                                   limits.max_event_bytes, " bytes"));
  }
  // nlohmann's lexer takes a NUL byte for the end of the input, so it would accept "{}\0junk"
  // as "{}" (and the structured encoding embeds data byte for byte). A NUL is never valid JSON:
  // not between tokens, and escaped inside strings.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " is not valid JSON: a NUL byte at offset ", nul));
  }
  if (const int depth = NestingDepth(text, limits.max_json_depth); depth > limits.max_json_depth) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " nests JSON deeper than ",
                                                   limits.max_json_depth, " levels"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Json> ParseJson(std::string_view text, const CodecLimits& limits,
                               std::string_view what) {
  RETURN_IF_ERROR(CheckSizeAndDepth(text, limits, what));
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " is not valid JSON: ", e.what()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory while parsing ", std::string(what)));
  }
}

absl::Status ValidateJson(std::string_view text, const CodecLimits& limits, std::string_view what) {
  RETURN_IF_ERROR(CheckSizeAndDepth(text, limits, what));
  if (text.starts_with("\xEF\xBB\xBF")) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " starts with a byte order mark"));
  }
  if (!Json::accept(text.begin(), text.end())) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " is not valid JSON"));
  }
  return absl::OkStatus();
}

absl::Status AppendJsonString(std::string_view text, std::string& out) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  out.push_back('"');
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c >= 0x80) {
      char32_t cp = 0;
      const std::size_t len = Utf8SequenceAt(text, pos, &cp);
      if (len == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("string is not valid UTF-8 at byte ", pos, ": ", Quote(text)));
      }
      if (cp == 0x2028 || cp == 0x2029) {
        out += cp == 0x2028 ? "\\u2028" : "\\u2029";
      } else {
        out.append(text.substr(pos, len));
      }
      pos += len;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '<':
      case '>':
      case '&':
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xF]);
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++pos;
  }
  out.push_back('"');
  return absl::OkStatus();
}

absl::Status AppendGoJson(const Json& value, std::string& out, int max_depth) {
  return AppendGoJsonAt(value, out, 0, max_depth);
}

absl::StatusOr<std::string> GoJson(const Json& value, int max_depth) {
  std::string out;
  if (auto status = AppendGoJson(value, out, max_depth); !status.ok()) {
    return status;
  }
  return out;
}

std::string MemberPath(std::string_view parent, std::string_view member) {
  if (parent.empty()) {
    return std::string(member);
  }
  return absl::StrCat(std::string(parent), ".", std::string(member));
}

std::string IndexPath(std::string_view parent, std::size_t index) {
  return absl::StrCat(std::string(parent), "[", index, "]");
}

std::string_view JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

namespace {
absl::Status TypeError(std::string_view path, std::string_view expected, const Json& got) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(path), " must be ",
                                                 std::string(expected), ", got ",
                                                 std::string(JsonTypeName(got))));
}
}  // namespace

absl::StatusOr<std::int64_t> JsonInt64(const Json& value, std::string_view path) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return value.get<std::int64_t>();
  }
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(path), " is outside the int64 range"));
    }
    return static_cast<std::int64_t>(number);
  }
  if (value.is_number_float()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(path),
                     " must be an integer, got a fractional or out-of-range "
                     "number"));
  }
  return TypeError(path, "an integer", value);
}

absl::StatusOr<const Json::array_t*> JsonArray(const Json& value, std::string_view path) {
  if (value.is_null()) {
    return nullptr;
  }
  if (!value.is_array()) {
    return TypeError(path, "an array", value);
  }
  return &value.get_ref<const Json::array_t&>();
}

absl::StatusOr<ObjectReader> ObjectReader::Make(const Json& value, std::string path) {
  if (!value.is_object()) {
    return TypeError(path.empty() ? std::string("JSON document") : path, "an object", value);
  }
  return ObjectReader(&value, std::move(path));
}

const Json* ObjectReader::Find(std::string_view member) const {
  const auto& object = object_->get_ref<const Json::object_t&>();
  const auto it = object.find(member);
  if (it == object.end() || it->second.is_null()) {
    return nullptr;
  }
  return &it->second;
}

absl::Status ObjectReader::Require(std::string_view member) const {
  if (Find(member) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(PathOf(member), " is required"));
  }
  return absl::OkStatus();
}

absl::Status ObjectReader::String(std::string_view member, std::string* out) const {
  std::optional<std::string> value;
  RETURN_IF_ERROR(OptionalString(member, &value));
  *out = std::move(value).value_or("");
  return absl::OkStatus();
}

absl::Status ObjectReader::OptionalString(std::string_view member,
                                          std::optional<std::string>* out) const {
  const Json* value = Find(member);
  if (value != nullptr && !value->is_string()) {
    return TypeError(PathOf(member), "a string", *value);
  }
  *out = value != nullptr ? std::optional<std::string>(value->get<std::string>()) : std::nullopt;
  return absl::OkStatus();
}

absl::Status ObjectReader::Int64(std::string_view member, std::int64_t* out) const {
  std::optional<std::int64_t> value;
  RETURN_IF_ERROR(OptionalInt64(member, &value));
  *out = value.value_or(0);
  return absl::OkStatus();
}

absl::Status ObjectReader::OptionalInt64(std::string_view member,
                                         std::optional<std::int64_t>* out) const {
  const Json* value = Find(member);
  if (value == nullptr) {
    out->reset();
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(*out, JsonInt64(*value, PathOf(member)));
  return absl::OkStatus();
}

absl::Status ObjectReader::Int32(std::string_view member, std::int32_t* out) const {
  std::int64_t wide = 0;
  if (auto status = Int64(member, &wide); !status.ok()) {
    return status;
  }
  if (wide < std::numeric_limits<std::int32_t>::min() ||
      wide > std::numeric_limits<std::int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(PathOf(member), " is outside the int32 range: ", wide));
  }
  *out = static_cast<std::int32_t>(wide);
  return absl::OkStatus();
}

absl::Status ObjectReader::Bool(std::string_view member, bool* out) const {
  const Json* value = Find(member);
  if (value == nullptr) {
    *out = false;
    return absl::OkStatus();
  }
  if (!value->is_boolean()) {
    return TypeError(PathOf(member), "a boolean", *value);
  }
  *out = value->get<bool>();
  return absl::OkStatus();
}

absl::Status ObjectReader::StringList(std::string_view member,
                                      std::vector<std::string>* out) const {
  out->clear();
  const Json* value = Find(member);
  if (value == nullptr) {
    return absl::OkStatus();
  }
  const std::string path = PathOf(member);
  auto array = JsonArray(*value, path);
  if (!array.ok()) {
    return array.status();
  }
  out->reserve((*array)->size());
  for (std::size_t i = 0; i < (*array)->size(); ++i) {
    const Json& element = (**array)[i];
    if (!element.is_string()) {
      return TypeError(IndexPath(path, i), "a string", element);
    }
    out->push_back(element.get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status ObjectReader::StringMap(std::string_view member,
                                     std::map<std::string, std::string>* out) const {
  out->clear();
  const Json* value = Find(member);
  if (value == nullptr) {
    return absl::OkStatus();
  }
  if (!value->is_object()) {
    return TypeError(PathOf(member), "an object", *value);
  }
  const std::string path = PathOf(member);
  for (const auto& [key, element] : value->get_ref<const Json::object_t&>()) {
    if (!element.is_string()) {
      return TypeError(MemberPath(path, key), "a string", element);
    }
    out->emplace(key, element.get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace mmi::cloudevents::internal
