// Naming a Kubernetes resource collection and building API paths for it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mmi::kube {

// One resource collection: group/version/resource (plural) plus an optional namespace.
//   {"argoproj.io", "v1alpha1", "applications", "argocd"}  namespaced, in "argocd"
//   {"argoproj.io", "v1alpha1", "applications", ""}        all namespaces (list/watch only)
//   {"", "v1", "namespaces", ""}                           cluster-scoped, core group
// An empty `group` means the core group (`/api/v1`). For cluster-scoped resources leave
// `namespace_name` empty.
struct ResourceRef {
  std::string group;
  std::string version;
  std::string resource;        // plural, lower case: "applications", "leases"
  std::string namespace_name;  // "" = cluster-scoped, or all namespaces for list/watch

  // The same collection in another namespace.
  ResourceRef InNamespace(std::string ns) const {
    ResourceRef copy = *this;
    copy.namespace_name = std::move(ns);
    return copy;
  }
  // "applications.argoproj.io" (or "namespaces" for the core group), for messages and metrics.
  std::string GroupResource() const;
  // "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications".
  std::string CollectionPath() const;
  // CollectionPath() + "/" + escaped name [+ "/" + subresource].
  std::string ObjectPath(std::string_view name, std::string_view subresource = "") const;

  friend bool operator==(const ResourceRef&, const ResourceRef&) = default;
};

// Query parameters in order; values are percent-encoded by BuildQuery.
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// "?a=1&b=x%3Dy" (empty string when `params` is empty). Empty values are kept.
std::string BuildQuery(const QueryParams& params);

// RFC 3986 percent-encoding of everything except unreserved characters (A-Z a-z 0-9 - . _ ~).
std::string PercentEncode(std::string_view text);

}  // namespace mmi::kube
