#include "services/dispatcher/deletion.h"

#include <exception>
#include <pqxx/pqxx>
#include <stdexcept>
#include <utility>

#include "libs/common/log.h"

namespace mmi::dispatcher {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.deletion");
  return logger;
}

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, const std::string& channel,
           const DeletionListener::Callback& callback)
      : pqxx::notification_receiver(conn, channel), callback_(callback) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    if (!payload.empty()) {
      callback_(payload);
    }
  }

 private:
  const DeletionListener::Callback& callback_;
};

}  // namespace

DeletionListener::DeletionListener(DeletionListenerSettings settings, store::DispatchStore& store,
                                   Callback on_confirmed)
    : settings_(std::move(settings)),
      store_(store),
      on_confirmed_(std::move(on_confirmed)),
      sleeper_(RealSleeper::Instance()) {}

DeletionListener::~DeletionListener() { Stop(); }

void DeletionListener::Start() {
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void DeletionListener::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();  // also ends a reconnect wait
    thread_.join();
  }
}

void DeletionListener::Run(const std::stop_token& stop) {
  Backoff backoff(settings_.reconnect);
  while (!stop.stop_requested()) {
    try {
      pqxx::connection conn(settings_.dsn);
      Receiver receiver(conn, settings_.channel, on_confirmed_);
      // LISTEN is active now; sweep what was confirmed while nobody listened.
      auto confirmed = store_.ConfirmedDeletions();
      if (!confirmed.ok()) {
        // Handled as a lost connection: back off, resubscribe, sweep again.
        throw std::runtime_error("sweep of confirmed deletions failed: " +
                                 std::string(confirmed.status().message()));
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
          throw pqxx::broken_connection("connection closed");
        }
      }
      connected_.store(false);
      return;
    } catch (const std::exception& e) {
      connected_.store(false);
      const auto delay = backoff.Next();
      Log().Warn(
          "deletion confirmation listener disconnected; reconnecting",
          {{"error", std::string(e.what())}, {"delay_ms", static_cast<int64_t>(delay.count())}});
      if (!sleeper_.SleepFor(delay, stop)) {
        return;
      }
    }
  }
}

}  // namespace mmi::dispatcher
