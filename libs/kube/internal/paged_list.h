// ListPages: one paged LIST of an Informer's collection into cache entries, page by page, for
// the list worker. Entries are built as pages arrive, so compact storage never holds the whole
// list as JSON trees, and an object whose version is cached already is carried as a marker only
// (a relist holds no second copy of the cache).
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>

#include "absl/status/statusor.h"
#include "libs/kube/internal/informer_store.h"
#include "libs/kube/kube_client.h"

namespace mmi::kube::internal {

struct PagedListHooks {
  // The first page's resourceVersion is in: the watch may start from it.
  std::function<void(const std::string& first_page_version)> on_first_page;
  // A continue token expired and the list goes on at the server's current state;
  // `listed_so_far` objects came before.
  std::function<void(size_t listed_so_far)> on_inconsistent_continue;
  // Optional: each listed object not cached at its version, prepared, with the entry made from
  // it; returns what the list keeps in its place (the entry, or a same_as_cached marker). Only
  // until an inconsistent continue or a restart (then the pages may be newer than the watch)
  // and until `stop`.
  std::function<Entry(const std::string& key, const StoredObject& object, Entry entry)> on_listed;
};

struct PagedList {
  absl::StatusOr<std::string> resource_version;  // the list's version, or why it failed
  ListedEntries listed;                          // in list order
  // Non-zero after an inconsistent continue: the newest (numeric) version listed after it.
  int64_t newest_listed_version = 0;
};

// Lists `ref` with the selectors and page size of `options`, preparing each object with
// `store` (transform, representation). Ends early, failed, when `stop` is requested.
PagedList ListPages(KubeClient& client, const ResourceRef& ref, const ListOptions& options,
                    const InformerStore& store, const PagedListHooks& hooks,
                    const std::stop_token& stop);

}  // namespace mmi::kube::internal
