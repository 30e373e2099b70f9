// JSON text to an nlohmann::json tree through simdjson: the text is indexed once (SIMD) and the
// tree built from the index, several times faster than nlohmann's own parser, which reads the
// text byte by byte. The tree is the one nlohmann::json::parse builds (same value types:
// non-negative integers unsigned, negative ones signed, the rest double; the last of duplicate
// keys wins).
//
// Both parsers accept the same well-formed JSON, but they differ at the edges (unescaped control
// characters, lone surrogate escapes, -0, integers beyond 64 bits, depth counting). Wherever
// they could, these helpers refuse to vouch (nullopt / false) rather than guess: the caller then
// takes nlohmann's path, so a result from here is always what nlohmann would give.
//
// Not thread-safe: a parser keeps its buffers between calls (no allocation per document once
// warm); use one per thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"

namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

namespace mmi::status_sink::internal {

// True when `text` has no byte below 0x20 (raw control characters, including the whitespace
// that compact JSON does not use) and no \u escape of a UTF-16 surrogate: the text on which
// simdjson and nlohmann are known to agree.
bool IsPlainJsonText(std::string_view text);

// nlohmann's tree of `element`, refusing (false) -0 and nesting deeper than `max_depth` (the
// root container counts 1, as CodecLimits::max_json_depth does).
bool BuildTree(const simdjson::dom::element& element, int max_depth, nlohmann::json& out);

// Appends to `out` the text nlohmann's dump() (compact, error_handler replace) writes for the tree
// BuildTree makes of `element`, without building it: object members in key order, the last of
// duplicate keys. False (and `out` partly written) where BuildTree refuses.
bool AppendDump(const simdjson::dom::element& element, int max_depth, std::string& out);
// One step from the root down to an object: into a member (`key`), or into an array's items.
struct DumpPathStep {
  std::string_view key;  // empty for array items
  bool array_items = false;
  friend bool operator==(const DumpPathStep&, const DumpPathStep&) = default;
};
// Whether AppendDump leaves an object member out: `path` leads from the root to the member's
// object, `key` names the member.
using DumpSkip = absl::FunctionRef<bool(absl::Span<const DumpPathStep> path, std::string_view key)>;
// AppendDump without the members `skip` names (the skipped values are still checked).
// Both AppendDump()s keep per-thread scratch: `skip` must not call AppendDump.
bool AppendDump(const simdjson::dom::element& element, int max_depth, DumpSkip skip,
                std::string& out);
// Appends `text` as dump() writes a string (valid UTF-8, as simdjson hands it out).
void AppendDumpString(std::string_view text, std::string& out);

class JsonTreeParser {
 public:
  JsonTreeParser();
  ~JsonTreeParser();
  JsonTreeParser(const JsonTreeParser&) = delete;
  JsonTreeParser& operator=(const JsonTreeParser&) = delete;

  // What nlohmann::json::parse(text) returns, or nullopt when this parser cannot vouch for it
  // (not plain text, invalid, deeper than `max_depth`, or an edge case above).
  std::optional<nlohmann::json> Parse(std::string_view text, int max_depth);
  // Parse() without the tree: its checks up to the tree (plain text, valid JSON), and the root
  // element in `root`, valid until the next call. False where Parse() gives nullopt for them;
  // BuildTree's own checks (depth, -0) are the caller's, e.g. through AppendDump().
  bool Index(std::string_view text, simdjson::dom::element& root);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mmi::status_sink::internal
