#include "services/dispatcher/gitops/gitops_cluster_controller.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "libs/common/log.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "services/dispatcher/gitops/internal/controller_handler.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace {

using internal::Core;
using internal::GitOpsClusters;
using internal::kClusterKey;
using internal::kGitOpsKey;
using internal::kOrphansKey;
using internal::kPlacementKey;
using internal::kResyncKey;
using internal::kSecretKey;
using internal::ManagedClusters;
using internal::PlacementDecisions;

using nlohmann::json;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.gitopscluster");
  return logger;
}

using kube::BoolAt;
using kube::FieldAt;
using kube::KubeTime;
using kube::Label;
using kube::Labels;
using kube::Metadata;
using kube::StringAt;

// Cached secrets keep the keys of data/stringData but only the values of `name` and `server`:
// enough to compare with a blank secret, and no credential lingers in memory.
void ShrinkSecret(json& secret) {
  secret["metadata"].erase("managedFields");
  for (const char* field : {"data", "stringData"}) {
    auto it = secret.find(field);
    if (it == secret.end() || !it->is_object()) {
      continue;
    }
    for (auto& [k, v] : it->items()) {
      if (k != "name" && k != "server") {
        v = "";
      }
    }
  }
}

}  // namespace

struct GitOpsClusterController::Metrics {
  prometheus::Counter* success = nullptr;
  prometheus::Counter* failed = nullptr;
  prometheus::Counter* error = nullptr;
  prometheus::Histogram* duration = nullptr;
  prometheus::Gauge* managed_secrets = nullptr;
  prometheus::Gauge* queue_depth = nullptr;
  prometheus::Counter* overflows = nullptr;

  explicit Metrics(prometheus::Registry& registry) {
    auto& reconciles = prometheus::BuildCounter()
                           .Name("mmi_gitopscluster_reconciles_total")
                           .Help(
                               "GitOpsCluster reconciles by result (success; failed: a condition "
                               "is False until the spec or the hub changes; error: retried).")
                           .Register(registry);
    success = &reconciles.Add({{"result", "success"}});
    failed = &reconciles.Add({{"result", "failed"}});
    error = &reconciles.Add({{"result", "error"}});
    duration = &prometheus::BuildHistogram()
                    .Name("mmi_gitopscluster_reconcile_duration_seconds")
                    .Help("Time to reconcile one GitOpsCluster.")
                    .Register(registry)
                    .Add({}, prometheus::Histogram::BucketBoundaries{
                                 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60});
    managed_secrets = &prometheus::BuildGauge()
                           .Name("mmi_gitopscluster_managed_secrets")
                           .Help(
                               "Argo CD cluster secrets the GitOpsClusters want (written and "
                               "kept by this dispatcher).")
                           .Register(registry)
                           .Add({});
    queue_depth = &prometheus::BuildGauge()
                       .Name("mmi_gitopscluster_queue_depth")
                       .Help("Keys waiting in the GitOpsCluster work queue.")
                       .Register(registry)
                       .Add({});
    overflows = &prometheus::BuildCounter()
                     .Name("mmi_gitopscluster_queue_overflows_total")
                     .Help("Keys dropped because the GitOpsCluster work queue was full.")
                     .Register(registry)
                     .Add({});
  }
};

GitOpsClusterController::GitOpsClusterController(kube::KubeClient& client, const Clock& clock,
                                                 GitOpsClusterControllerSettings settings,
                                                 prometheus::Registry& registry)
    : client_(client),
      clock_(clock),
      settings_(std::move(settings)),
      metrics_(std::make_unique<Metrics>(registry)),
      queue_(settings_.max_queue_depth) {
  const auto make = [&](kube::ResourceRef ref, std::string label_selector,
                        kube::Transform transform, Handler::Kind kind) {
    kube::InformerSettings s;
    s.resource = std::move(ref);
    s.label_selector = std::move(label_selector);
    s.page_size = settings_.informer_page_size;
    s.transform = std::move(transform);
    auto informer = std::make_unique<kube::Informer>(client_, clock_, std::move(s), &registry);
    handlers_.push_back(std::make_unique<Handler>(*this, kind));
    informer->AddHandler(*handlers_.back());
    return informer;
  };
  gitops_clusters_ = make(GitOpsClusters(), "", kube::DropFields({"/metadata/managedFields"}),
                          Handler::Kind::kGitOpsCluster);
  decisions_ = make(PlacementDecisions(), "", kube::DropFields({"/metadata/managedFields"}),
                    Handler::Kind::kDecision);
  managed_clusters_ =
      make(ManagedClusters(), "", kube::DropFields({"/metadata/managedFields", "/spec", "/status"}),
           Handler::Kind::kManagedCluster);
  secrets_ = make(Core("secrets"), absl::StrCat(kSecretTypeLabel, "=cluster"), ShrinkSecret,
                  Handler::Kind::kSecret);
  if (settings_.refresh_application_sets) {
    kube::InformerSettings s;
    s.resource = {"argoproj.io", "v1alpha1", "applicationsets", ""};
    s.page_size = settings_.informer_page_size;
    s.transform = ShrinkApplicationSet;
    appsets_ = std::make_unique<kube::Informer>(client_, clock_, std::move(s), &registry);
    refresher_ =
        std::make_unique<AppSetRefresher>(client_, clock_, settings_.appset_refresh, registry);
  }
}

