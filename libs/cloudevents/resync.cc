#include "libs/cloudevents/resync.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/common/status_macros.h"

namespace mmi::cloudevents {
namespace {

using internal::Json;
using internal::ObjectReader;

absl::StatusOr<std::string> Encode(const Json& value, std::string_view what) {
  auto text = internal::GoJson(value);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot encode ", std::string(what), ": ",
                                                   std::string(text.status().message())));
  }
  return text;
}

// Parses `data` as an object and calls `each(reader)` for every element of `member`.
template <typename Fn>
absl::Status ForEachEntry(std::string_view data, const CodecLimits& limits, std::string_view what,
                          std::string_view member, Fn each) {
  if (data.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " payload is missing (want a JSON object)"));
  }
  ASSIGN_OR_RETURN(const Json json, internal::ParseJson(data, limits, what));
  ASSIGN_OR_RETURN(const auto reader, ObjectReader::Make(json, "data"));
  const Json* list = reader.Find(member);
  if (list == nullptr) {
    return absl::OkStatus();
  }
  const std::string path = reader.PathOf(member);
  ASSIGN_OR_RETURN(const Json::array_t* array, internal::JsonArray(*list, path));
  if (array == nullptr) {
    return absl::OkStatus();
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    ASSIGN_OR_RETURN(const auto entry,
                     ObjectReader::Make((*array)[i], internal::IndexPath(path, i)));
    RETURN_IF_ERROR(each(entry));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> EncodeResourceVersionList(const ResourceVersionList& list) {
  Json entries = Json::array();
  for (const auto& entry : list.resource_versions) {
    entries.push_back(
        Json{{"resourceID", entry.resource_id}, {"resourceVersion", entry.resource_version}});
  }
  return Encode(Json{{"resourceVersions", std::move(entries)}}, "ResourceVersionList");
}

absl::StatusOr<std::string> EncodeResourceStatusHashList(const ResourceStatusHashList& list) {
  Json entries = Json::array();
  for (const auto& entry : list.status_hashes) {
    entries.push_back(Json{{"resourceID", entry.resource_id}, {"statusHash", entry.status_hash}});
  }
  return Encode(Json{{"statusHashes", std::move(entries)}}, "ResourceStatusHashList");
}

absl::StatusOr<ResourceVersionList> DecodeResourceVersionList(std::string_view data,
                                                              const CodecLimits& limits) {
  ResourceVersionList list;
  RETURN_IF_ERROR(ForEachEntry(
      data, limits, "ResourceVersionList", "resourceVersions", [&](const ObjectReader& entry) {
        ResourceVersion version;
        RETURN_IF_ERROR(entry.String("resourceID", &version.resource_id));
        RETURN_IF_ERROR(entry.Int64("resourceVersion", &version.resource_version));
        list.resource_versions.push_back(std::move(version));
        return absl::OkStatus();
      }));
  return list;
}

absl::StatusOr<ResourceStatusHashList> DecodeResourceStatusHashList(std::string_view data,
                                                                    const CodecLimits& limits) {
  ResourceStatusHashList list;
  RETURN_IF_ERROR(ForEachEntry(data, limits, "ResourceStatusHashList", "statusHashes",
                               [&](const ObjectReader& entry) {
                                 ResourceStatusHash hash;
                                 RETURN_IF_ERROR(entry.String("resourceID", &hash.resource_id));
                                 RETURN_IF_ERROR(entry.String("statusHash", &hash.status_hash));
                                 list.status_hashes.push_back(std::move(hash));
                                 return absl::OkStatus();
                               }));
  return list;
}

}  // namespace mmi::cloudevents
