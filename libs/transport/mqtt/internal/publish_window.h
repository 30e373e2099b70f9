// The MQTT publisher's in-flight bookkeeping (NativeMqttPublisher): every accepted event in call
// order, which of them are held and which were written to the connection, the window (the broker's
// Receive Maximum), deadlines, and the outcome of each, posted to the publisher's callback thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/transport/internal/serial_executor.h"
#include "libs/transport/metrics.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// A publisher accepts no more than this many events at once (held back or awaiting their
// PUBACK).
inline constexpr int kMaxPendingPublishes = 10'000;

// One event as the MQTT publisher sends it: its topic and its binary-mode message.
struct EncodedPublish {
  std::string topic;
  cloudevents::MqttMessage message;
};

// An event leaves the window's payload store when it is written to the connection. Thread-safe.
class PublishWindow {
 public:
  // At most this many events accepted and not completed (held or awaiting their PUBACK).
  PublishWindow(size_t capacity, Clock& clock, TransportMetrics& metrics, const log::Logger& logger,
                SerialExecutor& callbacks)
      : capacity_(capacity),
        clock_(clock),
        metrics_(metrics),
        logger_(logger),
        callbacks_(callbacks) {}

  // Takes an event in call order, or completes it with kResourceExhausted (and returns false)
  // when `capacity` events wait already. `first_held` tells whether it is the only held event
  // and the window has room: a sender that sleeps until there is work must be woken.
  bool Accept(PublishCallback done, std::chrono::steady_clock::time_point started,
              std::chrono::steady_clock::time_point deadline, std::string event_id,
              EncodedPublish payload, bool& first_held) {
    {
      absl::MutexLock lock(&mu_);
      if (entries_.size() < capacity_) {
        entries_.emplace(next_id_++, Entry{std::move(done), started, deadline, std::move(event_id),
                                           std::move(payload)});
        metrics_.SetPublishHeld(held());
        first_held = held() == 1 && handed_ < window_;
        return true;
      }
    }
    Reject(std::move(done),
           absl::ResourceExhaustedError(absl::StrCat(
               "MQTT publisher: ", capacity_,
               " events already wait for the broker's PUBACK or for room in its in-flight "
               "window; retry later")),
           started);
    return false;
  }

  // The oldest held event, counted as handed over (written), while the window has room and
  // StopSending() was not called.
  std::optional<std::pair<uint64_t, EncodedPublish>> TakeNext() {
    absl::MutexLock lock(&mu_);
    if (stop_sending_ || handed_ >= window_ || held() == 0) {
      return std::nullopt;
    }
    auto it = entries_.lower_bound(next_send_);  // the oldest held event: held() > 0
    next_send_ = it->first + 1;
    ++handed_;
    peak_handed_ = std::max(peak_handed_, handed_);
    metrics_.SetPublishHeld(held());
    return std::make_pair(it->first, std::move(it->second.payload));
  }

  // Makes every later TakeNext() return nullopt.
  void StopSending() {
    absl::MutexLock lock(&mu_);
    stop_sending_ = true;
  }

  // The window of the current connection: Receive Maximum (QoS 1) while connected, 0 while not.
  void SetWindow(size_t window) {
    absl::MutexLock lock(&mu_);
    window_ = window;
  }

