// The status sink's fast decode of a status event (issue #21): the event's `data` and its
// `metadata` extension are each indexed once by simdjson and read in place. The Application's
// `status` feedback is kept as its JSON text, with its material hash (status_update.h) written
// straight from simdjson's index: no tree is built (StatusTree() builds one from the text for
// the few reports that become a hub write). The full path (DecodeStatusReportFull,
// status_report.h) builds the typed ManifestBundleStatus and ObjectMeta with nlohmann::json
// first, parsing the feedback twice and copying it once more.
//
// It checks every member the full path checks, with the same rules, and answers only when it is
// sure to give the full path's answer: a StatusReport, or the kNoFeedback rejection. Anything
// else - a malformed event (so that the rejection and its message stay the full path's), a
// missing `statushash` (computed from the typed payload), a `dispatchVersion` feedback value that
// is no dispatch version (so that StatusReport::acked_version_error stays the full path's), the
// manifestBundle echo that it
// validates through the full path's own function, text where simdjson and nlohmann could
// disagree (internal/json_tree.h) - is nullopt, and the caller decodes with the full path.
// status_report_equivalence_test.cc holds the two paths equal on the captured agent events and
// the fuzzer corpus; services/status-sink/fuzz/ fuzzes the pair.
//
// Not thread-safe: keeps its simdjson buffers between events (no allocation per event once warm
// besides the feedback tree and the report's strings). One per thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "libs/cloudevents/event.h"
#include "services/status-sink/decoding/status_report.h"

namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

namespace mmi::status_sink {

// MaterialHash() (status_update.h) of the tree BuildTree makes of `status`, written straight from
// simdjson's index through `scratch`; false where BuildTree refuses (the caller then cannot
// vouch for the status).
bool MaterialHashOfIndex(const simdjson::dom::element& status, int max_depth,
                         bool ignore_resource_health_messages, std::string& scratch,
                         std::string& hash);

class OnePassDecoder {
 public:
  OnePassDecoder();
  ~OnePassDecoder();
  OnePassDecoder(const OnePassDecoder&) = delete;
  OnePassDecoder& operator=(const OnePassDecoder&) = delete;

  // The full path's answer for `event`, or nullopt when this decoder cannot vouch for it. The
  // material hash is computed for `ignore_resource_health_messages` (CoalescerSettings).
  std::optional<std::variant<StatusReport, Rejection>> Decode(
      const cloudevents::Event& event, bool ignore_resource_health_messages = false);

 private:
  struct Parsers;
  // "<namespace>/<name>" of the hub Application in the `metadata` extension ("" when absent
  // or unreadable, as the full path), or nullopt when unsure.
  std::optional<std::string> MetadataApp(const cloudevents::Event& event);

  std::unique_ptr<Parsers> parsers_;
};

}  // namespace mmi::status_sink
