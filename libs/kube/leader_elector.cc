#include "libs/kube/leader_elector.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/kube_object/object.h"

namespace mmi::kube {
namespace {

using nlohmann::json;

const log::Logger& Log() {
  static const log::Logger logger("kube.leader_election");
  return logger;
}

int64_t CeilSeconds(std::chrono::milliseconds d) {
  return std::max<int64_t>(1, (d.count() + 999) / 1000);
}

std::string HolderOf(const json& lease) {
  return StringAt(ObjectAt(lease, "spec"), "holderIdentity");
}

int64_t DurationSecondsOf(const json& lease) {
  const json& d = FieldAt(ObjectAt(lease, "spec"), "leaseDurationSeconds");
  return d.is_number_integer() ? d.get<int64_t>() : 0;
}

const json& SpecOf(const json& lease) { return ObjectAt(lease, "spec"); }

// A lease held by `identity` from `now_text`, for a server that has none yet.
json NewLease(const LeaderElectionSettings& settings, const std::string& now_text,
              int64_t duration_s) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", settings.lease_name}, {"namespace", settings.lease_namespace}}},
          {"spec",
           {{"holderIdentity", settings.identity},
            {"leaseDurationSeconds", duration_s},
            {"acquireTime", now_text},
            {"renewTime", now_text},
            {"leaseTransitions", 0}}}};
}

// The spec `identity` writes to renew `current`, or to take it over (a new acquireTime and one
// more transition) when another identity, or none, held it.
json ClaimedSpec(const json& current, const std::string& identity, const std::string& now_text,
                 int64_t duration_s) {
  json spec = SpecOf(current);
  const int64_t transitions =
      spec.contains("leaseTransitions") && spec["leaseTransitions"].is_number_integer()
          ? spec["leaseTransitions"].get<int64_t>()
          : 0;
  if (HolderOf(current) != identity) {
    spec["acquireTime"] = now_text;
    spec["leaseTransitions"] = transitions + 1;
  }
  spec["holderIdentity"] = identity;
  spec["leaseDurationSeconds"] = duration_s;
  spec["renewTime"] = now_text;
  return spec;
}

}  // namespace

absl::Status ValidateLeaderElectionSettings(const LeaderElectionSettings& s) {
  auto invalid = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("leader election: ", what));
  };
  if (s.lease_namespace.empty()) {
    return invalid("lease_namespace is empty");
  }
  if (s.lease_name.empty()) {
    return invalid("lease_name is empty");
  }
  if (s.identity.empty()) {
    return invalid("identity is empty");
  }
  if (s.retry_period.count() <= 0) {
    return invalid("retry_period must be > 0");
  }
  if (s.lease_duration <= s.renew_deadline) {
    return invalid(absl::StrCat("lease_duration (", s.lease_duration.count(),
                                "ms) must be greater than renew_deadline (",
                                s.renew_deadline.count(), "ms)"));
  }
  if (s.renew_deadline.count() * 10 <= s.retry_period.count() * 12) {
    return invalid(absl::StrCat("renew_deadline (", s.renew_deadline.count(),
                                "ms) must be greater than 1.2 x retry_period (",
                                s.retry_period.count(), "ms)"));
  }
  return absl::OkStatus();
}

LeaderElector::LeaderElector(KubeClient& client, const Clock& clock,
                             LeaderElectionSettings settings, LeaderCallbacks callbacks)
    : client_(client),
      clock_(clock),
      settings_(std::move(settings)),
      callbacks_(std::move(callbacks)),
      sleeper_(RealSleeper::Instance()) {}

LeaderElector::~LeaderElector() { Stop(); }

ResourceRef LeaderElector::LeaseRef() const {
  return ResourceRef{"coordination.k8s.io", "v1", "leases", settings_.lease_namespace};
}

std::string LeaderElector::ObservedHolder() const {
  absl::MutexLock lock(&mu_);
  return observed_holder_;
}

