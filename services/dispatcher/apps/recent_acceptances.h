// The resources whose events the broker accepted in the last moments, for sending their specs
// again after a resubscription.
//
// A broker that restarts without persistence (mosquitto's default) drops what it still held for
// subscribers, and agents that reconnect before the dispatcher has resubscribed send their spec
// resync requests to no one (docs/reliability.md, "broker restart racing the agents' spec
// resync"). The events accepted just before the connection was lost are the ones at risk, so
// after a resubscription the current specs of those resources go out again as spec resync
// responses; an agent takes a spec of the version it already holds as a no-op.
//
// Kept: the acceptances within `window` of the newest one, at most `capacity` (the oldest go
// first). A reconnect resumes publishing seconds before the subscription is back, so the window
// still holds what was accepted before the loss when the resubscription asks for it.
//
// Not thread-safe: the outbox calls it on the reconcile loop.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace mmi::dispatcher {

class RecentAcceptances {
 public:
  RecentAcceptances(std::chrono::milliseconds window, size_t capacity)
      : window_(window), capacity_(capacity) {}

  void Note(std::string cluster, std::string resource_id,
            std::chrono::steady_clock::time_point accepted_at);

  // Every resource kept, by cluster, each once (in acceptance order); forgets them.
  std::map<std::string, std::vector<std::string>> Take();

  size_t size() const { return accepted_.size(); }

 private:
  struct Accepted {
    std::chrono::steady_clock::time_point at;
    std::string cluster;
    std::string resource_id;
  };

  const std::chrono::milliseconds window_;
  const size_t capacity_;
  std::deque<Accepted> accepted_;  // oldest first
};

}  // namespace mmi::dispatcher
