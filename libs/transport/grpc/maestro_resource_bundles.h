// Reads Maestro's resource bundles through its REST API (maestro-protocol.md §7.2, §7.5):
// whether Maestro still holds a resource. After a delete request Maestro keeps the row
// (soft-deleted, `deleted_at` set) until the agent reports Deleted, then removes it: from then on
// `GET /resource-bundles/<id>` answers 404, which completes the deletion as the Deleted status
// does (rule 17). Maestro sends that status only to the source subscribers connected at that
// moment, so the 404 is how a source learns of a confirmation it missed.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "libs/transport/grpc/maestro_rest.h"

namespace mmi::transport {

// Blocking (one HTTP request per call): use it from a worker thread, never from a loop thread.
// Thread-safe when the sender is (the libcurl sender is).
class MaestroResourceBundles {
 public:
  explicit MaestroResourceBundles(MaestroRestSettings settings);
  MaestroResourceBundles(MaestroRestSettings settings, RestSender sender);

  // GET /resource-bundles/<resource_id>: true on 200 (held, possibly marked deleting), false on
  // 404 (gone). kInvalidArgument for an id that is not a UUID (never sent); kUnavailable /
  // kDeadlineExceeded when Maestro cannot be reached or answers 5xx or 429; kFailedPrecondition
  // for any other answer (401/403: check the token and Maestro's --enable-jwt/--enable-authz).
  absl::StatusOr<bool> Exists(std::string_view resource_id) const;

 private:
  MaestroRestSettings settings_;
  RestSender sender_;
};

}  // namespace mmi::transport
