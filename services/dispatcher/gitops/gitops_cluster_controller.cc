#include "services/dispatcher/gitops/gitops_cluster_controller.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/common/status_macros.h"
#include "prometheus/registry.h"
#include "services/dispatcher/gitops/internal/controller_handler.h"
#include "services/dispatcher/gitops/internal/controller_log.h"
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

using kube::FieldAt;
using kube::Label;
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

GitOpsClusterController::GitOpsClusterController(kube::KubeClient& client, const Clock& clock,
                                                 GitOpsClusterControllerSettings settings,
                                                 prometheus::Registry& registry)
    : client_(client),
      clock_(clock),
      settings_(std::move(settings)),
      metrics_(registry),
      status_(client, settings_.field_manager),
      queue_(settings_.max_queue_depth),
      retries_(clock, settings_.retry_backoff) {
  const auto make = [&](kube::ResourceRef ref, std::string label_selector,
                        kube::Transform transform, internal::ControllerHandler::Kind kind) {
    kube::InformerSettings s;
    s.resource = std::move(ref);
    s.label_selector = std::move(label_selector);
    s.page_size = settings_.informer_page_size;
    s.transform = std::move(transform);
    auto informer = std::make_unique<kube::Informer>(client_, clock_, std::move(s), &registry);
    handlers_.push_back(std::make_unique<internal::ControllerHandler>(
        kind, settings_.managed_by, [this](const std::string& key) { Enqueue(key); }));
    informer->AddHandler(*handlers_.back());
    return informer;
  };
  gitops_clusters_ = make(GitOpsClusters(), "", kube::DropFields({"/metadata/managedFields"}),
                          internal::ControllerHandler::Kind::kGitOpsCluster);
  decisions_ = make(PlacementDecisions(), "", kube::DropFields({"/metadata/managedFields"}),
                    internal::ControllerHandler::Kind::kDecision);
  managed_clusters_ =
      make(ManagedClusters(), "", kube::DropFields({"/metadata/managedFields", "/spec", "/status"}),
           internal::ControllerHandler::Kind::kManagedCluster);
  secrets_ = make(Core("secrets"), absl::StrCat(kSecretTypeLabel, "=cluster"), ShrinkSecret,
                  internal::ControllerHandler::Kind::kSecret);
  if (settings_.refresh_application_sets) {
    kube::InformerSettings s;
    s.resource = {"argoproj.io", "v1alpha1", "applicationsets", ""};
    s.page_size = settings_.informer_page_size;
    s.transform = ShrinkApplicationSet;
    appsets_ = std::make_unique<kube::Informer>(client_, clock_, std::move(s), &registry);
    refresher_ =
        std::make_unique<AppSetRefresher>(client_, clock_, settings_.appset_refresh, registry);
    refresh_ = std::make_unique<AppSetRefreshTrigger>(*refresher_, *appsets_, *decisions_);
  }
  spec_ =
      std::make_unique<SpecReconciler>(client_, clock_, *managed_clusters_, *secrets_, settings_);
  orphans_ = std::make_unique<OrphanSecretCollector>(client_, *gitops_clusters_, *secrets_,
                                                     *managed_clusters_, settings_,
                                                     *metrics_.managed_secrets);
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
  RETURN_IF_ERROR(ValidateGitOpsClusterControllerSettings(settings_));
  absl::MutexLock lock(&lifecycle_mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("GitOpsClusterController::Start called twice");
  }
  started_ = true;
  for (kube::Informer* informer : Informers()) {
    informer->Start();
  }
  loop_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
  internal::GitOpsClusterLog().Info("GitOpsCluster controller started");
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
  internal::GitOpsClusterLog().Info("GitOpsCluster controller stopped");
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
      metrics_.queue_depth->Set(static_cast<double>(queue_.Len()));
      return;
    case kube::WorkQueue::AddResult::kAlreadyQueued:
      return;
    case kube::WorkQueue::AddResult::kOverflowed:
      internal::GitOpsClusterLog().Warn(
          "GitOpsCluster work queue full; dropping keys until it drains, then resyncing",
          {{"depth", static_cast<int64_t>(queue_.Len())}});
      metrics_.overflows->Increment();
      return;
    case kube::WorkQueue::AddResult::kDropped:
      metrics_.overflows->Increment();
      return;
  }
}

