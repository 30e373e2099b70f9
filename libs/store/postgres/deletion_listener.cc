#include "libs/store/postgres/deletion_listener.h"

#include <pqxx/pqxx>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/store/postgres/errors.h"

namespace mmi::store::postgres {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.deletion");
  return logger;
}

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, const std::string& channel,
           const DeletionConfirmations::Callback& callback)
      : pqxx::notification_receiver(conn, channel), callback_(callback) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    if (!payload.empty()) {
      callback_(payload);
    }
  }

 private:
  const DeletionConfirmations::Callback& callback_;
};

}  // namespace

PostgresDeletionListener::PostgresDeletionListener(DeletionListenerSettings settings,
                                                   DispatchStore& store)
    : settings_(std::move(settings)), store_(store), sleeper_(RealSleeper::Instance()) {}

PostgresDeletionListener::~PostgresDeletionListener() { Stop(); }

void PostgresDeletionListener::Start(Callback on_confirmed) {
  on_confirmed_ = std::move(on_confirmed);
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void PostgresDeletionListener::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();  // also ends a reconnect wait
    thread_.join();
  }
}

absl::Status PostgresDeletionListener::Listen(const std::stop_token& stop, Backoff& backoff) {
  try {
    pqxx::connection conn(settings_.dsn);
    Receiver receiver(conn, settings_.channel, on_confirmed_);
    // LISTEN is active now; sweep what was confirmed while nobody listened.
    auto confirmed = store_.ConfirmedDeletions();
    if (!confirmed.ok()) {
      // Handled as a lost connection: back off, resubscribe, sweep again.
      return absl::Status(
          confirmed.status().code(),
          absl::StrCat("sweep of confirmed deletions failed: ", confirmed.status().message()));
    }
    for (const auto& id : *confirmed) {
      on_confirmed_(id);
    }
    connected_.store(true);
    ++connections_;
    backoff.Reset();
    Log().Info("listening for deletion confirmations", {{"channel", settings_.channel}});
    const long secs = static_cast<long>(settings_.poll.count() / 1000);
    const long usecs = static_cast<long>((settings_.poll.count() % 1000) * 1000);
    while (!stop.stop_requested()) {
      conn.await_notification(secs, usecs);
      if (!conn.is_open()) {
        return absl::UnavailableError("connection closed");
      }
    }
    return absl::OkStatus();
  } catch (...) {
    return StatusFromCurrentException("listen for deletion confirmations");
  }
}

void PostgresDeletionListener::Run(const std::stop_token& stop) {
  Backoff backoff(settings_.reconnect);
  while (!stop.stop_requested()) {
    const absl::Status status = Listen(stop, backoff);
    connected_.store(false);
    if (status.ok()) {
      return;  // stopped
    }
    const auto delay = backoff.Next();
    Log().Warn("deletion confirmation listener disconnected; reconnecting",
               {{"error", std::string(status.message())},
                {"delay_ms", static_cast<int64_t>(delay.count())}});
    if (!sleeper_.SleepFor(delay, stop)) {
      return;
    }
  }
}

}  // namespace mmi::store::postgres
