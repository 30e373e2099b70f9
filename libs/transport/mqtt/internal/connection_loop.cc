#include "libs/transport/mqtt/internal/connection_loop.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace mmi::transport::internal {

ConnectionLoop::ConnectionLoop(const MqttSettings& settings, std::string client_id,
                               std::chrono::seconds session_expiry, TransportMetrics& metrics,
                               const log::Logger& logger)
    : settings_(settings),
      client_id_(std::move(client_id)),
      session_expiry_(session_expiry),
      metrics_(metrics),
      logger_(logger),
      backoff_(settings.reconnect_backoff) {}

ConnectionLoop::~ConnectionLoop() {
  Stop();
  if (wake_fd_ >= 0) {
    close(wake_fd_);
  }
}

absl::Status ConnectionLoop::Start(const char* thread_name, std::chrono::milliseconds tick,
                                   Attempt attempt, absl::AnyInvocable<void()>* on_lost,
                                   absl::AnyInvocable<void()> on_tick) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an eventfd: ", std::strerror(errno)));
  }
  tick_ = tick;
  attempt_ = std::move(attempt);
  on_lost_ = on_lost;
  on_tick_ = std::move(on_tick);
  metrics_.SetConnected(false);
  thread_ = std::thread([this] {
    // OpenSSL writes with write(), which cannot be told MSG_NOSIGNAL. A blocked SIGPIPE raised by
    // this thread's own write stays pending on this thread and is never delivered.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    Run();
  });
  pthread_setname_np(thread_.native_handle(), thread_name);
  return absl::OkStatus();
}

void ConnectionLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  Wake();
  if (thread_.joinable()) {
    thread_.join();
  }
  connected_.store(false);
  metrics_.SetConnected(false);
}

bool ConnectionLoop::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void ConnectionLoop::Wake() {
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
  }
}

void ConnectionLoop::Drain() const {
  uint64_t count = 0;
  (void)!read(wake_fd_, &count, sizeof(count));
}

bool ConnectionLoop::Accepted(bool session_present) {
  const bool reconnect = ever_connected_;
  ever_connected_ = true;
  accepted_ = true;
  backoff_.Reset();
  connected_.store(true);
  metrics_.SetConnected(true);
  if (reconnect) {
    metrics_.RecordReconnect();
  }
  logger_.Info("connected to MQTT broker", {{"broker", settings_.broker_host},
                                            {"client_id", client_id_},
                                            {"session_present", session_present}});
  if (session_expiry_.count() > 0 && !session_present) {
    logger_.Info(
        "no MQTT session to resume (first connection, expired, or the broker lost it): what was "
        "sent while no replica was subscribed did not wait for us",
        {{"client_id", client_id_},
         {"session_expiry_s", static_cast<int64_t>(session_expiry_.count())}});
  }
  return reconnect;
}

void ConnectionLoop::Run() {
  while (!stopping()) {
    accepted_ = false;
    logger_.Debug("connecting", {{"broker", settings_.broker_host}, {"client_id", client_id_}});
    const std::string reason = attempt_();
    const bool was_connected = accepted_;
    accepted_ = false;
    if (was_connected) {
      connected_.store(false);
      metrics_.SetConnected(false);
      if (on_lost_ != nullptr && *on_lost_) {
        (*on_lost_)();
      }
    }
    if (stopping()) {
      break;
    }
    WaitToRetry(reason, was_connected);
  }
}

void ConnectionLoop::WaitToRetry(const std::string& reason, bool was_connected) {
  const std::chrono::milliseconds delay = backoff_.Next();
  if (was_connected) {
    logger_.Warn("MQTT connection lost; reconnecting",
                 {{"broker", settings_.broker_host},
                  {"client_id", client_id_},
                  {"cause", reason},
                  {"retry_in_ms", static_cast<int64_t>(delay.count())}});
  } else {
    logger_.Warn("MQTT connect failed; retrying",
                 {{"broker", settings_.broker_host},
                  {"client_id", client_id_},
                  {"error", reason},
                  {"attempt", backoff_.attempts()},
                  {"retry_in_ms", static_cast<int64_t>(delay.count())}});
  }
  // In steps of a tick, so that the owner's tick goes on while no connection stands (a publisher
  // fails what waits past its deadline), over early on Stop().
  const auto until = std::chrono::steady_clock::now() + delay;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) {
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                               absl::FromChrono(std::min<std::chrono::steady_clock::duration>(
                                   until - now, tick_)))) {
        return;
      }
    }
    if (on_tick_) {
      on_tick_();
    }
  }
}

}  // namespace mmi::transport::internal
