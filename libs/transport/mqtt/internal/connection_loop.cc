#include "libs/transport/mqtt/internal/connection_loop.h"

#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace mmi::transport::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kTick = std::chrono::milliseconds(100);

}  // namespace

int PollTimeoutMs(Clock::time_point until) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, kTick.count()));
}

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

absl::Status ConnectionLoop::ParseBrokerHost() {
  const std::string& text = settings_.broker_host;
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(text.substr(colon + 1), &port_)) {
    host_.clear();
  } else {
    host_ = text.substr(0, colon);
    if (host_.size() >= 2 && host_.front() == '[' && host_.back() == ']') {
      host_ = host_.substr(1, host_.size() - 2);
    }
  }
  if (host_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("transport.mqtt.brokerHost: must be host:port, got \"", text, "\""));
  }
  return absl::OkStatus();
}

uint16_t ConnectionLoop::keep_alive_s() const {
  const int64_t seconds = settings_.keep_alive.count();
  return static_cast<uint16_t>(seconds == 0 ? 65'535 : std::clamp<int64_t>(seconds, 5, 65'535));
}

absl::Status ConnectionLoop::Start(const char* thread_name, Attempt attempt,
                                   absl::AnyInvocable<void()>* on_lost,
                                   absl::AnyInvocable<void()> on_tick) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an eventfd: ", std::strerror(errno)));
  }
  next_tick_ = Clock::now() + kTick;
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

int ConnectionLoop::Poll(int fd, short events, int timeout_ms, short& revents) const {
  pollfd fds[2] = {{fd, events, 0}, {wake_fd_, POLLIN, 0}};
  const int ready = poll(fds, 2, timeout_ms);
  revents = fds[0].revents;
  if ((fds[1].revents & POLLIN) != 0) {
    uint64_t count = 0;
    (void)!read(wake_fd_, &count, sizeof(count));
  }
  return ready;
}

bool ConnectionLoop::WaitFor(int fd, short events, Clock::time_point deadline) const {
  if (Clock::now() >= deadline) {
    return false;
  }
  short revents = 0;
  (void)Poll(fd, events, PollTimeoutMs(deadline), revents);
  return true;
}

int ConnectionLoop::Dial(Clock::time_point deadline, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found);
  if (gai != 0) {
    error = absl::StrCat("cannot resolve ", host_, ": ", gai_strerror(gai));
    return -1;
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
  error = "no address";
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      return fd;
    }
    if (errno != EINPROGRESS) {
      error = std::strerror(errno);
      close(fd);
      continue;
    }
    while (true) {
      if (stopping() || Clock::now() >= deadline) {
        close(fd);
        error = stopping() ? "stopping" : "TCP connect timed out (dialTimeout)";
        return -1;
      }
      short revents = 0;
      if (Poll(fd, POLLOUT, PollTimeoutMs(deadline), revents) <= 0 || revents == 0) {
        Tick();
        continue;
      }
      int so_error = 0;
      socklen_t length = sizeof(so_error);
      (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
      if (so_error == 0) {
        return fd;
      }
      close(fd);
      error = std::strerror(so_error);
      break;
    }
  }
  error = absl::StrCat("cannot connect to ", host_, ":", port_, ": ", error);
  return -1;
}

void ConnectionLoop::Tick() {
  next_tick_ = Clock::now() + kTick;
  if (on_tick_) {
    on_tick_();
  }
}

void ConnectionLoop::TickIfDue() {
  if (Clock::now() >= next_tick_) {
    Tick();
  }
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
  const Clock::time_point until = Clock::now() + delay;
  for (Clock::time_point now = Clock::now(); now < until; now = Clock::now()) {
    if (absl::MutexLock lock(&mu_);
        mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                             absl::FromChrono(std::min<Clock::duration>(until - now, kTick)))) {
      return;
    }
    Tick();
  }
}

}  // namespace mmi::transport::internal
