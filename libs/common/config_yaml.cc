#include "libs/common/config_yaml.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mmi::config {

std::string YamlSection::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", std::string(key));
}

YAML::Node YamlSection::Child(const char* key) {
  reader_->known_[path_].insert(key);
  if (!node_ || !node_.IsMap()) {
    return YAML::Node(YAML::NodeType::Undefined);
  }
  const YAML::Node& map = node_;  // const: a lookup never inserts the key
  return map[key];
}

bool YamlSection::Has(const char* key) {
  const YAML::Node v = Child(key);
  return v && !v.IsNull();
}

YamlSection YamlSection::Section(const char* key) {
  YAML::Node v = Child(key);
  if (v && !v.IsNull() && !v.IsMap()) {
    Error(key, "expected a mapping");
    v = YAML::Node(YAML::NodeType::Undefined);
  }
  reader_->sections_.insert(PathOf(key));
  return YamlSection(*reader_, v, PathOf(key));
}

void YamlSection::StringMap(const char* key, std::map<std::string, std::string>& out) {
  const YAML::Node v = Child(key);
  if (!v || v.IsNull()) {
    return;
  }
  if (!v.IsMap()) {
    Error(key, "expected a mapping of strings");
    return;
  }
  for (const auto& kv : v) {
    try {
      out[kv.first.as<std::string>()] = kv.second.as<std::string>();
    } catch (const std::exception&) {
      Error(key, "values must be strings");
    }
  }
}

void YamlSection::Error(const char* key, std::string_view message) {
  reader_->AddError(absl::StrCat(PathOf(key), ": ", std::string(message)));
}

YamlReader::YamlReader(std::string_view text) {
  try {
    root_ = YAML::Load(std::string(text));
  } catch (const std::exception& e) {
    errors_.push_back(absl::StrCat("config file is not valid YAML: ", e.what()));
    root_ = YAML::Node();
    return;
  }
  if (root_ && !root_.IsNull() && !root_.IsMap()) {
    errors_.emplace_back("config file: the top level must be a mapping");
    root_ = YAML::Node();
  }
}

YamlSection YamlReader::Root() { return YamlSection(*this, root_, ""); }

void YamlReader::AddError(std::string error) { errors_.push_back(std::move(error)); }

void YamlReader::UnknownKeys(const YAML::Node& node, const std::string& path,
                             std::vector<std::string>& errors) const {
  static const std::set<std::string> kNone;
  const auto found = known_.find(path);
  const std::set<std::string>& known = found == known_.end() ? kNone : found->second;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      errors.push_back(absl::StrCat(path.empty() ? "config file" : path, ": keys must be strings"));
      continue;
    }
    const std::string& key = kv.first.Scalar();
    const std::string child = path.empty() ? key : absl::StrCat(path, ".", key);
    if (!known.contains(key)) {
      errors.push_back(known.empty() ? absl::StrCat(child, ": unknown key")
                                     : absl::StrCat(child, ": unknown key (expected one of: ",
                                                    absl::StrJoin(known, ", "), ")"));
      continue;
    }
    if (kv.second.IsMap() && sections_.contains(child)) {
      UnknownKeys(kv.second, child, errors);
    }
  }
}

absl::Status YamlReader::Finish() const {
  std::vector<std::string> errors = errors_;
  if (root_ && root_.IsMap()) {
    UnknownKeys(root_, "", errors);
  }
  if (errors.empty()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
}

}  // namespace mmi::config
