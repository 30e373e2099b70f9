#pragma once
// What an Informer is configured with and reports (InformerSettings, InformerStats) and the
// object types its settings name (ObjectPtr, Transform). Apart from informer.h so that the
// informer's internal collaborators use them without including the Informer itself.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "libs/common/backoff.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace mmi::kube {

// An immutable cached object. Shared (not unique) because the cache, handlers and readers hold
// the same snapshot without copying it.
using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// Runs on each object before it is cached. Must not change metadata.namespace/name.
using Transform = std::function<void(nlohmann::json& object)>;

// A Transform that erases the fields at these JSON pointers ("/status",
// "/metadata/managedFields"); absent fields are ignored.
Transform DropFields(const std::vector<std::string>& json_pointers);

struct InformerSettings {
  ResourceRef resource;  // namespace "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  // Streamed lists (see the top of this file); false: always paged LISTs.
  bool watch_list = true;
  // With watch_list: only the first list streams (cheap for the API server, served from its
  // watch cache); every relist is a paged LIST, whose watch hands out changes while the pages
  // are read. A first streamed list that fails is replaced by a paged LIST, as without it, and
  // streaming then ends too.
  bool stream_first_list_only = false;
  // Server-side end (timeoutSeconds) of a streamed list's watch: it must cover sending the whole
  // collection (minutes for 300,000 Applications on a busy hub); the stream then goes on as a
  // watch until this time.
  std::chrono::seconds watch_list_timeout{1800};
  int64_t page_size = 500;  // LIST limit
  // Paged lists only: the first list's objects are cached and handed to OnAdd page by page (see
  // the top of this file) instead of all at once when the list is complete.
  bool deliver_first_list_pages = false;
  // Each watch asks the server to end it after a random time in [min, max] (spreads
  // reconnects of many clients), as client-go does with 5-10 minutes.
  std::chrono::seconds min_watch_timeout{300};
  std::chrono::seconds max_watch_timeout{600};
  // No byte for this long: the connection is presumed dead and the watch restarted.
  std::chrono::milliseconds stall_timeout{150'000};
  // Delay before retrying a failed list or watch; reset after `backoff_reset_after` of a
  // healthy watch. client-go: 0.8 s doubling to 30 s, reset after 2 minutes.
  BackoffSettings backoff{.initial = std::chrono::milliseconds(800),
                          .max = std::chrono::milliseconds(30'000),
                          .multiplier = 2.0,
                          .jitter = 0.2};
  std::chrono::seconds backoff_reset_after{120};
  Transform transform;  // optional
  // Keep cached objects as MessagePack bytes instead of nlohmann::json trees: about 5x less
  // memory for Applications (see bench/kube/README.md), paid with a decode on every Get/List and
  // for OnUpdate's old object. Handlers and readers see the same ObjectPtr API either way.
  bool compact_storage = false;
};

struct InformerStats {
  int64_t lists = 0;                 // completed lists (1 + relists), streamed or paged
  int64_t streamed_lists = 0;        // of those, streamed lists (sendInitialEvents)
  int64_t watch_list_fallbacks = 0;  // streamed lists that failed and were replaced by a LIST
  int64_t watches = 0;               // watch requests made
  int64_t expired = 0;               // 410s that forced a relist
  int64_t watch_errors = 0;          // watches that ended with an error (then backed off)
  int64_t events = 0;                // watch events applied (bookmarks excluded)
  // Watch events received while a list was completed or applied; of those buffered for one
  // object only the newest is applied (and counted in `events`).
  int64_t buffered_events = 0;
  // Watch events applied at once (and handed to the handlers) while a paged list's pages were
  // read; the list's replace keeps their newer state.
  int64_t applied_while_listing = 0;
  // Objects of the first list cached and handed to OnAdd as their page arrived
  // (deliver_first_list_pages).
  int64_t delivered_from_pages = 0;
  // Paged lists whose continue token expired and that went on from the next key at the
  // server's current state (instead of one unpaged LIST of everything).
  int64_t inconsistent_continues = 0;
  // Watch events not applied because a later page of such a list held a newer version.
  int64_t stale_events = 0;
};

}  // namespace mmi::kube
