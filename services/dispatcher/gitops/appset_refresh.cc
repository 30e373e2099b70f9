#include "services/dispatcher/gitops/appset_refresh.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/kube/label_selector.h"
#include "libs/kube_object/object.h"
#include "libs/service/kube_event.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {
namespace {

using kube::StringAt;
using nlohmann::json;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.appset_refresh");
  return logger;
}

kube::ResourceRef ApplicationSets(std::string ns) {
  return {"argoproj.io", "v1alpha1", "applicationsets", std::move(ns)};
}

bool GeneratorReads(const json& generator, const json& decision,
                    const std::map<std::string, std::string>& labels) {
  if (!generator.is_object()) {
    return false;
  }
  for (const char* combinator : {"matrix", "merge"}) {
    const auto it = generator.find(combinator);
    if (it != generator.end() && it->is_object() && it->contains("generators") &&
        (*it)["generators"].is_array()) {
      for (const json& nested : (*it)["generators"]) {
        if (GeneratorReads(nested, decision, labels)) {
          return true;
        }
      }
    }
  }
  const auto cdr = generator.find("clusterDecisionResource");
  if (cdr == generator.end() || !cdr->is_object() ||
      StringAt(*cdr, json::json_pointer("/configMapRef")) != kPlacementDuckConfigMap) {
    return false;
  }
  const std::string name = StringAt(*cdr, json::json_pointer("/name"));
  if (!name.empty()) {
    return name == StringAt(decision, json::json_pointer("/metadata/name"));
  }
  const auto selector_json = cdr->find("labelSelector");
  if (selector_json == cdr->end()) {
    return false;
  }
  auto selector = kube::LabelSelector::FromJson(*selector_json);
  // The generator refuses an empty selector (hub-apis §2.1): it reads nothing.
  return selector.ok() && !selector->empty() && selector->Matches(labels);
}

}  // namespace

bool ReadsDecision(const json& appset, const json& decision) {
  const json::json_pointer generators("/spec/generators");
  if (!appset.contains(generators) || !appset.at(generators).is_array()) {
    return false;
  }
  const auto labels = kube::LabelsOf(decision);
  for (const json& generator : appset.at(generators)) {
    if (GeneratorReads(generator, decision, labels)) {
      return true;
    }
  }
  return false;
}

void ShrinkApplicationSet(json& appset) {
  json out = {{"apiVersion", appset.value("apiVersion", "argoproj.io/v1alpha1")},
              {"kind", appset.value("kind", "ApplicationSet")},
              {"metadata", json::object()}};
  if (appset.contains("metadata") && appset["metadata"].is_object()) {
    for (const char* key : {"name", "namespace", "uid", "resourceVersion"}) {
      if (appset["metadata"].contains(key)) {
        out["metadata"][key] = std::move(appset["metadata"][key]);
      }
    }
  }
  if (appset.contains("spec") && appset["spec"].is_object() &&
      appset["spec"].contains("generators")) {
    out["spec"]["generators"] = std::move(appset["spec"]["generators"]);
  }
  appset = std::move(out);
}

struct AppSetRefresher::Metrics {
  explicit Metrics(prometheus::Registry& registry)
      : family(prometheus::BuildCounter()
                   .Name("mmi_gitopscluster_appset_refreshes_total")
                   .Help("ApplicationSets asked to refresh after their Placement's decisions "
                         "changed, by result (ok, not_found, error)")
                   .Register(registry)),
        ok(family.Add({{"result", "ok"}})),
        not_found(family.Add({{"result", "not_found"}})),
        error(family.Add({{"result", "error"}})) {}
  prometheus::Family<prometheus::Counter>& family;
  prometheus::Counter& ok;
  prometheus::Counter& not_found;
  prometheus::Counter& error;
};

AppSetRefresher::AppSetRefresher(kube::KubeClient& client, const Clock& clock,
                                 AppSetRefreshSettings settings, prometheus::Registry& registry)
    : client_(client),
      clock_(clock),
      settings_(std::move(settings)),
      metrics_(std::make_unique<Metrics>(registry)) {}

AppSetRefresher::~AppSetRefresher() = default;

void AppSetRefresher::DecisionsChanged(const std::vector<kube::ObjectPtr>& appsets,
                                       const std::string& placement,
                                       const std::vector<kube::ObjectPtr>& decisions) {
  const auto now = clock_.MonotonicNow();
  for (const kube::ObjectPtr& appset : appsets) {
    bool reads = false;
    for (const kube::ObjectPtr& decision : decisions) {
      reads = reads || ReadsDecision(*appset, *decision);
    }
    if (!reads) {
      continue;
    }
    const std::string key = kube::ObjectKey(*appset);
    const std::string why = absl::StrCat("the decisions of Placement ", placement, " changed");
    const auto last = last_sent_.find(key);
    if (last != last_sent_.end() && now - last->second < settings_.min_interval) {
      waiting_[key] = Waiting{*appset, why};  // sent when the interval ends
      continue;
    }
    waiting_.erase(key);
    Send(*appset, why);
  }
}

std::optional<std::chrono::steady_clock::time_point> AppSetRefresher::SendDue() {
  const auto now = clock_.MonotonicNow();
  std::optional<std::chrono::steady_clock::time_point> next;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const auto due = last_sent_[it->first] + settings_.min_interval;
    if (due <= now) {
      Waiting w = std::move(it->second);
      it = waiting_.erase(it);
      Send(w.appset, w.why);
      continue;
    }
    next = next ? std::min(*next, due) : due;
    ++it;
  }
  return next;
}

void AppSetRefresher::Send(const json& appset, const std::string& why) {
  const std::string ns = StringAt(appset, json::json_pointer("/metadata/namespace"));
  const std::string name = StringAt(appset, json::json_pointer("/metadata/name"));
  last_sent_[ns + "/" + name] = clock_.MonotonicNow();
  kube::PatchOptions options;
  options.field_manager = settings_.field_manager;
  auto patched = client_.Patch(
      ApplicationSets(ns), name, kube::PatchType::kMerge,
      {{"metadata", {{"annotations", {{kAppSetRefreshAnnotation, "true"}}}}}}, options, "");
  if (!patched.ok()) {
    if (absl::IsNotFound(patched.status())) {
      metrics_->not_found.Increment();
      return;
    }
    metrics_->error.Increment();
    Log().Warn("cannot ask an ApplicationSet to refresh; its next requeue picks the change up",
               {{"resource", ns + "/" + name}, {"error", patched.status().ToString()}});
    return;
  }
  metrics_->ok.Increment();
  Log().Info("asked the ApplicationSet controller to refresh",
             {{"resource", ns + "/" + name}, {"why", why}});
  service::KubeEventSpec spec;
  spec.type = "Normal";
  spec.reason = "RefreshRequested";
  spec.message = absl::StrCat(why, ": asked the ApplicationSet controller to reconcile now (",
                              kAppSetRefreshAnnotation, ")");
  spec.instance = settings_.event_instance;
  const json event = service::MakeKubeEvent(
      *patched, spec, clock_.Now(),
      absl::StrCat(absl::Hex(static_cast<uint64_t>(clock_.Now().time_since_epoch().count())),
                   absl::Hex(++event_counter_)));
  auto created = client_.Create({"", "v1", "events", ns}, event, kube::WriteOptions{});
  if (!created.ok()) {
    Log().Debug("could not write a Kubernetes Event",
                {{"resource", ns + "/" + name}, {"error", created.status().ToString()}});
  }
}

}  // namespace mmi::dispatcher
