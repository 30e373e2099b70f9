#include "services/status-sink/internal/json_tree.h"

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace mmi::status_sink::internal {
namespace {

using Json = nlohmann::json;
using simdjson::dom::element_type;

// Initial document capacity; simdjson grows it (once) for larger documents.
constexpr std::size_t kInitialCapacity = 64 * 1024;

bool IsSurrogateEscape(std::string_view text, std::size_t pos) {
  // pos is at the backslash of "\uXXXX"; surrogates are U+D800..U+DFFF.
  if (pos + 3 >= text.size()) {
    return false;
  }
  const char high = text[pos + 2];
  const char next = text[pos + 3];
  return (high == 'd' || high == 'D') &&
         ((next >= '8' && next <= '9') || (next >= 'a' && next <= 'f') ||
          (next >= 'A' && next <= 'F'));
}

bool BuildAt(const simdjson::dom::element& element, int depth, int max_depth, Json& out) {
  switch (element.type()) {
    case element_type::OBJECT: {
      if (depth + 1 > max_depth) {
        return false;
      }
      out = Json::object();
      auto& object = out.get_ref<Json::object_t&>();
      // Handles copied out first: a range-for over value_unsafe() of the temporary result
      // would iterate a destroyed object.
      const simdjson::dom::object fields = element.get_object().value_unsafe();
      for (const auto field : fields) {
        // operator[]: a duplicate key overwrites the earlier value, as nlohmann's parser does.
        if (!BuildAt(field.value, depth + 1, max_depth, object[std::string(field.key)])) {
          return false;
        }
      }
      return true;
    }
    case element_type::ARRAY: {
      if (depth + 1 > max_depth) {
        return false;
      }
      out = Json::array();
      auto& array = out.get_ref<Json::array_t&>();
      const auto items = element.get_array().value_unsafe();
      array.reserve(items.size());
      for (const auto item : items) {
        if (!BuildAt(item, depth + 1, max_depth, array.emplace_back())) {
          return false;
        }
      }
      return true;
    }
    case element_type::STRING:
      out = std::string(element.get_string().value_unsafe());
      return true;
    case element_type::INT64: {
      // nlohmann keeps a literal without a minus sign unsigned.
      const std::int64_t value = element.get_int64().value_unsafe();
      if (value >= 0) {
        out = static_cast<std::uint64_t>(value);
      } else {
        out = value;
      }
      return true;
    }
    case element_type::UINT64:
      out = element.get_uint64().value_unsafe();
      return true;
    case element_type::DOUBLE: {
      const double value = element.get_double().value_unsafe();
      if (value == 0 && std::signbit(value)) {
        return false;  // "-0" is an integer 0 for nlohmann, -0.0 for simdjson
      }
      out = value;
      return true;
    }
    case element_type::BOOL:
      out = element.get_bool().value_unsafe();
      return true;
    case element_type::NULL_VALUE:
      out = nullptr;
      return true;
  }
  return false;
}

}  // namespace

bool IsPlainJsonText(std::string_view text) {
  // Branch-free over the whole text, so that the compiler vectorises it.
  unsigned control = 0;
  for (const char c : text) {
    control |= static_cast<unsigned>(static_cast<unsigned char>(c) < 0x20);
  }
  if (control != 0) {
    return false;
  }
  for (std::size_t pos = text.find("\\u"); pos != std::string_view::npos;
       pos = text.find("\\u", pos + 2)) {
    if (IsSurrogateEscape(text, pos)) {
      return false;
    }
  }
  return true;
}

bool BuildTree(const simdjson::dom::element& element, int max_depth, Json& out) {
  return BuildAt(element, 0, max_depth, out);
}

struct JsonTreeParser::Impl {
  simdjson::dom::parser parser;
};

JsonTreeParser::JsonTreeParser() : impl_(std::make_unique<Impl>()) {
  // Depth is checked while building; simdjson's own limit only bounds its stack. A failed
  // allocation here is retried by the first parse, which then reports it.
  const auto allocated = impl_->parser.allocate(kInitialCapacity);
  static_cast<void>(allocated);
}

JsonTreeParser::~JsonTreeParser() = default;

std::optional<Json> JsonTreeParser::Parse(std::string_view text, int max_depth) {
  if (!IsPlainJsonText(text)) {
    return std::nullopt;
  }
  simdjson::dom::element root;
  if (impl_->parser.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  Json out;
  if (!BuildTree(root, max_depth, out)) {
    return std::nullopt;
  }
  return out;
}

}  // namespace mmi::status_sink::internal
