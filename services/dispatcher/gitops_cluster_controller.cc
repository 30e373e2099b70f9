#include "services/dispatcher/gitops_cluster_controller.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "libs/common/log.h"
#include "libs/common/status_macros.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.gitopscluster");
  return logger;
}

// Queue keys: one namespace of keys per kind of work.
constexpr char kGitOpsKey[] = "g:";     // g:<ns>/<name>      reconcile one GitOpsCluster
constexpr char kPlacementKey[] = "p:";  // p:<ns>/<placement> GitOpsClusters of a Placement
constexpr char kClusterKey[] = "c:";    // c:<cluster>        GitOpsClusters deciding a cluster
constexpr char kSecretKey[] = "s:";     // s:<ns>/<name>      a secret of ours appeared
constexpr char kOrphansKey[] = "o";     // orphan secret clean-up
constexpr char kResyncKey[] = "r";      // everything (after a queue overflow)

kube::ResourceRef GitOpsClusters(std::string ns = "") {
  return {"apps.open-cluster-management.io", "v1beta1", "gitopsclusters", std::move(ns)};
}
kube::ResourceRef PlacementDecisions(std::string ns = "") {
  return {"cluster.open-cluster-management.io", "v1beta1", "placementdecisions", std::move(ns)};
}
kube::ResourceRef Placements(std::string ns) {
  return {"cluster.open-cluster-management.io", "v1beta1", "placements", std::move(ns)};
}
kube::ResourceRef ManagedClusters() {
  return {"cluster.open-cluster-management.io", "v1", "managedclusters", ""};
}
kube::ResourceRef Core(const char* resource, std::string ns = "") {
  return {"", "v1", resource, std::move(ns)};
}
kube::ResourceRef Rbac(const char* resource, std::string ns) {
  return {"rbac.authorization.k8s.io", "v1", resource, std::move(ns)};
}

using kube::BoolAt;
using kube::FieldAt;
using kube::KubeTime;
using kube::Label;
using kube::Labels;
using kube::Metadata;
using kube::StringAt;

bool IsOwned(const json& secret, const std::string& managed_by) {
  return Label(secret, kManagedByLabel) == managed_by;
}

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

// Maps informer events to queue keys. Runs on informer threads: only enqueues.
class GitOpsClusterController::Handler final : public kube::InformerHandler {
 public:
  enum class Kind { kGitOpsCluster, kDecision, kManagedCluster, kSecret };
  Handler(GitOpsClusterController& owner, Kind kind) : owner_(owner), kind_(kind) {}

  void OnAdd(const kube::ObjectPtr& object, bool in_initial_list) override {
    // The loop reconciles everything once all informers have synced.
    if (in_initial_list) {
      return;
    }
    switch (kind_) {
      case Kind::kGitOpsCluster:
        owner_.Enqueue(absl::StrCat(kGitOpsKey, kube::ObjectKey(*object)));
        break;
      case Kind::kDecision:
        EnqueuePlacement(*object);
        break;
      case Kind::kManagedCluster:
        owner_.Enqueue(absl::StrCat(kClusterKey, StringAt(Metadata(*object), "name")));
        break;
      case Kind::kSecret:
        // Mostly our own creates. One nobody wants any more (its GitOpsCluster changed while
        // the cache lagged) must reach the orphan clean-up; a foreign secret can change a
        // decision (the non-ACM guard).
        if (IsOwned(*object, owner_.settings_.managed_by)) {
          owner_.Enqueue(absl::StrCat(kSecretKey, kube::ObjectKey(*object)));
        } else {
          EnqueueSecretCluster(*object);
        }
        break;
    }
  }