std::vector<kube::Informer*> GitOpsClusterController::Informers() const {
  std::vector<kube::Informer*> out = {gitops_clusters_.get(), decisions_.get(),
                                      managed_clusters_.get(), secrets_.get()};
  if (appsets_) {
    out.push_back(appsets_.get());
  }
  return out;
}

GitOpsClusterController::~GitOpsClusterController() { Stop(); }

absl::Status GitOpsClusterController::Start() {
  if (settings_.max_queue_depth == 0) {
    return absl::InvalidArgumentError("gitops_cluster.max_queue_depth must be > 0");
  }
  if (settings_.decision_page_size <= 0 || settings_.informer_page_size <= 0) {
    return absl::InvalidArgumentError(
        "gitops_cluster.decision_page_size and gitops_cluster.informer_page_size must be > 0");
  }
  if (settings_.field_manager.empty() || settings_.field_manager.size() > 128) {
    return absl::InvalidArgumentError("gitops_cluster.field_manager must be 1..128 characters");
  }
  if (settings_.managed_by.empty() || settings_.managed_by.size() > 63) {
    return absl::InvalidArgumentError(
        "gitops_cluster.managed_by must be a label value (1..63 characters)");
  }
  if (settings_.resync_period.count() <= 0 || settings_.timer_check_interval.count() <= 0) {
    return absl::InvalidArgumentError(
        "gitops_cluster.resync_period and gitops_cluster.timer_check_interval must be > 0");
  }
  absl::MutexLock lock(&lifecycle_mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("GitOpsClusterController::Start called twice");
  }
  started_ = true;
  for (kube::Informer* informer : Informers()) {
    informer->Start();
  }
  loop_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
  Log().Info("GitOpsCluster controller started");
  return absl::OkStatus();
}

void GitOpsClusterController::Stop() {
  {
    absl::MutexLock lock(&lifecycle_mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    if (!started_) {
      return;
    }
  }
  for (kube::Informer* informer : Informers()) {
    informer->Stop();
  }
  queue_.ShutDown();
  loop_.request_stop();
  if (loop_.joinable()) {
    loop_.join();
  }
  Log().Info("GitOpsCluster controller stopped");
}

bool GitOpsClusterController::synced() const {
  // Not the ApplicationSets: refreshing them is an optimisation, and a hub without their CRD
  // (or without the RBAC to list them) must not keep the controller from reconciling.
  return gitops_clusters_->HasSynced() && decisions_->HasSynced() &&
         managed_clusters_->HasSynced() && secrets_->HasSynced();
}

// --- queue ---

void GitOpsClusterController::Enqueue(const std::string& key) {
  switch (queue_.Add(key)) {
    case kube::WorkQueue::AddResult::kAdded:
      metrics_->queue_depth->Set(static_cast<double>(queue_.Len()));
      return;
    case kube::WorkQueue::AddResult::kAlreadyQueued:
      return;
    case kube::WorkQueue::AddResult::kOverflowed:
      Log().Warn("GitOpsCluster work queue full; dropping keys until it drains, then resyncing",
                 {{"depth", static_cast<int64_t>(queue_.Len())}});
      metrics_->overflows->Increment();
      return;
    case kube::WorkQueue::AddResult::kDropped:
      metrics_->overflows->Increment();
      return;
  }
}

std::string GitOpsClusterController::Pop(std::chrono::milliseconds max_wait) {
  queue_.Wait(max_wait);
  if (queue_.ShuttingDown()) {
    return "";
  }
  if (std::optional<std::string> key = queue_.Get()) {
    metrics_->queue_depth->Set(static_cast<double>(queue_.Len()));
    return *std::move(key);
  }
  if (queue_.TakeOverflow()) {
    return kResyncKey;
  }
  return "";
}

// --- loop ---

bool GitOpsClusterController::WaitForInformers(const std::stop_token& stop) {
  // The ApplicationSets get a while to list (their refreshes need them), not for ever.
  const auto appsets_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!stop.stop_requested()) {
    if (synced()) {
      while (appsets_ && !appsets_->HasSynced() && !stop.stop_requested() &&
             std::chrono::steady_clock::now() < appsets_deadline) {
        appsets_->WaitForSynced(std::chrono::milliseconds(100));
      }
      return !stop.stop_requested();
    }
    // Informers wait on real time; poll their state.
    for (kube::Informer* informer :
         {gitops_clusters_.get(), decisions_.get(), managed_clusters_.get(), secrets_.get()}) {
      if (!informer->HasSynced()) {
        informer->WaitForSynced(std::chrono::milliseconds(100));
        break;
      }
    }
  }
  return false;
}