void LeaderElector::ObserveLocked(const json& lease, bool written) {
  const bool changed = !observed_lease_.has_value() || SpecOf(*observed_lease_) != SpecOf(lease);
  if (changed || written) {
    observed_time_ = clock_.MonotonicNow();
  }
  observed_lease_ = lease;
  const std::string holder = HolderOf(lease);
  if (holder != observed_holder_) {
    observed_holder_ = holder;
    Log().Info("lease holder changed", {{"lease", settings_.lease_name}, {"holder", holder}});
    if (callbacks_.on_new_leader) {
      callbacks_.on_new_leader(holder);
    }
  }
}

bool LeaderElector::RenewFromCache(const ResourceRef& ref,
                                   std::chrono::steady_clock::time_point now,
                                   const std::string& now_text, int64_t duration_s) {
  std::optional<json> cached;
  {
    absl::MutexLock lock(&mu_);
    if (leading_.load() && observed_lease_.has_value() &&
        HolderOf(*observed_lease_) == settings_.identity &&
        now < observed_time_ + std::chrono::seconds(DurationSecondsOf(*observed_lease_))) {
      cached = observed_lease_;
    }
  }
  if (!cached.has_value()) {
    return false;
  }
  (*cached)["spec"]["renewTime"] = now_text;
  (*cached)["spec"]["leaseDurationSeconds"] = duration_s;
  absl::StatusOr<json> renewed = client_.Update(ref, *cached, {});
  if (!renewed.ok()) {
    NoteFailure(renewed.status());
    Log().Debug(
        "renew from cache failed; re-reading the lease",
        {{"lease", settings_.lease_name}, {"error", std::string(renewed.status().message())}});
    return false;
  }
  absl::MutexLock lock(&mu_);
  ObserveLocked(*renewed, true);
  return true;
}

void LeaderElector::NoteFailure(const absl::Status& status) {
  if (absl::IsResourceExhausted(status)) {
    throttled_.store(true);
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  throttled_.store(false);
  const ResourceRef ref = LeaseRef();
  const auto now = clock_.MonotonicNow();
  const std::string now_text = KubeMicroTime(clock_.Now());
  const int64_t duration_s = CeilSeconds(settings_.lease_duration);

  // Fast path: the leader renews from its cached copy without a GET.
  if (RenewFromCache(ref, now, now_text, duration_s)) {
    return true;
  }
  absl::StatusOr<json> current = client_.Get(ref, settings_.lease_name);
  if (absl::IsNotFound(current.status())) {
    absl::StatusOr<json> created =
        client_.Create(ref, NewLease(settings_, now_text, duration_s), {});
    if (!created.ok()) {
      NoteFailure(created.status());
      Log().Debug("cannot create the lease", {{"lease", settings_.lease_name},
                                              {"error", std::string(created.status().message())}});
      return false;
    }
    absl::MutexLock lock(&mu_);
    ObserveLocked(*created, true);
    return true;
  }
  if (!current.ok()) {
    NoteFailure(current.status());
    // Throttling is counted by the client (rest_client_requests_total{code="429"}) and reported
    // once per streak by the leader loop; anything else is worth a line each round.
    if (!throttled_.load()) {
      Log().Warn("cannot read the lease", {{"lease", settings_.lease_name},
                                           {"error", std::string(current.status().message())}});
    }
    return false;
  }
  json desired = *current;
  {
    absl::MutexLock lock(&mu_);
    ObserveLocked(*current, false);
    const std::string holder = HolderOf(*current);
    const bool valid = now < observed_time_ + std::chrono::seconds(DurationSecondsOf(*current));
    if (!holder.empty() && holder != settings_.identity && valid) {
      return false;  // someone else leads
    }
    desired["spec"] = ClaimedSpec(*current, settings_.identity, now_text, duration_s);
  }
  // The PUT carries the observed resourceVersion: a concurrent writer makes it fail with 409.
  absl::StatusOr<json> written = client_.Update(ref, desired, {});
  if (!written.ok()) {
    NoteFailure(written.status());
    Log().Debug(
        "cannot take or renew the lease",
        {{"lease", settings_.lease_name}, {"error", std::string(written.status().message())}});
    return false;
  }
  absl::MutexLock lock(&mu_);
  ObserveLocked(*written, true);
  return true;
}

absl::Status LeaderElector::Release() {
  std::optional<json> lease;
  {
    absl::MutexLock lock(&mu_);
    if (!observed_lease_.has_value() || HolderOf(*observed_lease_) != settings_.identity) {
      return absl::OkStatus();
    }
    lease = observed_lease_;
  }
  const std::string now_text = KubeMicroTime(clock_.Now());
  json& spec = (*lease)["spec"];
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["acquireTime"] = now_text;
  spec["renewTime"] = now_text;
  absl::StatusOr<json> written = client_.Update(LeaseRef(), *lease, {});
  if (!written.ok()) {
    return written.status();
  }
  absl::MutexLock lock(&mu_);
  ObserveLocked(*written, true);
  return absl::OkStatus();
}

absl::Status LeaderElector::Start() {
  if (absl::Status s = ValidateLeaderElectionSettings(settings_); !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&lifecycle_mu_);
  if (thread_.joinable()) {
    return absl::FailedPreconditionError("leader election: already started");
  }
  Log().Info("campaigning for leadership", {{"lease", settings_.lease_name},
                                            {"namespace", settings_.lease_namespace},
                                            {"identity", settings_.identity}});
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
  return absl::OkStatus();
}

void LeaderElector::Stop() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (!thread_.joinable()) {
    return;
  }
  thread_.request_stop();  // also ends a wait between rounds
  thread_.join();
}

