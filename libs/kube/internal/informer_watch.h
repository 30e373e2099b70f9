// The decisions of an Informer's reflector loop, kept apart from its I/O: which list comes next
// (ListPlan), what a watch request asks for (MakeWatchOptions), how a watch ended
// (ClassifyWatchEnd), and a streamed list's initial events before its end bookmark
// (InitialEvents). Pure: no threads, no locks, no network.
#pragma once

#include <random>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "libs/kube/internal/informer_store.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace mmi::kube {
struct InformerSettings;
}  // namespace mmi::kube

namespace mmi::kube::internal {

// kListFailed: the paged list behind the watch failed; the watch was ended to list again.
enum class WatchEnd { kClosed, kExpired, kError, kStalled, kStopped, kListFailed };

// The label of mmi_kube_watch_restarts_total{reason}.
const char* WatchEndLabel(WatchEnd end);

struct WatchOutcome {
  WatchEnd end = WatchEnd::kClosed;
  absl::Status error;        // kError / kStalled
  bool listed = false;       // a streamed list's initial events were complete and applied
  bool unsupported = false;  // the server cannot stream lists
};

// What one watch saw, besides the status Watch returned.
struct WatchEnding {
  bool stopped = false;    // Stop() ended it
  bool cancelled = false;  // the paged list behind it failed and ended it
  bool expired = false;    // an ERROR event said 410
  absl::Status event_error;
};

// How a watch (or a streamed list, `stream_list`) ended, from what Watch returned and what its
// events said. Sets end, error and unsupported; keeps `outcome.listed` and a streamed list's
// own error.
void ClassifyWatchEnd(const absl::Status& status, const WatchEnding& ending, bool stream_list,
                      WatchOutcome& outcome);

// The watch request: a streamed list from a consistent read, or a watch from `from` that the
// server ends after a random time in [min_watch_timeout, max_watch_timeout].
WatchOptions MakeWatchOptions(const InformerSettings& settings, bool stream_list, std::string from,
                              std::mt19937_64& rng);

// Which list the reflector does next: a streamed list while the server can stream, one paged
// LIST after a streamed list failed, paged LISTs for good once the server said it cannot (or,
// with `stream_first_only`, once the first list, streamed or its paged fallback, is done).
class ListPlan {
 public:
  // `stream_first_only`: only the first list may stream; every relist is a paged LIST.
  ListPlan(bool watch_list, bool stream_first_only)
      : can_stream_(watch_list), stream_first_only_(stream_first_only) {}
  // The next watch is a streamed list.
  bool Streams() const { return need_list_ && can_stream_ && !list_next_; }
  // A paged LIST must start before the next watch.
  bool NeedsPagedList() const { return need_list_ && !Streams(); }
  void Listed() {
    need_list_ = false;
    list_next_ = false;
    if (stream_first_only_) {
      can_stream_ = false;
    }
  }
  void ListAgain() { need_list_ = true; }
  // A streamed list failed; `unsupported`: the server cannot stream lists at all.
  void StreamedListFailed(bool unsupported) {
    if (unsupported) {
      can_stream_ = false;
    } else {
      list_next_ = true;
    }
  }

 private:
  bool need_list_ = true;
  bool can_stream_;         // false for good once the server says it cannot (see above)
  bool list_next_ = false;  // the last streamed list failed: one paged LIST
  const bool stream_first_only_;
};

// The BOOKMARK that ends a streamed list's initial events.
bool EndsInitialEvents(const nlohmann::json& bookmark);

// A streamed list being received: entries in arrival order, the newest per object.
class InitialEvents {
 public:
  void Upsert(std::string key, Entry entry);
  // Deleted before the list ended: its place stays, with an empty key.
  void Delete(const std::string& key);
  ListedEntries Take();

 private:
  ListedEntries items_;
  absl::flat_hash_map<std::string, size_t> index_;  // key -> position in items_
};

}  // namespace mmi::kube::internal
