#include "libs/kube/resource.h"

#include "absl/strings/str_cat.h"

namespace mmi::kube {

std::string ResourceRef::GroupResource() const {
  if (group.empty()) {
    return resource;
  }
  return absl::StrCat(resource, ".", group);
}

std::string ResourceRef::CollectionPath() const {
  std::string path =
      group.empty() ? absl::StrCat("/api/", version) : absl::StrCat("/apis/", group, "/", version);
  if (!namespace_name.empty()) {
    absl::StrAppend(&path, "/namespaces/", PercentEncode(namespace_name));
  }
  absl::StrAppend(&path, "/", resource);
  return path;
}

std::string ResourceRef::ObjectPath(std::string_view name, std::string_view subresource) const {
  std::string path = absl::StrCat(CollectionPath(), "/", PercentEncode(name));
  if (!subresource.empty()) {
    absl::StrAppend(&path, "/", std::string(subresource));
  }
  return path;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool unreserved = (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') ||
                            (u >= '0' && u <= '9') || u == '-' || u == '.' || u == '_' || u == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0x0F]);
    }
  }
  return out;
}

std::string BuildQuery(const QueryParams& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    out.push_back(out.empty() ? '?' : '&');
    absl::StrAppend(&out, PercentEncode(key), "=", PercentEncode(value));
  }
  return out;
}

}  // namespace mmi::kube
