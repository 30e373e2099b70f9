#include "libs/transport/mqtt/internal/dial.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace mmi::transport::internal {

absl::Status ParseBrokerAddress(const MqttSettings& settings, std::string& host, int& port) {
  const std::string& text = settings.broker_host;
  const auto colon = text.rfind(':');
  if (colon != std::string::npos && absl::SimpleAtoi(text.substr(colon + 1), &port)) {
    host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    if (!host.empty()) {
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("transport.mqtt.brokerHost: must be host:port, got \"", text, "\""));
}

DialResult Dial(const std::string& host, int port, std::chrono::steady_clock::time_point deadline,
                int wake_fd, std::chrono::milliseconds tick, absl::FunctionRef<bool()> stopping,
                absl::FunctionRef<void()> on_tick) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (gai != 0) {
    return {-1, absl::StrCat("cannot resolve ", host, ": ", gai_strerror(gai))};
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
  std::string error = "no address";
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      return {fd, ""};
    }
    if (errno != EINPROGRESS) {
      error = std::strerror(errno);
      close(fd);
      continue;
    }
    while (true) {
      const auto now = std::chrono::steady_clock::now();
      if (stopping() || now >= deadline) {
        close(fd);
        return {-1, stopping() ? "stopping" : "TCP connect timed out (dialTimeout)"};
      }
      pollfd fds[2] = {{fd, POLLOUT, 0}, {wake_fd, POLLIN, 0}};
      const int timeout_ms = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count(), 1,
          tick.count()));
      const int ready = poll(fds, 2, timeout_ms);
      if ((fds[1].revents & POLLIN) != 0) {
        uint64_t count = 0;
        (void)!read(wake_fd, &count, sizeof(count));  // a Stop(), or a publisher's wake-up
      }
      if (ready <= 0 || fds[0].revents == 0) {
        on_tick();
        continue;
      }
      int so_error = 0;
      socklen_t length = sizeof(so_error);
      (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
      if (so_error == 0) {
        return {fd, ""};
      }
      close(fd);
      error = std::strerror(so_error);
      break;
    }
  }
  return {-1, absl::StrCat("cannot connect to ", host, ":", port, ": ", error)};
}

}  // namespace mmi::transport::internal