  void OnUpdate(const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) override {
    const json& o = *old_object;
    const json& n = *new_object;
    switch (kind_) {
      case Kind::kGitOpsCluster:
        // Our own status writes come back as updates: only spec and annotation changes count.
        if (FieldAt(o, "spec") != FieldAt(n, "spec") ||
            FieldAt(Metadata(o), "annotations") != FieldAt(Metadata(n), "annotations") ||
            FieldAt(Metadata(o), "deletionTimestamp") !=
                FieldAt(Metadata(n), "deletionTimestamp")) {
          owner_.Enqueue(absl::StrCat(kGitOpsKey, kube::ObjectKey(n)));
        }
        break;
      case Kind::kDecision:
        if (FieldAt(o, "status") != FieldAt(n, "status") || Labels(o) != Labels(n)) {
          EnqueuePlacement(o);
          EnqueuePlacement(n);
        }
        break;
      case Kind::kManagedCluster:
        // Heartbeats and status are ignored (and dropped from the cache): labels are copied
        // onto the secrets, deletion makes secrets orphans.
        if (Labels(o) != Labels(n) || FieldAt(Metadata(o), "deletionTimestamp") !=
                                          FieldAt(Metadata(n), "deletionTimestamp")) {
          owner_.Enqueue(absl::StrCat(kClusterKey, StringAt(Metadata(n), "name")));
        }
        break;
      case Kind::kSecret:
        if (Labels(o) != Labels(n) || FieldAt(o, "data") != FieldAt(n, "data") ||
            FieldAt(o, "stringData") != FieldAt(n, "stringData") ||
            FieldAt(o, "type") != FieldAt(n, "type")) {
          EnqueueSecretCluster(o);
          EnqueueSecretCluster(n);
        }
        break;
    }
  }

  void OnDelete(const kube::ObjectPtr& last_state) override {
    switch (kind_) {
      case Kind::kGitOpsCluster:
        owner_.Enqueue(absl::StrCat(kGitOpsKey, kube::ObjectKey(*last_state)));
        break;
      case Kind::kDecision:
        EnqueuePlacement(*last_state);
        break;
      case Kind::kManagedCluster:
        owner_.Enqueue(absl::StrCat(kClusterKey, StringAt(Metadata(*last_state), "name")));
        owner_.Enqueue(kOrphansKey);
        break;
      case Kind::kSecret:
        // Someone deleted a secret we manage: the GitOpsClusters deciding it re-create it.
        EnqueueSecretCluster(*last_state);
        break;
    }
  }

 private:
  void EnqueuePlacement(const json& decision) {
    const std::string placement = Label(decision, kPlacementLabel);
    if (!placement.empty()) {
      owner_.Enqueue(
          absl::StrCat(kPlacementKey, StringAt(Metadata(decision), "namespace"), "/", placement));
    }
  }
  void EnqueueSecretCluster(const json& secret) {
    const std::string cluster = ClusterOfSecret(secret);
    if (!cluster.empty()) {
      owner_.Enqueue(absl::StrCat(kClusterKey, cluster));
    }
  }

  GitOpsClusterController& owner_;
  const Kind kind_;
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

  Managed managed;
  bool keep_previous = false;
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
    outcome = ReconcileSpec(*object, *spec, status, managed, keep_previous);
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
  if (!keep_previous) {
    auto it = managed_.find(key);
    if (it == managed_.end() || it->second.secrets != managed.secrets ||
        it->second.clusters != managed.clusters) {
      SetManaged(key, std::move(managed));
      Enqueue(kOrphansKey);
    }
  }
  return outcome;
}

