#include "services/status-sink/decoding/internal/json_tree.h"

#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace mmi::status_sink::internal {
namespace {

using Json = nlohmann::json;
using simdjson::dom::element_type;

// Initial document capacity; simdjson grows it (once) for larger documents.
constexpr std::size_t kInitialCapacity = 64 * 1024;

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

// Appends the decimal digits of an integer.
template <typename Int>
void AppendInt(Int value, std::string& out) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof(buffer), value).ptr;
  out.append(buffer, end);
}

static_assert(std::endian::native == std::endian::little,
              "NextEscape reads the lowest byte of a word first");

// The first position at or after `from` of a byte dump() escapes ('"', '\\', below 0x20), or
// text.size(). Eight bytes at a time: most strings have none.
std::size_t NextEscape(std::string_view text, std::size_t from) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  std::size_t i = from;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + i, 8);
    const std::uint64_t quote = word ^ (kOnes * '"');
    const std::uint64_t backslash = word ^ (kOnes * '\\');
    // A byte of zero in `quote` or `backslash`, or a byte below 0x20 in `word` (bytes of 0x80
    // and above excluded by ~word), sets that byte's high bit; the lowest such bit is exact.
    const std::uint64_t found = (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
                                 ((word - kOnes * 0x20) & ~word)) &
                                kHighs;
    if (found != 0) {
      return i + static_cast<std::size_t>(std::countr_zero(found)) / 8;
    }
  }
  for (; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == '"' || c == '\\') {
      return i;
    }
  }
  return i;
}

// Sorts [begin, end) by key, keeping the document order of equal keys: insertion sort for the
// few members an object usually has (no allocation), std::stable_sort beyond.
template <typename It>
void SortByKey(It begin, It end) {
  if (end - begin > 32) {
    std::stable_sort(begin, end, [](const auto& a, const auto& b) { return a.first < b.first; });
    return;
  }
  for (It i = begin + (begin == end ? 0 : 1); i < end; ++i) {
    auto member = *i;
    It j = i;
    for (; j != begin && member.first < (j - 1)->first; --j) {
      *j = *(j - 1);
    }
    *j = member;
  }
}

// The letter of the two-character escape dump() writes for `c`, or 0 for \u00xx.
char ShortEscape(unsigned char c) {
  switch (c) {
    case '"':
      return '"';
    case '\\':
      return '\\';
    case '\b':
      return 'b';
    case '\t':
      return 't';
    case '\n':
      return 'n';
    case '\f':
      return 'f';
    case '\r':
      return 'r';
    default:
      return 0;
  }
}

}  // namespace

