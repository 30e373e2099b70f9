// Deletion confirmations (hub-apis.md §5.8, maestro-protocol.md §6.4).
//
// The dispatcher publishes a spec delete_request when a hub Application gets a deletionTimestamp
// (or vanishes) and marks the resource kDeleteRequested (reconciler.cc). The agent removes the
// manifests and reports Deleted=True; the status sink records that in PostgreSQL
// (StatusStore::MarkDeletionConfirmed; DispatchStore::MarkDeletionConfirmed does the same), which
// sends `NOTIFY mmi_deletion_confirmed, '<resource_id>'`. This listener turns those
// notifications into Reconciler::OnDeletionConfirmed() calls, which release
// `resources-finalizer.argocd.argoproj.io` on the hub Application (a JSON patch guarded by
// `test` ops, hub_writes.h) and then Forget the row.
//
// Notifications are not queued while nobody listens, so after every (re)subscription the
// listener also sweeps the rows already confirmed (DispatchStore::ConfirmedDeletions) and reports
// each of them; confirmations are idempotent.
//
// Threads: one listener thread (its own libpqxx connection for LISTEN, never shared; the sweep
// goes through the store). `on_confirmed` runs on it and must only enqueue.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "libs/common/backoff.h"
#include "libs/common/sleeper.h"
#include "libs/store/dispatch_store.h"

namespace mmi::dispatcher {

struct DeletionListenerSettings {
  std::string dsn;  // libpq connection string (never logged)
  std::string channel = store::kDeletionConfirmedChannel;
  // Longest wait for a notification before checking for Stop().
  std::chrono::milliseconds poll{500};
  BackoffSettings reconnect{.initial = std::chrono::milliseconds(500),
                            .max = std::chrono::milliseconds(30'000),
                            .multiplier = 2.0,
                            .jitter = 0.2};
};

class DeletionListener {
 public:
  using Callback = std::function<void(const std::string& resource_id)>;

  // Sweeps through `store` (borrowed, thread-safe; must outlive the listener).
  DeletionListener(DeletionListenerSettings settings, store::DispatchStore& store,
                   Callback on_confirmed);
  ~DeletionListener();  // Stop()
  DeletionListener(const DeletionListener&) = delete;
  DeletionListener& operator=(const DeletionListener&) = delete;

  void Start();
  void Stop();  // idempotent; joins the thread
  // True while LISTEN is active on a live connection.
  bool connected() const { return connected_.load(); }
  // Completed (re)connections with their sweep.
  int connections() const { return connections_.load(); }

 private:
  void Run(const std::stop_token& stop);

  const DeletionListenerSettings settings_;
  store::DispatchStore& store_;
  const Callback on_confirmed_;
  std::atomic<bool> connected_{false};
  std::atomic<int> connections_{0};
  // Reconnect backoff, in real time; Stop() ends it through the thread's stop token.
  Sleeper& sleeper_;
  std::jthread thread_;
};

}  // namespace mmi::dispatcher