GitOpsClusterController::Outcome GitOpsClusterController::ReconcileSpec(
    const json& gitops_cluster, const GitOpsClusterSpec& spec, json& status, Managed& managed,
    bool& keep_previous) {
  const auto now = clock_.Now();
  const std::string key = kube::ObjectKey(spec.namespace_, spec.name);
  const auto fail = [&](const char* condition, const char* reason, const std::string& message,
                        Outcome outcome) {
    SetCondition(status, condition, "False", reason, CapMessage(message), now);
    status["message"] = CapMessage(message);
    Log().Warn("GitOpsCluster not reconciled",
               {{"resource", key}, {"condition", condition}, {"error", message}});
    return outcome;
  };
  // A request that failed on the way (not an answer about the hub): keep what we had, retry.
  const auto transient = [&](const std::string& what, const absl::Status& error) {
    keep_previous = true;
    status["message"] = CapMessage(absl::StrCat(what, ": ", error.ToString()));
    Log().Warn("GitOpsCluster reconcile failed; retrying",
               {{"resource", key}, {"error", absl::StrCat(what, ": ", error.ToString())}});
    return Outcome::kError;
  };

  // Policy templates are not produced by this controller; say so instead of pretending.
  if (BoolAt(gitops_cluster, json::json_pointer("/spec/createPolicyTemplate"))) {
    SetCondition(status, kCondPolicyTemplateReady, "False", kReasonPolicyTemplateCreationFailed,
                 "spec.createPolicyTemplate is not supported by the mmi dispatcher", now);
  } else {
    SetCondition(status, kCondPolicyTemplateReady, "True", kReasonNotRequired,
                 "policy template not requested", now);
  }

  // 1. Namespace authorisation (§4.4 step 4).
  if (spec.argo_namespace != spec.namespace_) {
    auto ns = client_.Get(Core("namespaces"), spec.argo_namespace);
    if (!ns.ok() && !absl::IsNotFound(ns.status())) {
      return transient(absl::StrCat("GET namespace ", spec.argo_namespace), ns.status());
    }
    if (!ns.ok() || Label(*ns, kGitOpsArgoNamespaceLabel) != "true") {
      return fail(kCondArgoServerVerified, kReasonInvalidConfiguration,
                  absl::StrCat("namespace ", spec.argo_namespace,
                               " differs from the GitOpsCluster's "
                               "namespace and is not labelled ",
                               kGitOpsArgoNamespaceLabel, "=true"),
                  Outcome::kFailed);
    }
  }
  // 2. The Argo CD server is there (§4.4 step 5).
  if (StringAt(FieldAt(Metadata(gitops_cluster), "annotations"),
               kSkipArgoNamespaceVerifyAnnotation) != "true") {
    kube::ListOptions by_label;
    by_label.label_selector = kArgoServerServiceSelector;
    by_label.limit = 1;
    auto services = client_.List(Core("services", spec.argo_namespace), by_label);
    if (!services.ok()) {
      return transient(absl::StrCat("LIST services in ", spec.argo_namespace), services.status());
    }
    if (services->items.empty()) {
      return fail(kCondArgoServerVerified, kReasonArgoServerNotFound,
                  absl::StrCat("no Argo CD server Service (", kArgoServerServiceSelector,
                               ") in namespace ", spec.argo_namespace),
                  Outcome::kFailed);
    }
    SetCondition(status, kCondArgoServerVerified, "True", kReasonSuccess,
                 absl::StrCat("Argo CD server found in namespace ", spec.argo_namespace), now);
  } else {
    SetCondition(status, kCondArgoServerVerified, "True", kReasonSuccess,
                 absl::StrCat("verification of namespace ", spec.argo_namespace,
                              " skipped by annotation ", kSkipArgoNamespaceVerifyAnnotation),
                 now);
  }
  // 3. Duck-type ConfigMaps and the ApplicationSet controller's RBAC; failures do not stop the
  // reconcile (§4.4 steps 6-7).
  bool retry = false;
  if (absl::Status st = EnsureAppSetResources(spec.argo_namespace); !st.ok()) {
    SetCondition(status, kCondApplicationSetResourcesReady, "False", kReasonConfigMapCreationFailed,
                 CapMessage(st.ToString()), now);
    Log().Warn("cannot create ApplicationSet resources",
               {{"resource", key}, {"error", st.ToString()}});
    retry = true;
  } else {
    SetCondition(status, kCondApplicationSetResourcesReady, "True", kReasonSuccess,
                 absl::StrCat("acm-placement ConfigMaps and placement RBAC exist in namespace ",
                              spec.argo_namespace),
                 now);
  }

  // 4. Placement and its decisions (§4.4 step 8, §3.4).
  const std::string placement_key = kube::ObjectKey(spec.namespace_, spec.placement_name);
  if (auto placement = client_.Get(Placements(spec.namespace_), spec.placement_name);
      !placement.ok()) {
    if (!absl::IsNotFound(placement.status())) {
      return transient(absl::StrCat("GET Placement ", placement_key), placement.status());
    }
    return fail(kCondPlacementResolved, kReasonPlacementNotFound,
                absl::StrCat("Placement ", placement_key, " not found"), Outcome::kFailed);
  }
  kube::ListOptions list_options;
  list_options.label_selector = absl::StrCat(kPlacementLabel, "=", spec.placement_name);
  list_options.limit = settings_.decision_page_size;
  auto decisions = kube::ListAll(client_, PlacementDecisions(spec.namespace_), list_options);
  if (!decisions.ok()) {
    return transient(absl::StrCat("LIST PlacementDecisions of ", placement_key),
                     decisions.status());
  }
  auto clusters = ResolveDecisions(decisions->items);
  if (!clusters.ok()) {
    keep_previous = true;
    return fail(kCondPlacementResolved, kReasonInvalidConfiguration,
                std::string(clusters.status().message()), Outcome::kFailed);
  }
  std::map<std::string, kube::ObjectPtr> cluster_objects;
  std::vector<std::string> missing;
  for (const std::string& cluster : *clusters) {
    kube::ObjectPtr mc = managed_clusters_->Get("", cluster);
    if (mc == nullptr) {
      missing.push_back(cluster);
    } else {
      cluster_objects.emplace(cluster, std::move(mc));
    }
  }
  if (!missing.empty()) {
    // Upstream fails the whole step; the ManagedCluster's creation (or the decision's removal)
    // triggers the next reconcile.
    keep_previous = true;
    return fail(kCondPlacementResolved, kReasonPlacementNotFound,
                absl::StrCat("Placement ", placement_key, " decides ManagedCluster(s) ",
                             absl::StrJoin(missing, ", "), " that do not exist"),
                Outcome::kFailed);
  }
  SetCondition(
      status, kCondPlacementResolved, "True", kReasonSuccess,
      absl::StrCat("Placement ", placement_key, " resolved to ", clusters->size(),
                   " managed cluster(s) in ", decisions->items.size(), " PlacementDecision(s)"),
      now);
  managed.clusters = *clusters;

  // 5. Cluster secrets (§4.4 step 10, §4.5): the blank variant only.
  const json& agent =
      FieldAt(FieldAt(FieldAt(gitops_cluster, "spec"), "gitopsAddon"), "argoCDAgent");
  if (BoolAt(agent, json::json_pointer("/enabled"))) {
    return fail(kCondClustersRegistered, kReasonInvalidConfiguration,
                "spec.gitopsAddon.argoCDAgent is not supported by the mmi dispatcher (pull model "
                "only)",
                Outcome::kFailed);
  }
  if (!spec.create_blank_cluster_secrets) {
    return fail(kCondClustersRegistered, kReasonClusterRegistrationFailed,
                "only blank (pull-model) cluster secrets are supported: set "
                "spec.createBlankClusterSecrets: true",
                Outcome::kFailed);
  }
  std::set<std::string> foreign;  // clusters with a non-ACM Argo CD cluster secret
  for (const kube::ObjectPtr& secret : secrets_->List(spec.argo_namespace)) {
    if (IsNonAcmClusterSecret(*secret)) {
      foreign.insert(ClusterOfSecret(*secret));
    }
  }
  std::vector<std::string> failures;
  for (const auto& [cluster, mc] : cluster_objects) {
    json desired = BlankClusterSecret(*mc, spec);
    desired["metadata"]["labels"][kManagedByLabel] = settings_.managed_by;
    managed.secrets.emplace(kube::ObjectKey(desired),
                            kube::ObjectKey(spec.argo_namespace, cluster));
    if (foreign.contains(cluster)) {
      failures.push_back(
          absl::StrCat(cluster, ": found existing non-ACM ArgoCD clusters secrets in namespace ",
                       spec.argo_namespace));
      continue;
    }
    if (absl::Status st = WriteClusterSecret(desired); !st.ok()) {
      failures.push_back(absl::StrCat(cluster, ": ", st.ToString()));
      retry = true;
    }
  }
  if (!failures.empty()) {
    fail(kCondClustersRegistered, kReasonClusterRegistrationFailed,
         absl::StrCat("cannot register ", failures.size(), " of ", cluster_objects.size(),
                      " managed cluster(s): ", absl::StrJoin(failures, "; ")),
         Outcome::kFailed);
    return retry ? Outcome::kError : Outcome::kFailed;
  }
  SetCondition(status, kCondClustersRegistered, "True", kReasonSuccess,
               absl::StrCat("cluster secrets of ", cluster_objects.size(),
                            " managed cluster(s) written to namespace ", spec.argo_namespace),
               now);
  status["message"] = CapMessage(AddedClustersMessage(*clusters, spec.argo_namespace));
  return retry ? Outcome::kError : Outcome::kSuccess;
}

