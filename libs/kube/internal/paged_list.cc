#include "libs/kube/internal/paged_list.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "libs/kube/object.h"

namespace mmi::kube::internal {

PagedList ListPages(KubeClient& client, const ResourceRef& ref, const ListOptions& options,
                    const InformerStore& store, const PagedListHooks& hooks,
                    const std::stop_token& stop) {
  PagedList result;
  bool inconsistent = false;
  ListItemCallbacks callbacks;
  callbacks.on_item = [&](nlohmann::json&& item) {
    std::string key = ObjectKey(item);
    StoredObject prepared;
    Entry entry =
        store.MakeListedEntry(key, std::move(item), hooks.on_listed ? &prepared : nullptr);
    if (prepared != nullptr) {
      entry = hooks.on_listed(key, prepared, std::move(entry));
    }
    int64_t version = 0;
    if (inconsistent && absl::SimpleAtoi(InformerStore::VersionOf(entry), &version)) {
      result.newest_listed_version = std::max(result.newest_listed_version, version);
    }
    result.listed.emplace_back(std::move(key), std::move(entry));
  };
  callbacks.on_restart = [&] { result.listed.clear(); };
  callbacks.on_first_page = hooks.on_first_page;
  // The watch runs since the first page, so an expired continue token need not cost one
  // unpaged LIST of everything (which a hub with 300,000 Applications cannot serve well).
  callbacks.on_inconsistent_continue = [&] {
    inconsistent = true;
    hooks.on_inconsistent_continue(result.listed.size());
  };
  result.resource_version = ForEachListItem(client, ref, options, callbacks, stop);
  return result;
}

}  // namespace mmi::kube::internal