void GitOpsClusterController::Run(const std::stop_token& stop) {
  pthread_setname_np(pthread_self(), "gitops-loop");
  if (!WaitForInformers(stop)) {
    return;
  }
  Log().Info("informers synced; reconciling every GitOpsCluster",
             {{"gitopsclusters", static_cast<int64_t>(gitops_clusters_->Size())}});
  EnqueueAllGitOpsClusters();
  next_resync_ = clock_.MonotonicNow() + settings_.resync_period;
  while (!stop.stop_requested()) {
    const auto now = clock_.MonotonicNow();
    for (auto it = delayed_.begin(); it != delayed_.end();) {
      if (it->second <= now) {
        Enqueue(it->first);
        it = delayed_.erase(it);
      } else {
        ++it;
      }
    }
    if (now >= next_resync_) {
      EnqueueAllGitOpsClusters();
      next_resync_ = now + settings_.resync_period;
    }
    auto next_timer = next_resync_;
    if (refresher_) {
      if (auto due = refresher_->SendDue(); due.has_value()) {
        next_timer = std::min(next_timer, *due);
      }
    }
    for (const auto& [key, due] : delayed_) {
      next_timer = std::min(next_timer, due);
    }
    const auto wait =
        std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next_timer - now),
                   std::chrono::milliseconds(0), settings_.timer_check_interval);
    const std::string key = Pop(wait);
    if (!key.empty()) {
      Process(key);
      queue_.Done(key);  // queues it again when it changed meanwhile
    }
  }
}

void GitOpsClusterController::EnqueueAllGitOpsClusters() {
  for (const kube::ObjectPtr& g : gitops_clusters_->List()) {
    Enqueue(absl::StrCat(kGitOpsKey, kube::ObjectKey(*g)));
  }
  Enqueue(kOrphansKey);
}

void GitOpsClusterController::EnqueueForPlacement(const std::string& ns,
                                                  const std::string& placement) {
  bool used = false;
  for (const kube::ObjectPtr& g : gitops_clusters_->List(ns)) {
    const std::string ref_name = StringAt(FieldAt(FieldAt(*g, "spec"), "placementRef"), "name");
    if (absl::EqualsIgnoreCase(ref_name, placement)) {
      Enqueue(absl::StrCat(kGitOpsKey, kube::ObjectKey(*g)));
      used = true;
    }
  }
  if (!used) {
    // No GitOpsCluster of ours uses it: its ApplicationSets are not ours to refresh.
    refresh_pending_.erase(absl::AsciiStrToLower(absl::StrCat(ns, "/", placement)));
  }
}

