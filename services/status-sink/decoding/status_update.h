// One decoded status report of one resource, and what is material in an Application `.status`
// (pure, no I/O): the decoder's output (status_report.h) and the coalescer's input
// (coalescing/coalescer.h, whose file comment defines material and volatile members).
// Thread-safe (StatusTree() mutates only its argument).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace mmi::status_sink {

// One decoded status report for one resource.
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json moves do not throw.
struct StatusUpdate {
  std::string resource_id;
  std::optional<int64_t> sequence_id;  // snowflake value; nullopt = absent
  std::string status_hash;
  bool deleted = false;  // work-level Deleted=True: the deletion is complete
  // The spoke Application's `.status` (an object; null when deleted): a tree, or its JSON text
  // (from the one-pass decoder, or KeepStatusAsText), `status` staying null until StatusTree()
  // builds it for a hub write (most reports are dropped unwritten).
  nlohmann::json status;
  std::string status_text;
  // MaterialHash() of the status computed by the decoder from its text, for the setting
  // `material_hash_ignores_health_messages`; empty when not computed.
  std::string material_hash;
  bool material_hash_ignores_health_messages = false;
  std::optional<std::chrono::system_clock::time_point> event_time;  // the agent's `time`
  // The dispatch version the agent applied: the Application manifest's `dispatchVersion`
  // feedback value (end-to-end acknowledgement, docs/reliability.md finding 6). nullopt when
  // absent, for a deletion, and when the value is no dispatch version (never a rejection of the
  // report: StatusReport::acked_version_error says why, and the sink counts and logs it).
  std::optional<int32_t> acked_version;
  // The report carries only `acked_version`: the agent applied that dispatch, but its spoke
  // Application has no `status` yet (no Argo CD reported on it, which a spoke without Argo CD
  // never does: the first step of a hand-over to manifest delivery, ADR 0007). `status` stays
  // null; the sink saves the acknowledgement and writes nothing onto the hub.
  bool ack_only = false;
};

// Members of an Application `.status` that are not material (coalescer.h's file comment).
bool IsVolatileMember(std::string_view key);
// Hash over the material fields of an Application `.status` (coalescer.h's file comment).
std::string MaterialHash(const nlohmann::json& status, bool ignore_resource_health_messages);
// MaterialHash() of `update`'s status: the decoder's when it computed it for this setting.
std::string MaterialHashOf(const StatusUpdate& update, bool ignore_resource_health_messages);
// The `.status` tree of `update`, built from `status_text` the first time.
const nlohmann::json& StatusTree(StatusUpdate& update);
// Keeps `update`'s status tree as its JSON text, with its material hash (as the one-pass decoder
// gives a reported status): a report waiting in the coalescer holds the text (a manifest
// delivery status: ~1.7 KB) instead of the tree (~12 KB); StatusTree() builds it again for the
// write. Nothing to do when `status` is null.
void KeepStatusAsText(StatusUpdate& update, bool ignore_resource_health_messages);

}  // namespace mmi::status_sink
