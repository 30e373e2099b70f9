// Opening the TCP connection to an MQTT broker within `dialTimeout`, without ever blocking a
// Stop(): shared by MosquittoConnection (which uses it as a probe before libmosquitto's own
// blocking connect) and NativeMqttConnection (which keeps the socket).
#pragma once

#include <chrono>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// `brokerHost` ("host:port" or "[v6]:port") into its parts; kInvalidArgument naming the field
// when it is not that shape.
absl::Status ParseBrokerAddress(const MqttSettings& settings, std::string& host, int& port);

struct DialResult {
  int fd = -1;        // connected, non-blocking, close-on-exec; -1 on failure
  std::string error;  // why not, when fd < 0 ("stopping" when `stopping()` said so)
};

// Resolves `host` and connects to each address in turn until one answers or `deadline` passes.
// Waits in poll() on the socket and `wake_fd` (an eventfd, drained here), asking `stopping()`
// after every wake-up and calling `on_tick()` about every `tick`. The resolver call itself blocks,
// as every resolver call does.
DialResult Dial(const std::string& host, int port, std::chrono::steady_clock::time_point deadline,
                int wake_fd, std::chrono::milliseconds tick, absl::FunctionRef<bool()> stopping,
                absl::FunctionRef<void()> on_tick);

}  // namespace mmi::transport::internal
