#include "libs/kube/internal/paged_list.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "libs/kube_object/object.h"

namespace mmi::kube::internal {

PagedList ListPages(KubeClient& client, const ResourceRef& ref, const ListOptions& options,
                    const InformerStore& store, const PagedListHooks& hooks,
                    const std::stop_token& stop) {
  PagedList result;
  bool inconsistent = false;
  // Offered to on_listed only while the pages are one snapshot, older than anything the watch
  // delivers: past an inconsistent continue or a restart the pages are newer than the watch,
  // which could then hand out an older version after them; the replace takes those in instead.
  bool offer = static_cast<bool>(hooks.on_listed);
  ListItemCallbacks callbacks;
  callbacks.on_item = [&](nlohmann::json&& item) {
    std::string key = ObjectKey(item);
    StoredObject prepared;
    const bool offered = offer && !stop.stop_requested();
    Entry entry = store.MakeListedEntry(key, std::move(item), offered ? &prepared : nullptr);
    if (prepared != nullptr) {
      entry = hooks.on_listed(key, prepared, std::move(entry));
    }
    int64_t version = 0;
    if (inconsistent && absl::SimpleAtoi(InformerStore::VersionOf(entry), &version)) {
      result.newest_listed_version = std::max(result.newest_listed_version, version);
    }
    result.listed.emplace_back(std::move(key), std::move(entry));
  };
  callbacks.on_restart = [&] {
    offer = false;
    result.listed.clear();
  };
  callbacks.on_first_page = hooks.on_first_page;
  // The watch runs since the first page, so an expired continue token need not cost one
  // unpaged LIST of everything (which a hub with 300,000 Applications cannot serve well).
  callbacks.on_inconsistent_continue = [&] {
    inconsistent = true;
    offer = false;
    hooks.on_inconsistent_continue(result.listed.size());
  };
  result.resource_version = ForEachListItem(client, ref, options, callbacks, stop);
  return result;
}

}  // namespace mmi::kube::internal
