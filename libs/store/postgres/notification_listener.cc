#include "libs/store/postgres/notification_listener.h"

#include <pqxx/pqxx>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/store/postgres/errors.h"

namespace mmi::store::postgres {
namespace {

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, const std::string& channel,
           const NotificationListener::Callback& callback)
      : pqxx::notification_receiver(conn, channel), callback_(callback) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    if (!payload.empty()) {
      callback_(payload);
    }
  }

 private:
  const NotificationListener::Callback& callback_;
};

}  // namespace

NotificationListener::NotificationListener(NotificationListenerSettings settings, Sweep sweep)
    : settings_(std::move(settings)),
      log_(settings_.logger),
      sweep_(std::move(sweep)),
      sleeper_(RealSleeper::Instance()) {}

NotificationListener::~NotificationListener() { Stop(); }

void NotificationListener::Start(Callback on_notified) {
  on_notified_ = std::move(on_notified);
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void NotificationListener::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();  // also ends a reconnect wait
    thread_.join();
  }
}

absl::Status NotificationListener::Listen(const std::stop_token& stop, Backoff& backoff) {
  try {
    pqxx::connection conn(settings_.dsn);
    Receiver receiver(conn, settings_.channel, on_notified_);
    // LISTEN is active now; sweep what was notified while nobody listened.
    if (absl::Status swept = sweep_(on_notified_); !swept.ok()) {
      // Handled as a lost connection: back off, resubscribe, sweep again.
      return absl::Status(swept.code(), absl::StrCat("sweep of missed ", settings_.what,
                                                     " failed: ", swept.message()));
    }
    connected_.store(true);
    ++connections_;
    backoff.Reset();
    log_.Info(absl::StrCat("listening for ", settings_.what), {{"channel", settings_.channel}});
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
    return StatusFromCurrentException(absl::StrCat("listen for ", settings_.what));
  }
}

void NotificationListener::Run(const std::stop_token& stop) {
  Backoff backoff(settings_.reconnect);
  while (!stop.stop_requested()) {
    const absl::Status status = Listen(stop, backoff);
    connected_.store(false);
    if (status.ok()) {
      return;  // stopped
    }
    const auto delay = backoff.Next();
    log_.Warn(absl::StrCat(settings_.what, " listener disconnected; reconnecting"),
              {{"error", std::string(status.message())},
               {"delay_ms", static_cast<int64_t>(delay.count())}});
    if (!sleeper_.SleepFor(delay, stop)) {
      return;
    }
  }
}

}  // namespace mmi::store::postgres
