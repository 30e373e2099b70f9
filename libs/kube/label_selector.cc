#include "libs/kube/label_selector.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace mmi::kube {

absl::StatusOr<LabelSelector> LabelSelector::FromJson(const nlohmann::json& selector) {
  LabelSelector out;
  if (selector.is_null()) {
    return out;
  }
  if (!selector.is_object()) {
    return absl::InvalidArgumentError("label selector: not an object");
  }
  if (auto it = selector.find("matchLabels"); it != selector.end() && !it->is_null()) {
    if (!it->is_object()) {
      return absl::InvalidArgumentError("label selector: matchLabels is not an object");
    }
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("label selector: matchLabels[", key, "] is not a string"));
      }
      out.requirements_.push_back({key, Op::kIn, {value.get<std::string>()}});
    }
  }
  if (auto it = selector.find("matchExpressions"); it != selector.end() && !it->is_null()) {
    if (!it->is_array()) {
      return absl::InvalidArgumentError("label selector: matchExpressions is not a list");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& e = (*it)[i];
      const std::string where = absl::StrCat("label selector: matchExpressions[", i, "]");
      if (!e.is_object() || !e.contains("key") || !e["key"].is_string() ||
          !e.contains("operator") || !e["operator"].is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(where, " needs a key and an operator"));
      }
      Requirement r;
      r.key = e["key"].get<std::string>();
      const std::string op = e["operator"].get<std::string>();
      if (op == "In") {
        r.op = Op::kIn;
      } else if (op == "NotIn") {
        r.op = Op::kNotIn;
      } else if (op == "Exists") {
        r.op = Op::kExists;
      } else if (op == "DoesNotExist") {
        r.op = Op::kDoesNotExist;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(where, ": unknown operator \"", op, "\""));
      }
      if (auto values = e.find("values"); values != e.end() && !values->is_null()) {
        if (!values->is_array()) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": values is not a list"));
        }
        for (const nlohmann::json& v : *values) {
          if (!v.is_string()) {
            return absl::InvalidArgumentError(absl::StrCat(where, ": a value is not a string"));
          }
          r.values.insert(v.get<std::string>());
        }
      }
      const bool wants_values = r.op == Op::kIn || r.op == Op::kNotIn;
      if (wants_values == r.values.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, wants_values ? ": In and NotIn need values" : ": Exists takes no values"));
      }
      out.requirements_.push_back(std::move(r));
    }
  }
  return out;
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const Requirement& r : requirements_) {
    const auto it = labels.find(r.key);
    const bool present = it != labels.end();
    switch (r.op) {
      case Op::kIn:
        if (!present || !r.values.contains(it->second)) {
          return false;
        }
        break;
      case Op::kNotIn:
        if (present && r.values.contains(it->second)) {
          return false;
        }
        break;
      case Op::kExists:
        if (!present) {
          return false;
        }
        break;
      case Op::kDoesNotExist:
        if (present) {
          return false;
        }
        break;
    }
  }
  return true;
}

std::map<std::string, std::string> LabelsOf(const nlohmann::json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) {
    return out;
  }
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return out;
  }
  const auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) {
    return out;
  }
  for (const auto& [key, value] : labels->items()) {
    if (value.is_string()) {
      out.emplace(key, value.get<std::string>());
    }
  }
  return out;
}

}  // namespace mmi::kube