void LeaderElector::Run(const std::stop_token& stop) {
  std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.0, 1.2);
  while (!stop.stop_requested()) {
    // Candidate.
    while (!stop.stop_requested() && !TryAcquireOrRenew()) {
      const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
          settings_.retry_period * (1.0 + jitter(rng)));
      sleeper_.SleepFor(wait, stop);
    }
    if (stop.stop_requested()) {
      break;
    }
    leading_.store(true);
    Log().Info("started leading",
               {{"lease", settings_.lease_name}, {"identity", settings_.identity}});
    if (callbacks_.on_started_leading) {
      callbacks_.on_started_leading();
    }
    // Leader.
    auto last_renew = clock_.MonotonicNow();
    bool lost = false;
    // A renewal the API server throttled (429: API Priority and Fairness rejected it) is tried
    // again after a quarter period instead of a full one, as client-go's REST client retries a
    // 429 within the renew deadline: a busy priority level then has four times the chances to
    // admit the lease. The deadline and the lease's duration do not change.
    std::chrono::milliseconds wait = settings_.retry_period;
    bool throttle_reported = false;
    while (sleeper_.SleepFor(wait, stop)) {
      if (TryAcquireOrRenew()) {
        last_renew = clock_.MonotonicNow();
        wait = settings_.retry_period;
        throttle_reported = false;
        continue;
      }
      const std::string holder = ObservedHolder();
      if ((!holder.empty() && holder != settings_.identity) ||
          clock_.MonotonicNow() - last_renew >= settings_.renew_deadline) {
        lost = true;
        break;
      }
      wait = settings_.retry_period;
      if (throttled_.load()) {
        wait = std::max(settings_.retry_period / 4, std::chrono::milliseconds(1));
        if (!throttle_reported) {
          throttle_reported = true;
          Log().Warn(
              "the API server throttles the lease renewal (429); retrying sooner until the "
              "renew deadline",
              {{"lease", settings_.lease_name},
               {"retry_ms", static_cast<int64_t>(wait.count())},
               {"renew_deadline_ms", static_cast<int64_t>(settings_.renew_deadline.count())}});
        }
      }
    }
    leading_.store(false);
    if (lost) {
      Log().Warn("lost leadership", {{"lease", settings_.lease_name},
                                     {"identity", settings_.identity},
                                     {"holder", ObservedHolder()}});
    } else if (settings_.release_on_stop) {
      if (absl::Status s = Release(); !s.ok()) {
        Log().Warn("cannot release the lease; others take over after it expires",
                   {{"lease", settings_.lease_name}, {"error", std::string(s.message())}});
      } else {
        Log().Info("released the lease", {{"lease", settings_.lease_name}});
      }
    }
    if (callbacks_.on_stopped_leading) {
      callbacks_.on_stopped_leading();
    }
  }
}

}  // namespace mmi::kube