void GitOpsClusterController::RefreshAppSetsIfDecided(const std::string& ns,
                                                      const std::string& placement) {
  if (!refresher_ ||
      refresh_pending_.erase(absl::AsciiStrToLower(absl::StrCat(ns, "/", placement))) == 0) {
    return;
  }
  if (!appsets_->HasSynced()) {
    // Their CRD or our RBAC for them may be missing: the ApplicationSets' requeue picks the
    // change up, as it would without us.
    if (!appsets_unsynced_logged_) {
      appsets_unsynced_logged_ = true;
      Log().Warn(
          "ApplicationSets not listed (CRD or RBAC missing?); decisions changes wait for their "
          "requeue",
          {{"placement", absl::StrCat(ns, "/", placement)}});
    }
    return;
  }
  // The Placement's decisions now, and its label alone: a generator selecting by that label
  // still reads the Placement when its last PlacementDecision is gone.
  std::vector<kube::ObjectPtr> decisions;
  for (const kube::ObjectPtr& pd : decisions_->List(ns)) {
    if (absl::EqualsIgnoreCase(Label(*pd, kPlacementLabel), placement)) {
      decisions.push_back(pd);
    }
  }
  decisions.push_back(std::make_shared<const json>(
      json{{"metadata", {{"namespace", ns}, {"labels", {{kPlacementLabel, placement}}}}}}));
  refresher_->DecisionsChanged(appsets_->List(), absl::StrCat(ns, "/", placement), decisions);
}

void GitOpsClusterController::EnqueueForCluster(const std::string& cluster) {
  for (const kube::ObjectPtr& g : gitops_clusters_->List()) {
    const std::string key = kube::ObjectKey(*g);
    auto managed = managed_.find(key);
    bool concerned = managed != managed_.end() && managed->second.clusters.contains(cluster);
    if (!concerned) {
      auto spec = ParseGitOpsClusterSpec(*g);
      if (spec.ok()) {
        for (const kube::ObjectPtr& pd : decisions_->List(spec->namespace_)) {
          if (Label(*pd, kPlacementLabel) != spec->placement_name) {
            continue;
          }
          for (const json& d : FieldAt(FieldAt(*pd, "status"), "decisions")) {
            concerned |= StringAt(d, "clusterName") == cluster;
          }
        }
      }
    }
    if (concerned) {
      Enqueue(absl::StrCat(kGitOpsKey, key));
    }
  }
}

void GitOpsClusterController::ScheduleRetry(const std::string& key) {
  auto it = retries_.find(key);
  if (it == retries_.end()) {
    it = retries_.emplace(key, Backoff(settings_.retry_backoff)).first;
  }
  const auto delay = it->second.Next();
  delayed_[key] = clock_.MonotonicNow() + delay;
  Log().Debug("reconcile retry scheduled",
              {{"resource", key}, {"delay_ms", static_cast<int64_t>(delay.count())}});
}

void GitOpsClusterController::ForgetRetry(const std::string& key) { retries_.erase(key); }

void GitOpsClusterController::Process(const std::string& key) {
  if (key == kResyncKey) {
    EnqueueAllGitOpsClusters();
    return;
  }
  if (key == kOrphansKey) {
    if (CleanUpOrphans() == Outcome::kError) {
      ScheduleRetry(key);
    } else {
      ForgetRetry(key);
    }
    return;
  }
  if (absl::StartsWith(key, kPlacementKey)) {
    const std::string rest = key.substr(2);
    const auto slash = rest.find('/');
    if (slash != std::string::npos) {
      if (refresher_) {
        refresh_pending_.insert(absl::AsciiStrToLower(rest));
      }
      EnqueueForPlacement(rest.substr(0, slash), rest.substr(slash + 1));
    }
    return;
  }
  if (absl::StartsWith(key, kClusterKey)) {
    EnqueueForCluster(key.substr(2));
    return;
  }
  if (absl::StartsWith(key, kSecretKey)) {
    if (!wanted_.contains(key.substr(2))) {
      Enqueue(kOrphansKey);
    }
    return;
  }
  if (!absl::StartsWith(key, kGitOpsKey)) {
    Log().Error("unknown work queue key", {{"resource", key}});
    return;
  }
  const std::string object_key = key.substr(2);
  const auto slash = object_key.find('/');
  if (slash == std::string::npos) {
    return;
  }
  const auto started = clock_.MonotonicNow();
  const Outcome outcome = Reconcile(object_key.substr(0, slash), object_key.substr(slash + 1));
  metrics_->duration->Observe(
      std::chrono::duration<double>(clock_.MonotonicNow() - started).count());
  switch (outcome) {
    case Outcome::kSuccess:
      metrics_->success->Increment();
      ForgetRetry(key);
      break;
    case Outcome::kFailed:
      metrics_->failed->Increment();
      ForgetRetry(key);
      break;
    case Outcome::kError:
      metrics_->error->Increment();
      ScheduleRetry(key);
      break;
  }
}