void AppendDumpString(std::string_view text, std::string& out) {
  // nlohmann's dump_escaped with ensure_ascii off: '"' and '\\' escaped, the control characters
  // below 0x20 as their short escapes or \u00xx (lower-case hex), every other byte as it is.
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t plain = 0;  // start of the run of bytes copied as they are
  for (std::size_t i = NextEscape(text, 0); i < text.size(); i = NextEscape(text, i + 1)) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.append(text.data() + plain, i - plain);
    plain = i + 1;
    out.push_back('\\');
    if (const char letter = ShortEscape(c); letter != 0) {
      out.push_back(letter);
    } else {
      out.append("u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out.push_back('"');
}

namespace {

using Member = std::pair<std::string_view, simdjson::dom::element>;

// AppendDump's walk. With `skip` (and `path`) the members it names are left out, and `path` is
// kept up to date for it. Every object's members are sorted in one vector shared by the whole
// walk (a stack of ranges, one per open object): no allocation per object once warm.
class Dumper {
 public:
  Dumper(int max_depth, std::vector<Member>& members, std::string& discard,
         std::vector<DumpPathStep>* path, const DumpSkip* skip)
      : max_depth_(max_depth), members_(members), discard_(discard), path_(path), skip_(skip) {}

  bool Value(const simdjson::dom::element& element, int depth, std::string& out) {
    switch (element.type()) {
      case element_type::OBJECT:
        return Object(element, depth, out);
      case element_type::ARRAY:
        return Array(element, depth, out);
      case element_type::STRING:
        AppendDumpString(element.get_string().value_unsafe(), out);
        return true;
      case element_type::INT64:
        AppendInt(element.get_int64().value_unsafe(), out);
        return true;
      case element_type::UINT64:
        AppendInt(element.get_uint64().value_unsafe(), out);
        return true;
      case element_type::DOUBLE: {
        const double value = element.get_double().value_unsafe();
        if (value == 0 && std::signbit(value)) {
          return false;  // as BuildTree
        }
        // Rare in a status: nlohmann's own number formatting, so the text is its to the byte.
        out += Json(value).dump();
        return true;
      }
      case element_type::BOOL:
        out.append(element.get_bool().value_unsafe() ? "true" : "false");
        return true;
      case element_type::NULL_VALUE:
        out.append("null");
        return true;
    }
    return false;
  }

 private:
  bool Object(const simdjson::dom::element& element, int depth, std::string& out) {
    if (depth + 1 > max_depth_) {
      return false;
    }
    // nlohmann's object is a std::map: members in key order, a duplicate key keeping the last
    // value (every value is still checked, as BuildTree builds each).
    const std::size_t begin = members_.size();
    const simdjson::dom::object fields = element.get_object().value_unsafe();
    for (const auto field : fields) {
      members_.emplace_back(field.key, field.value);
    }
    const std::size_t end = members_.size();
    SortByKey(members_.begin() + static_cast<std::ptrdiff_t>(begin), members_.end());
    out.push_back('{');
    bool ok = true;
    bool first = true;
    // By index and by value: the nested objects below push onto (and may move) members_.
    for (std::size_t i = begin; ok && i < end; ++i) {
      const Member member = members_[i];
      const bool overwritten = i + 1 < end && members_[i + 1].first == member.first;
      if (overwritten || (path_ != nullptr && (*skip_)(*path_, member.first))) {
        // Not written, but checked as BuildTree would build it.
        discard_.clear();
        Dumper check(max_depth_, members_, discard_, nullptr, nullptr);
        ok = check.Value(member.second, depth + 1, discard_);
        continue;
      }
      if (!first) {
        out.push_back(',');
      }
      first = false;
      AppendDumpString(member.first, out);
      out.push_back(':');
      if (path_ != nullptr) {
        path_->push_back({.key = member.first});
      }
      ok = Value(member.second, depth + 1, out);
      if (path_ != nullptr) {
        path_->pop_back();
      }
    }
    members_.resize(begin);
    out.push_back('}');
    return ok;
  }

  bool Array(const simdjson::dom::element& element, int depth, std::string& out) {
    if (depth + 1 > max_depth_) {
      return false;
    }
    out.push_back('[');
    if (path_ != nullptr) {
      path_->push_back({.key = {}, .array_items = true});
    }
    bool ok = true;
    bool first = true;
    const simdjson::dom::array items = element.get_array().value_unsafe();  // see Object()
    for (const auto item : items) {
      if (!first) {
        out.push_back(',');
      }
      first = false;
      if (!Value(item, depth + 1, out)) {
        ok = false;
        break;
      }
    }
    if (path_ != nullptr) {
      path_->pop_back();
    }
    out.push_back(']');
    return ok;
  }

  const int max_depth_;
  std::vector<Member>& members_;
  std::string& discard_;  // what checked-only values write
  std::vector<DumpPathStep>* const path_;
  const DumpSkip* const skip_;
};

// The walk's member stack and the text of checked-only values, kept per thread between calls.
std::vector<Member>& MemberStack() {
  thread_local std::vector<Member> members;
  members.clear();
  return members;
}

std::string& Discard() {
  thread_local std::string discard;
  return discard;
}

}  // namespace

bool AppendDump(const simdjson::dom::element& element, int max_depth, std::string& out) {
  return Dumper(max_depth, MemberStack(), Discard(), nullptr, nullptr).Value(element, 0, out);
}

bool AppendDump(const simdjson::dom::element& element, int max_depth, DumpSkip skip,
                std::string& out) {
  thread_local std::vector<DumpPathStep> path;
  path.clear();
  return Dumper(max_depth, MemberStack(), Discard(), &path, &skip).Value(element, 0, out);
}

bool IsPlainJsonText(std::string_view text) {
  // No byte below 0x20, and no "\\u" followed by d/D and 8-9/a-f/A-F (an escape in
  // U+D800..U+DFFF). Searching for each "\\u" in turn cost ~27 us on a 20 KB status payload,
  // whose embedded JSON text escapes every quote with a backslash: both are looked for at once,
  // 16 starting positions at a time where SSE2 is there, then byte by byte for the rest.
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::size_t i = 0;
#if defined(__SSE2__)
  const auto load = [bytes](std::size_t at) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + at));
  };
  // Bytes of `v` that are at most `max` (unsigned).
  const auto at_most = [](__m128i v, char max) {
    return _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(max)), v);
  };
  const __m128i lower = _mm_set1_epi8(0x20);
  __m128i found = _mm_setzero_si128();
  for (; i + 19 <= size; i += 16) {
    const __m128i first = load(i);
    const __m128i next = load(i + 3);
    const __m128i hex =
        _mm_or_si128(at_most(_mm_sub_epi8(next, _mm_set1_epi8('8')), 1),
                     at_most(_mm_sub_epi8(_mm_or_si128(next, lower), _mm_set1_epi8('a')), 5));
    const __m128i surrogate = _mm_and_si128(
        _mm_and_si128(_mm_cmpeq_epi8(first, _mm_set1_epi8('\\')),
                      _mm_cmpeq_epi8(load(i + 1), _mm_set1_epi8('u'))),
        _mm_and_si128(_mm_cmpeq_epi8(_mm_or_si128(load(i + 2), lower), _mm_set1_epi8('d')), hex));
    found = _mm_or_si128(found, _mm_or_si128(at_most(first, 0x1f), surrogate));
  }
  if (_mm_movemask_epi8(found) != 0) {
    return false;
  }
#endif
  for (; i < size; ++i) {
    if (bytes[i] < 0x20) {
      return false;
    }
    if (bytes[i] == '\\' && i + 3 < size && bytes[i + 1] == 'u' && (bytes[i + 2] | 0x20) == 'd') {
      const unsigned char next = bytes[i + 3];
      if ((next >= '8' && next <= '9') || ((next | 0x20) >= 'a' && (next | 0x20) <= 'f')) {
        return false;
      }
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

bool JsonTreeParser::Index(std::string_view text, simdjson::dom::element& root) {
  return IsPlainJsonText(text) &&
         impl_->parser.parse(text.data(), text.size()).get(root) == simdjson::SUCCESS;
}

std::optional<Json> JsonTreeParser::Parse(std::string_view text, int max_depth) {
  simdjson::dom::element root;
  if (!Index(text, root)) {
    return std::nullopt;
  }
  Json out;
  if (!BuildTree(root, max_depth, out)) {
    return std::nullopt;
  }
  return out;
}

}  // namespace mmi::status_sink::internal
