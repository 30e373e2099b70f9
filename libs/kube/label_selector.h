// A Kubernetes label selector (metav1.LabelSelector: `matchLabels` and `matchExpressions`),
// evaluated as the API server evaluates it: every requirement must hold, and an empty selector
// matches every object. Pure and thread-safe.
//
//   ASSIGN_OR_RETURN(auto selector, kube::LabelSelector::FromJson(spec["selector"]));
//   if (selector.Matches(LabelsOf(object))) { ... }
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace mmi::kube {

class LabelSelector {
 public:
  // From the JSON object. kInvalidArgument naming the member when it is not a selector the API
  // server would accept: a non-object, a non-string label value, an unknown operator, values on
  // Exists/DoesNotExist, no values on In/NotIn. null is the empty selector.
  static absl::StatusOr<LabelSelector> FromJson(const nlohmann::json& selector);

  bool Matches(const std::map<std::string, std::string>& labels) const;
  // No requirement: matches everything.
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kIn, kNotIn, kExists, kDoesNotExist };
  struct Requirement {
    std::string key;
    Op op = Op::kIn;
    std::set<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

// `metadata.labels` of an object as a map (non-string values are skipped).
std::map<std::string, std::string> LabelsOf(const nlohmann::json& object);

}  // namespace mmi::kube
