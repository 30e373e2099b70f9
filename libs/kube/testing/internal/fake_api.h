// What FakeKubeClient's verbs share with its watches: API errors as the API server words them,
// and which objects a request's namespace and selectors pick. Test-only (mmi::kube_testing).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "libs/kube/resource.h"
#include "nlohmann/json.hpp"

namespace mmi::kube::testing::internal {

// A metav1.Status of a failure, as the API server sends it.
nlohmann::json FailureStatus(int code, const std::string& reason, const std::string& message);
// That failure as the Status an HTTP client returns for `context` ("GET /api/...").
absl::Status ApiError(const std::string& context, int code, const std::string& reason,
                      const std::string& message);

// metadata.<key> when it is a string, else "".
std::string MetaString(const nlohmann::json& object, const char* key);
// Equality-based label selectors: "a=b", "a==b", "a!=b", "a", "!a", comma-separated.
bool MatchesLabels(const nlohmann::json& object, const std::string& selector);
// Field selectors on metadata.name and metadata.namespace ("" matches everything).
bool MatchesFields(const nlohmann::json& object, const std::string& selector);
// The object is in `ref`'s namespace (any, when `ref` has none).
bool InScope(const ResourceRef& ref, const nlohmann::json& object);

}  // namespace mmi::kube::testing::internal
