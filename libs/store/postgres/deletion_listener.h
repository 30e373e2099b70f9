// DeletionConfirmations on PostgreSQL: LISTEN `mmi_deletion_confirmed` (the NOTIFY that both
// stores' MarkDeletionConfirmed send, payload: the resource id), and after every
// (re)subscription a sweep of the rows already confirmed (DispatchStore::ConfirmedDeletions),
// since notifications are not queued while nobody listens.
//
// Threads: one listener thread with its own libpqxx connection for LISTEN (never shared; the
// sweep goes through the store). A lost connection or a failed sweep is logged, and the listener
// reconnects and sweeps again after a backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "libs/common/backoff.h"
#include "libs/common/sleeper.h"
#include "libs/store/deletion_confirmations.h"
#include "libs/store/dispatch_store.h"

namespace mmi::store::postgres {

struct DeletionListenerSettings {
  std::string dsn;  // libpq connection string (never logged)
  std::string channel = kDeletionConfirmedChannel;
  // Longest wait for a notification before checking for Stop().
  std::chrono::milliseconds poll{500};
  BackoffSettings reconnect{.initial = std::chrono::milliseconds(500),
                            .max = std::chrono::milliseconds(30'000),
                            .multiplier = 2.0,
                            .jitter = 0.2};
};

class PostgresDeletionListener final : public DeletionConfirmations {
 public:
  // Sweeps through `store` (borrowed, thread-safe; must outlive the listener).
  PostgresDeletionListener(DeletionListenerSettings settings, DispatchStore& store);
  ~PostgresDeletionListener() override;  // Stop()
  PostgresDeletionListener(const PostgresDeletionListener&) = delete;
  PostgresDeletionListener& operator=(const PostgresDeletionListener&) = delete;

  void Start(Callback on_confirmed) override;
  void Stop() override;  // joins the thread
  // True while LISTEN is active on a live connection.
  bool connected() const override { return connected_.load(); }
  // Completed (re)connections with their sweep.
  int connections() const { return connections_.load(); }

 private:
  void Run(const std::stop_token& stop);
  // One LISTEN session: OK once `stop` is requested; the error when the connection or the
  // sweep failed.
  absl::Status Listen(const std::stop_token& stop, Backoff& backoff);

  const DeletionListenerSettings settings_;
  DispatchStore& store_;
  Callback on_confirmed_;  // set by Start() before the thread starts
  std::atomic<bool> connected_{false};
  std::atomic<int> connections_{0};
  // Reconnect backoff, in real time; Stop() ends it through the thread's stop token.
  Sleeper& sleeper_;
  std::jthread thread_;
};

}  // namespace mmi::store::postgres