absl::Status GitOpsClusterController::CreateIfAbsent(const kube::ResourceRef& ref,
                                                     const json& object) {
  const std::string name = StringAt(Metadata(object), "name");
  auto existing = client_.Get(ref, name);
  if (existing.ok()) {
    return absl::OkStatus();
  }
  if (!absl::IsNotFound(existing.status())) {
    return existing.status();
  }
  auto created = client_.Create(ref, object, {.field_manager = settings_.field_manager});
  if (created.ok()) {
    Log().Info("created",
               {{"resource", absl::StrCat(ref.GroupResource(), " ", kube::ObjectKey(object))}});
    return absl::OkStatus();
  }
  return absl::IsAlreadyExists(created.status()) ? absl::OkStatus() : created.status();
}

absl::Status GitOpsClusterController::EnsureAppSetResources(const std::string& argo_namespace) {
  for (const json& config_map : DuckTypeConfigMaps(argo_namespace)) {
    RETURN_IF_ERROR(CreateIfAbsent(Core("configmaps", argo_namespace), config_map));
  }
  RETURN_IF_ERROR(
      CreateIfAbsent(Rbac("roles", argo_namespace), AppSetPlacementRole(argo_namespace)));
  const kube::ResourceRef bindings = Rbac("rolebindings", argo_namespace);
  auto binding = client_.Get(bindings, AppSetPlacementRbacName(argo_namespace));
  if (binding.ok()) {
    return absl::OkStatus();
  }
  if (!absl::IsNotFound(binding.status())) {
    return binding.status();
  }
  auto accounts = kube::ListAll(client_, Core("serviceaccounts", argo_namespace), {});
  if (!accounts.ok()) {
    return accounts.status();
  }
  return CreateIfAbsent(
      bindings, AppSetPlacementRoleBinding(argo_namespace,
                                           PickAppSetControllerServiceAccount(accounts->items)));
}