  // Completes the event `id` (if still pending) with `status`.
  void Complete(uint64_t id, absl::Status status) {
    Entry entry;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(id);
      if (it == entries_.end()) {
        return;  // already failed by a deadline, a connection loss or Stop()
      }
      entry = std::move(it->second);
      entries_.erase(it);
      if (id < next_send_) {
        --handed_;  // frees a slot of the window
      } else {
        metrics_.SetPublishHeld(held());
      }
    }
    if (entry.expired) {
      return;  // its caller heard of the deadline already; only its slot was still taken
    }
    Finish(std::move(entry), std::move(status));
  }

  // Fails every pending event (held or handed over) with `status`, also the slots kept for
  // expired ones: the connection, and what the broker held of ours, is gone.
  void FailAll(const absl::Status& status) {
    FailWhere([](const Entry&) { return true; }, status, /*broker_still_holds=*/false);
  }

  // The publisher's periodic check: while not connected, fails what waits (accepted just as the
  // connection dropped) at once rather than at its deadline; then the events whose deadline
  // passed. Those handed over keep their slot until their PUBACK or the connection's loss, so the
  // broker never holds more than the window.
  void Tick(bool connected, const MqttSettings& settings) {
    if (!connected) {
      FailAll(NotConnected(settings));
    }
    const auto now = clock_.MonotonicNow();
    FailWhere([now](const Entry& entry) { return entry.deadline <= now; },
              absl::DeadlineExceededError(absl::StrCat(
                  "no PUBACK from MQTT broker ", settings.broker_host, " within ",
                  settings.publish_timeout.count(), "ms of the Publish() call; retry")),
              /*broker_still_holds=*/true);
  }

  static absl::Status NotConnected(const MqttSettings& settings) {
    return absl::UnavailableError(
        absl::StrCat("MQTT broker ", settings.broker_host, " is not connected; retry later"));
  }

  // Waits at most `timeout` for every event to complete; true when none is left.
  bool AwaitDrained(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entries_.empty(); };
    return mu_.AwaitWithTimeout(absl::Condition(&drained), timeout);
  }

  // Records the outcome of an event and posts its callback: one never accepted, or (Finish()) one
  // completing. No lock held.
  void Reject(PublishCallback done, absl::Status status,
              std::chrono::steady_clock::time_point started) {
    metrics_.RecordPublish(status, clock_.MonotonicNow() - started);
    callbacks_.Post([done = std::move(done), status = std::move(status)]() mutable {
      std::move(done)(std::move(status));
    });
  }

  // The most events ever handed over (awaiting their PUBACK) at once.
  size_t peak_handed() const {
    absl::MutexLock lock(&mu_);
    return peak_handed_;
  }

 private:
  struct Entry {
    PublishCallback done;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point deadline;
    std::string event_id;
    EncodedPublish payload;  // until handed over
    // Its deadline passed while the broker held it: the caller was told, the slot stays taken
    // until the PUBACK or the connection's loss.
    bool expired = false;
  };

  size_t held() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return entries_.size() - handed_; }

  // Completes every pending entry `selected` picks with `status`. `broker_still_holds`:
  // entries handed over keep their slot (marked expired) until their PUBACK or the connection's
  // loss; without it, the slots of expired entries are freed too.
  void FailWhere(absl::FunctionRef<bool(const Entry&)> selected, const absl::Status& status,
                 bool broker_still_holds) {
    std::vector<Entry> failed;
    {
      // All at once: the sender must not hand over an event that is failing.
      absl::MutexLock lock(&mu_);
      for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->second.expired && !broker_still_holds) {
          --handed_;  // expired entries are always handed ones
          it = entries_.erase(it);
          continue;
        }
        if (it->second.expired || !selected(it->second)) {
          ++it;
          continue;
        }
        if (it->first < next_send_ && broker_still_holds) {
          Entry caller;
          caller.done = std::move(it->second.done);
          caller.started = it->second.started;
          caller.event_id = std::move(it->second.event_id);
          it->second.expired = true;
          failed.push_back(std::move(caller));
          ++it;
          continue;
        }
        if (it->first < next_send_) {
          --handed_;
        }
        failed.push_back(std::move(it->second));
        it = entries_.erase(it);
      }
      if (failed.empty()) {
        return;
      }
      metrics_.SetPublishHeld(held());
    }
    for (Entry& entry : failed) {
      Finish(std::move(entry), status);
    }
  }

  void Finish(Entry entry, absl::Status status) {
    if (!status.ok()) {
      logger_.Debug("publish failed",
                    {{"event_id", entry.event_id}, {"error", std::string(status.message())}});
    }
    Reject(std::move(entry.done), std::move(status), entry.started);
  }

  const size_t capacity_;
  Clock& clock_;
  TransportMetrics& metrics_;
  const log::Logger& logger_;
  SerialExecutor& callbacks_;

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Every accepted event not completed yet, by id (= call order). Those with id < next_send_
  // were handed over (handed_ of them); the others are held, and go out in id order.
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t next_send_ ABSL_GUARDED_BY(mu_) = 1;
  size_t handed_ ABSL_GUARDED_BY(mu_) = 0;
  size_t peak_handed_ ABSL_GUARDED_BY(mu_) = 0;
  size_t window_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_sending_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mmi::transport::internal
