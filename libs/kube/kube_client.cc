#include "libs/kube/kube_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/kube/errors.h"

namespace mmi::kube {

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

absl::StatusOr<std::string> ForEachListItem(KubeClient& client, const ResourceRef& ref,
                                            ListOptions options, const ListItemCallbacks& callbacks,
                                            const std::stop_token& stop) {
  constexpr int64_t kDefaultPageSize = 500;
  if (options.limit <= 0) {
    options.limit = kDefaultPageSize;
  }
  options.continue_token.clear();
  std::string resource_version;
  bool first = true;
  bool just_continued_inconsistently = false;
  while (true) {
    if (stop.stop_requested()) {
      return absl::CancelledError("list stopped");
    }
    absl::StatusOr<ListResult> page = client.List(ref, options);
    if (!page.ok()) {
      if (first || !IsGone(page.status())) {
        return page.status();
      }
      // The snapshot behind the continue token was compacted away. A caller that watches since
      // the first page may go on from the next key at the server's current state, with the token
      // the 410 carries (once in a row: a fresh token that expires at once is not retried).
      std::string fresh_token = ContinueTokenOf(page.status());
      if (callbacks.on_inconsistent_continue && !fresh_token.empty() &&
          !just_continued_inconsistently) {
        callbacks.on_inconsistent_continue();
        options.continue_token = std::move(fresh_token);
        just_continued_inconsistently = true;
        continue;
      }
      // Otherwise start over with one unpaged list, which cannot expire half-way.
      if (callbacks.on_restart) {
        callbacks.on_restart();
      }
      ListOptions unpaged = options;
      unpaged.limit = 0;
      unpaged.continue_token.clear();
      absl::StatusOr<ListResult> whole = client.List(ref, unpaged);
      if (!whole.ok()) {
        return whole.status();
      }
      for (auto& item : whole->items) {
        callbacks.on_item(std::move(item));
      }
      return whole->resource_version;
    }
    just_continued_inconsistently = false;
    if (first) {
      resource_version = page->resource_version;
      first = false;
      if (callbacks.on_first_page) {
        callbacks.on_first_page(resource_version);
      }
    }
    for (auto& item : page->items) {
      callbacks.on_item(std::move(item));
    }
    if (page->continue_token.empty()) {
      return resource_version;
    }
    options.continue_token = std::move(page->continue_token);
  }
}

absl::StatusOr<ListResult> ListAll(KubeClient& client, const ResourceRef& ref,
                                   ListOptions options) {
  ListResult all;
  ListItemCallbacks callbacks;
  callbacks.on_item = [&](nlohmann::json&& item) { all.items.push_back(std::move(item)); };
  callbacks.on_restart = [&] { all.items.clear(); };
  absl::StatusOr<std::string> rv = ForEachListItem(client, ref, std::move(options), callbacks);
  if (!rv.ok()) {
    return rv.status();
  }
  all.resource_version = *std::move(rv);
  return all;
}

}  // namespace mmi::kube
