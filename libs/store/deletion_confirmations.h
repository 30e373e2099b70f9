// Deletion confirmations, as the dispatcher waits for them (hub-apis.md §5.8,
// maestro-protocol.md §6.4).
//
// The dispatcher publishes a spec delete_request and marks the resource kDeleteRequested. The
// agent removes the manifests and reports Deleted=True; the status sink records that
// (StatusStore::MarkDeletionConfirmed; DispatchStore::MarkDeletionConfirmed does the same), and
// an implementation of this interface hands each confirmed resource id to the dispatcher, which
// releases the hub Application's finalizer and Forgets the row.
//
// Delivery is at-least-once: besides every new confirmation, each (re)subscription reports the
// confirmations already recorded (DispatchStore::ConfirmedDeletions), since some may have been
// made while nobody listened. Receivers must be idempotent.
//
// Implementations: postgres/deletion_listener.h (LISTEN kDeletionConfirmedChannel);
// testing/fake_deletion_confirmations.h.
#pragma once

#include <functional>
#include <string>

namespace mmi::store {

class DeletionConfirmations {
 public:
  using Callback = std::function<void(const std::string& resource_id)>;

  virtual ~DeletionConfirmations() = default;

  // Starts delivering confirmations to `on_confirmed`, which runs on an implementation-owned
  // thread and must only enqueue. Called at most once. Connection failures are retried with
  // backoff, never reported here.
  virtual void Start(Callback on_confirmed) = 0;
  // Idempotent; once it returns, `on_confirmed` is no longer called.
  virtual void Stop() = 0;
  // True while confirmations are being received (for readiness). Thread-safe.
  virtual bool connected() const = 0;
};

}  // namespace mmi::store