GitOpsClusterController::Outcome GitOpsClusterController::Reconcile(const std::string& ns,
                                                                    const std::string& name) {
  const std::string key = kube::ObjectKey(ns, name);
  const kube::ObjectPtr object = gitops_clusters_->Get(ns, name);
  if (object == nullptr || !FieldAt(Metadata(*object), "deletionTimestamp").is_null()) {
    // No finalizer (hub-apis §4.7): what it wrote becomes orphans.
    written_.erase(key);
    if (managed_.contains(key)) {
      SetManaged(key, std::nullopt);
      Log().Info("GitOpsCluster deleted; its cluster secrets are orphans now", {{"resource", key}});
      Enqueue(kOrphansKey);
    }
    return Outcome::kSuccess;
  }
  const auto now = clock_.Now();
  const std::string resource_version = kube::ResourceVersionOf(*object);
  json original = object->contains("status") && (*object)["status"].is_object()
                      ? (*object)["status"]
                      : json::object();
  // Our last status write may not have reached the cache yet: then it, not the cached status,
  // is what the API server holds (otherwise every quick re-reconcile would write again).
  if (auto w = written_.find(key); w != written_.end() && w->second.based_on == resource_version) {
    original = w->second.status;
  }
  json status = original;
  EnsureConditions(status, now);

  // What the GitOpsCluster wants now; nullopt: keep what it wanted (a transient failure).
  std::optional<Managed> managed = Managed{};
  Outcome outcome = Outcome::kSuccess;
  auto spec = ParseGitOpsClusterSpec(*object);
  if (!spec.ok()) {
    const std::string message(spec.status().message());
    const char* condition = absl::StrContains(message, "spec.argoServer") ? kCondArgoServerVerified
                                                                          : kCondPlacementResolved;
    SetCondition(status, condition, "False", kReasonInvalidConfiguration, CapMessage(message), now);
    status["message"] = CapMessage(message);
    Log().Warn("invalid GitOpsCluster", {{"resource", key}, {"error", message}});
    outcome = Outcome::kFailed;
  } else {
    SpecResult result = ReconcileSpec(*object, *spec, std::move(status));
    outcome = result.outcome;
    status = std::move(result.status);
    managed = std::move(result.managed);
  }
  UpdateReadyCondition(status, now);
  status["phase"] = outcome == Outcome::kSuccess ? "successful" : "failed";
  if (!status.contains("message") || !status["message"].is_string()) {
    status["message"] = "";
  }

  if (status != original) {
    status["lastUpdateTime"] = KubeTime(now);
    kube::PatchOptions options;
    options.field_manager = settings_.field_manager;
    auto patched = client_.Patch(GitOpsClusters(ns), name, kube::PatchType::kMerge,
                                 json{{"status", status}}, options, "status");
    if (patched.ok()) {
      written_[key] = WrittenStatus{.based_on = resource_version, .status = status};
    } else if (!absl::IsNotFound(patched.status())) {
      Log().Warn("cannot write GitOpsCluster status",
                 {{"resource", key}, {"error", patched.status().ToString()}});
      outcome = Outcome::kError;
    }
  }

  if (spec.ok() && outcome != Outcome::kError) {
    // The cluster secrets the generators need are written now.
    RefreshAppSetsIfDecided(spec->namespace_, spec->placement_name);
  }
  if (managed.has_value()) {
    auto it = managed_.find(key);
    if (it == managed_.end() || it->second.secrets != managed->secrets ||
        it->second.clusters != managed->clusters) {
      SetManaged(key, std::move(managed));
      Enqueue(kOrphansKey);
    }
  }
  return outcome;
}

void GitOpsClusterController::SetManaged(const std::string& key, std::optional<Managed> managed) {
  auto it = managed_.find(key);
  if (it != managed_.end()) {
    for (const auto& [secret, cluster] : it->second.secrets) {
      if (--wanted_[secret] <= 0) {
        wanted_.erase(secret);
      }
    }
    managed_.erase(it);
  }
  if (managed.has_value()) {
    for (const auto& [secret, cluster] : managed->secrets) {
      ++wanted_[secret];
    }
    managed_.emplace(key, *std::move(managed));
  }
  metrics_->managed_secrets->Set(static_cast<double>(wanted_.size()));
}

}  // namespace mmi::dispatcher
