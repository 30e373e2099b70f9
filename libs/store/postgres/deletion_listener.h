// DeletionConfirmations on PostgreSQL: LISTEN `mmi_deletion_confirmed` (the NOTIFY that both
// stores' MarkDeletionConfirmed send, payload: the resource id), and after every
// (re)subscription a sweep of the rows already confirmed (DispatchStore::ConfirmedDeletions),
// since notifications are not queued while nobody listens. A NotificationListener
// (notification_listener.h: its thread, reconnects and backoff).
#pragma once

#include <string>

#include "libs/store/deletion_confirmations.h"
#include "libs/store/dispatch_store.h"
#include "libs/store/postgres/notification_listener.h"

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
  ~PostgresDeletionListener() override = default;  // the listener stops
  PostgresDeletionListener(const PostgresDeletionListener&) = delete;
  PostgresDeletionListener& operator=(const PostgresDeletionListener&) = delete;

  void Start(Callback on_confirmed) override { listener_.Start(std::move(on_confirmed)); }
  void Stop() override { listener_.Stop(); }  // joins the thread
  // True while LISTEN is active on a live connection.
  bool connected() const override { return listener_.connected(); }
  // Completed (re)connections with their sweep.
  int connections() const { return listener_.connections(); }

 private:
  NotificationListener listener_;
};

}  // namespace mmi::store::postgres
