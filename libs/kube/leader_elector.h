// Leader election on a coordination.k8s.io/v1 Lease, following client-go's algorithm:
//  * Candidates try every retry_period (plus up to 1.2x jitter): GET the Lease (create it when
//    absent); if another holder's lease is still valid they wait. Validity is judged by the
//    LOCAL time at which this candidate last saw the lease record change, plus its
//    leaseDurationSeconds — never by comparing clocks with renewTime.
//  * Acquiring and renewing are PUTs guarded by the observed resourceVersion: of two
//    candidates writing at once, one gets 409 and loses.
//  * The leader renews every retry_period; if it cannot renew for renew_deadline, or sees
//    another holder, it stops leading. A renewal throttled by the server (429) is tried again
//    after retry_period / 4 (client-go's REST client retries a 429 inside the deadline too).
//  * On Stop() a leader releases the lease (holderIdentity "", leaseDurationSeconds 1), so a
//    standby takes over at its next try instead of after lease_duration.
// Constraints: lease_duration > renew_deadline > 1.2 * retry_period > 0. controller-runtime
// defaults 15 s / 10 s / 2 s. Give the elector a client whose request timeout and retries fit
// inside retry_period: a renew blocked in retries is a renew that missed its deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/sleeper.h"
#include "libs/kube/kube_client.h"

namespace mmi::kube {

struct LeaderElectionSettings {
  std::string lease_namespace;  // needs get/create/update on leases there
  std::string lease_name;
  std::string identity;  // unique per process, e.g. "<hostname>_<random>"
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
  bool release_on_stop = true;
};

// Every field non-empty, every duration positive, and the ordering constraint above.
absl::Status ValidateLeaderElectionSettings(const LeaderElectionSettings& settings);

// Called on the elector's thread. They must not block (start or stop work elsewhere) and must
// not call Stop().
struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  // After losing the lease (then the elector becomes a candidate again) or on Stop().
  // Stop all writes that need leadership at once: another process may already lead.
  std::function<void()> on_stopped_leading;
  // When the observed holder changes (including to this identity); optional.
  std::function<void(const std::string& holder)> on_new_leader;
};

class LeaderElector {
 public:
  // `client` and `clock` must outlive the elector.
  LeaderElector(KubeClient& client, const Clock& clock, LeaderElectionSettings settings,
                LeaderCallbacks callbacks);
  ~LeaderElector();  // Stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Validates the settings and starts campaigning on a new thread.
  absl::Status Start();
  // Stops campaigning; a leader releases the lease (if release_on_stop) and gets
  // on_stopped_leading before this returns. Idempotent.
  void Stop();

  bool IsLeader() const { return leading_.load(); }
  // The holder seen in the last lease read ("" when none).
  std::string ObservedHolder() const;

  // One round: read (or create) the lease, then acquire or renew it. True when this identity
  // holds a valid lease afterwards. Start() calls it on its schedule; tests drive it directly
  // with a FakeClock.
  bool TryAcquireOrRenew();
  // Writes holderIdentity "" and leaseDurationSeconds 1 when this identity holds the lease.
  absl::Status Release();

 private:
  void Run(const std::stop_token& stop);
  // Records a lease read from or written to the server.
  void ObserveLocked(const nlohmann::json& lease, bool written) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ResourceRef LeaseRef() const;
  // The leader renews from its cached copy of the lease, without a GET, while that copy says it
  // still holds it. False when it does not lead or the write failed (then read and retry).
  bool RenewFromCache(const ResourceRef& ref, std::chrono::steady_clock::time_point now,
                      const std::string& now_text, int64_t duration_s);
  // Remembers, for the round, whether a lease call was throttled (429).
  void NoteFailure(const absl::Status& status);

  KubeClient& client_;
  const Clock& clock_;
  const LeaderElectionSettings settings_;
  const LeaderCallbacks callbacks_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> throttled_{false};  // the last round failed on a 429

  // Waits between rounds, in real time; Stop() ends them through the thread's stop token.
  Sleeper& sleeper_;

  mutable absl::Mutex mu_;
  std::optional<nlohmann::json> observed_lease_ ABSL_GUARDED_BY(mu_);  // last lease seen
  std::chrono::steady_clock::time_point observed_time_ ABSL_GUARDED_BY(mu_);
  std::string observed_holder_ ABSL_GUARDED_BY(mu_);

  absl::Mutex lifecycle_mu_;
  std::jthread thread_ ABSL_GUARDED_BY(lifecycle_mu_);
};

}  // namespace mmi::kube