absl::Status GitOpsClusterController::WriteClusterSecret(const json& desired) {
  const std::string ns = StringAt(Metadata(desired), "namespace");
  const std::string name = StringAt(Metadata(desired), "name");
  const kube::ResourceRef ref = Core("secrets", ns);
  const kube::WriteOptions options{.field_manager = settings_.field_manager};
  json existing;
  if (kube::ObjectPtr cached = secrets_->Get(ns, name); cached != nullptr) {
    if (ClusterSecretUpToDate(*cached, desired)) {
      return absl::OkStatus();
    }
    existing = *cached;
  } else {
    auto created = client_.Create(ref, desired, options);
    if (created.ok()) {
      Log().Info("cluster secret created", {{"resource", kube::ObjectKey(ns, name)}});
      return absl::OkStatus();
    }
    if (!absl::IsAlreadyExists(created.status())) {
      return created.status();
    }
    ASSIGN_OR_RETURN(existing, client_.Get(ref, name));
    if (ClusterSecretUpToDate(existing, desired)) {
      return absl::OkStatus();
    }
  }
  // The cache may be behind: one retry from a fresh read on a resourceVersion conflict.
  for (int attempt = 0;; ++attempt) {
    auto updated = client_.Update(ref, ClusterSecretUpdate(existing, desired), options);
    if (updated.ok()) {
      Log().Info("cluster secret updated", {{"resource", kube::ObjectKey(ns, name)}});
      return absl::OkStatus();
    }
    if (!absl::IsAborted(updated.status()) || attempt > 0) {
      return updated.status();
    }
    ASSIGN_OR_RETURN(existing, client_.Get(ref, name));
    if (ClusterSecretUpToDate(existing, desired)) {
      return absl::OkStatus();
    }
  }
}

