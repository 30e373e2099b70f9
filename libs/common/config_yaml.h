// Typed reads of a YAML config file into plain Settings structs, the one reader both services
// use (STYLE.md §2: validate at start-up, report errors by full field path).
//
//   config::YamlReader reader(text);
//   config::YamlSection kube = reader.Root().Section("kube");
//   kube.Scalar("qps", settings.kube.qps);           // "kube.qps: expected a number, got 'x'"
//   kube.Duration("requestTimeout", settings.kube.request_timeout);
//   RETURN_IF_ERROR(reader.Finish());                // also: "kube.qsp: unknown key (...)"
//
// A key that is absent or null keeps the default already in the struct. Every read names its key,
// so the reader knows the schema: Finish() reports each key of the file that no read named, with
// its full path, so a misspelt key fails start-up instead of being ignored.
//
// Thread safety: none; one thread reads one file at start-up. Sections borrow their reader, which
// must outlive them. Never throws (yaml-cpp's exceptions are caught and reported as errors).
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "libs/common/config.h"

namespace mmi::config {

class YamlReader;

// One mapping of the file at a field path ("" for the top level, "transport.mqtt", ...). An absent
// section reads as empty: every read keeps its default.
class YamlSection {
 public:
  // "<path>.<key>", or "<key>" at the top level.
  std::string PathOf(std::string_view key) const;
  const std::string& path() const { return path_; }

  // True when `key` is present and not null.
  bool Has(const char* key);
  // The mapping under `key` (empty when absent; an error when present but not a mapping).
  YamlSection Section(const char* key);
  // A string, bool, integer or floating-point scalar under `key`. A value of the wrong type
  // leaves `out` as it was and is reported as "<path>: expected a <type>, got '<value>'".
  template <typename T>
  void Scalar(const char* key, T& out);
  // A Go-style duration string ("500ms", "10s", "1h30m"; config::ParseDuration) into any
  // std::chrono::duration.
  template <typename D>
  void Duration(const char* key, D& out);
  // A free-form mapping of string values (any keys accepted, e.g. librdkafka properties).
  void StringMap(const char* key, std::map<std::string, std::string>& out);
  // Reports "<path>.<key>: <message>" (a value of the right type that is still wrong).
  void Error(const char* key, std::string_view message);

 private:
  friend class YamlReader;
  YamlSection(YamlReader& reader, YAML::Node node, std::string path)
      : reader_(&reader), node_(std::move(node)), path_(std::move(path)) {}
  // The value under `key` (undefined when absent or when this section is not a mapping), and
  // `key` recorded as known at this path.
  YAML::Node Child(const char* key);
  template <typename T>
  static const char* TypeName();

  YamlReader* reader_;
  YAML::Node node_;
  std::string path_;
};

class YamlReader {
 public:
  // Parses `text`; a syntax error or a top level that is not a mapping is reported by Finish()
  // (the sections then read as empty).
  explicit YamlReader(std::string_view text);
  YamlReader(const YamlReader&) = delete;
  YamlReader& operator=(const YamlReader&) = delete;

  // The top-level mapping.
  YamlSection Root();
  // Adds one error line as is (it should start with the field path).
  void AddError(std::string error);
  // OK, or kInvalidArgument with every problem ("<path>: <what>", joined by "; "): the read
  // errors in read order, then every key no read named.
  absl::Status Finish() const;

 private:
  friend class YamlSection;
  void UnknownKeys(const YAML::Node& node, const std::string& path,
                   std::vector<std::string>& errors) const;

  YAML::Node root_;
  std::vector<std::string> errors_;
  // Keys each read named, by the path of their mapping.
  std::map<std::string, std::set<std::string>, std::less<>> known_;
  // Paths of the mappings read with Section(): only their keys are checked (a free-form
  // StringMap, or a mapping where a scalar belongs, already got its own error).
  std::set<std::string, std::less<>> sections_;
};

template <typename T>
const char* YamlSection::TypeName() {
  if constexpr (std::is_same_v<T, bool>) {
    return "boolean";
  } else if constexpr (std::is_integral_v<T>) {
    return "integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "number";
  } else {
    return "string";
  }
}

template <typename T>
void YamlSection::Scalar(const char* key, T& out) {
  const YAML::Node v = Child(key);
  if (!v || v.IsNull()) {
    return;
  }
  bool ok = v.IsScalar();
  if (ok) {
    try {
      out = v.as<T>();
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok) {
    Error(key, std::string("expected a ") + TypeName<T>() + ", got '" +
                   (v.IsScalar() ? v.Scalar() : std::string("<non-scalar>")) + "'");
  }
}

template <typename D>
void YamlSection::Duration(const char* key, D& out) {
  std::string text;
  Scalar(key, text);
  if (text.empty()) {
    return;
  }
  auto parsed = ParseDuration(text);
  if (!parsed.ok()) {
    Error(key, std::string(parsed.status().message()));
    return;
  }
  out = std::chrono::duration_cast<D>(*parsed);
}

}  // namespace mmi::config