std::string GitOpsClusterController::Pop(std::chrono::milliseconds max_wait) {
  queue_.Wait(max_wait);
  if (queue_.ShuttingDown()) {
    return "";
  }
  if (std::optional<std::string> key = queue_.Get()) {
    metrics_.queue_depth->Set(static_cast<double>(queue_.Len()));
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

std::chrono::steady_clock::time_point GitOpsClusterController::RunTimers() {
  const auto now = clock_.MonotonicNow();
  for (const std::string& key : retries_.TakeDue(now)) {
    Enqueue(key);
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
  if (auto due = retries_.NextDue(); due.has_value()) {
    next_timer = std::min(next_timer, *due);
  }
  return next_timer;
}

void GitOpsClusterController::Run(const std::stop_token& stop) {
  pthread_setname_np(pthread_self(), "gitops-loop");
  if (!WaitForInformers(stop)) {
    return;
  }
  internal::GitOpsClusterLog().Info(
      "informers synced; reconciling every GitOpsCluster",
      {{"gitopsclusters", static_cast<int64_t>(gitops_clusters_->Size())}});
  EnqueueAllGitOpsClusters();
  next_resync_ = clock_.MonotonicNow() + settings_.resync_period;
  while (!stop.stop_requested()) {
    const auto next_timer = RunTimers();
    const auto wait = std::clamp(
        std::chrono::duration_cast<std::chrono::milliseconds>(next_timer - clock_.MonotonicNow()),
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
  if (!used && refresh_) {
    refresh_->Forget(ns, placement);
  }
}

void GitOpsClusterController::EnqueueForCluster(const std::string& cluster) {
  for (const kube::ObjectPtr& g : gitops_clusters_->List()) {
    const std::string key = kube::ObjectKey(*g);
    const WantedSecrets* wanted = orphans_->WantedBy(key);
    bool concerned = wanted != nullptr && wanted->clusters.contains(cluster);
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
  const auto delay = retries_.Schedule(key);
  internal::GitOpsClusterLog().Debug(
      "reconcile retry scheduled",
      {{"resource", key}, {"delay_ms", static_cast<int64_t>(delay.count())}});
}

void GitOpsClusterController::ProcessPlacement(const std::string& placement_key) {
  const auto slash = placement_key.find('/');
  if (slash == std::string::npos) {
    return;
  }
  if (refresh_) {
    refresh_->DecisionsChanged(placement_key);
  }
  EnqueueForPlacement(placement_key.substr(0, slash), placement_key.substr(slash + 1));
}

void GitOpsClusterController::Process(const std::string& key) {
  if (key == kResyncKey) {
    EnqueueAllGitOpsClusters();
    return;
  }
  if (key == kOrphansKey) {
    if (orphans_->Collect() == ReconcileOutcome::kError) {
      ScheduleRetry(key);
    } else {
      retries_.Forget(key);
    }
    return;
  }
  if (absl::StartsWith(key, kPlacementKey)) {
    ProcessPlacement(key.substr(2));
    return;
  }
  if (absl::StartsWith(key, kClusterKey)) {
    EnqueueForCluster(key.substr(2));
    return;
  }
  if (absl::StartsWith(key, kSecretKey)) {
    if (!orphans_->IsWanted(key.substr(2))) {
      Enqueue(kOrphansKey);
    }
    return;
  }
  if (!absl::StartsWith(key, kGitOpsKey)) {
    internal::GitOpsClusterLog().Error("unknown work queue key", {{"resource", key}});
    return;
  }
  const std::string object_key = key.substr(2);
  const auto slash = object_key.find('/');
  if (slash == std::string::npos) {
    return;
  }
  const auto started = clock_.MonotonicNow();
  const ReconcileOutcome outcome =
      Reconcile(object_key.substr(0, slash), object_key.substr(slash + 1));
  metrics_.duration->Observe(
      std::chrono::duration<double>(clock_.MonotonicNow() - started).count());
  switch (outcome) {
    case ReconcileOutcome::kSuccess:
      metrics_.success->Increment();
      retries_.Forget(key);
      break;
    case ReconcileOutcome::kFailed:
      metrics_.failed->Increment();
      retries_.Forget(key);
      break;
    case ReconcileOutcome::kError:
      metrics_.error->Increment();
      ScheduleRetry(key);
      break;
  }
}

void GitOpsClusterController::Forget(const std::string& key) {
  // No finalizer (hub-apis §4.7): what it wrote becomes orphans.
  status_.Forget(key);
  if (orphans_->WantedBy(key) != nullptr) {
    orphans_->SetWanted(key, std::nullopt);
    internal::GitOpsClusterLog().Info("GitOpsCluster deleted; its cluster secrets are orphans now",
                                      {{"resource", key}});
    Enqueue(kOrphansKey);
  }
}

ReconcileOutcome GitOpsClusterController::Reconcile(const std::string& ns,
                                                    const std::string& name) {
  const std::string key = kube::ObjectKey(ns, name);
  const kube::ObjectPtr object = gitops_clusters_->Get(ns, name);
  if (object == nullptr || !FieldAt(Metadata(*object), "deletionTimestamp").is_null()) {
    Forget(key);
    return ReconcileOutcome::kSuccess;
  }
  const auto now = clock_.Now();
  const json original = status_.Current(key, *object);
  json status = original;
  EnsureConditions(status, now);

  // What the GitOpsCluster wants now; nullopt: keep what it wanted (a transient failure).
  std::optional<WantedSecrets> wanted = WantedSecrets{};
  ReconcileOutcome outcome = ReconcileOutcome::kSuccess;
  bool created_cluster_secrets = false;
  auto spec = ParseGitOpsClusterSpec(*object);
  if (!spec.ok()) {
    const std::string message(spec.status().message());
    const char* condition = absl::StrContains(message, "spec.argoServer") ? kCondArgoServerVerified
                                                                          : kCondPlacementResolved;
    SetCondition(status, condition, "False", kReasonInvalidConfiguration, CapMessage(message), now);
    status["message"] = CapMessage(message);
    internal::GitOpsClusterLog().Warn("invalid GitOpsCluster",
                                      {{"resource", key}, {"error", message}});
    outcome = ReconcileOutcome::kFailed;
  } else {
    SpecResult result = spec_->Reconcile(*object, *spec, std::move(status));
    outcome = result.outcome;
    status = std::move(result.status);
    wanted = std::move(result.wanted);
    created_cluster_secrets = result.created_cluster_secrets;
  }
  UpdateReadyCondition(status, now);
  status["phase"] = outcome == ReconcileOutcome::kSuccess ? "successful" : "failed";
  if (!status.contains("message") || !status["message"].is_string()) {
    status["message"] = "";
  }
  if (!status_.WriteIfChanged(ns, name, kube::ResourceVersionOf(*object), std::move(status),
                              original, now)) {
    outcome = ReconcileOutcome::kError;
  }

  if (refresh_ && spec.ok() && outcome != ReconcileOutcome::kError) {
    if (created_cluster_secrets) {
      // A first install: the decisions were there before us (no change to see), but the
      // generators could not use them without the secrets; their ApplicationSets failed or
      // generated nothing and wait for their requeue (180 s in examples/).
      refresh_->DecisionsChanged(absl::StrCat(spec->namespace_, "/", spec->placement_name));
    }
    // The cluster secrets the generators need are written now.
    refresh_->Reconciled(spec->namespace_, spec->placement_name);
  }
  if (wanted.has_value()) {
    const WantedSecrets* before = orphans_->WantedBy(key);
    if (before == nullptr || before->secrets != wanted->secrets ||
        before->clusters != wanted->clusters) {
      orphans_->SetWanted(key, std::move(wanted));
      Enqueue(kOrphansKey);
    }
  }
  return outcome;
}

}  // namespace mmi::dispatcher