GitOpsClusterController::Outcome GitOpsClusterController::CleanUpOrphans() {
  if (settings_.orphan_secret_policy == OrphanSecretPolicy::kDeleteWhenUndecided) {
    // Deleting needs to know every GitOpsCluster's wishes; wait until each was reconciled (its
    // first reconcile enqueues this clean-up again).
    for (const kube::ObjectPtr& g : gitops_clusters_->List()) {
      if (!managed_.contains(kube::ObjectKey(*g))) {
        return Outcome::kSuccess;
      }
    }
  }
  std::set<std::string> wanted_clusters;  // "namespace/cluster" with a wanted secret
  for (const auto& [key, managed] : managed_) {
    for (const auto& [secret, cluster] : managed.secrets) {
      wanted_clusters.insert(cluster);
    }
  }
  bool error = false;
  for (const kube::ObjectPtr& secret : secrets_->List()) {
    if (!IsOwned(*secret, settings_.managed_by)) {
      continue;
    }
    const std::string key = kube::ObjectKey(*secret);
    const std::string cluster = ClusterOfSecret(*secret);
    if (wanted_.contains(key) || cluster.empty()) {
      continue;  // wanted, or its cluster is unknown: never deleted (§4.7)
    }
    const std::string ns = StringAt(Metadata(*secret), "namespace");
    const bool superseded = wanted_clusters.contains(kube::ObjectKey(ns, cluster)) &&
                            EffectiveSecretData(*secret)["server"] ==
                                absl::StrCat("https://", cluster, "-control-plane");
    if (!superseded &&
        settings_.orphan_secret_policy == OrphanSecretPolicy::kDeleteWhenClusterGone) {
      if (managed_clusters_->Get("", cluster) != nullptr) {
        continue;
      }
      auto mc = client_.Get(ManagedClusters(), cluster);  // the cache may lag: confirm the 404
      if (mc.ok()) {
        continue;
      }
      if (!absl::IsNotFound(mc.status())) {
        error = true;
        continue;
      }
    }
    const std::string name = StringAt(Metadata(*secret), "name");
    kube::DeleteOptions only_this;
    only_this.precondition_uid = StringAt(Metadata(*secret), "uid");
    absl::Status st = client_.Delete(Core("secrets", ns), name, only_this);
    if (st.ok() || absl::IsNotFound(st)) {
      Log().Info("orphaned cluster secret deleted", {{"resource", key}, {"cluster", cluster}});
    } else {
      Log().Warn("cannot delete orphaned cluster secret",
                 {{"resource", key}, {"error", st.ToString()}});
      error = true;
    }
  }
  return error ? Outcome::kError : Outcome::kSuccess;
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
