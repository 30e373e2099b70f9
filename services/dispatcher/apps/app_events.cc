#include "services/dispatcher/apps/app_events.h"

#include "libs/kube_object/object.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

json WithoutBookkeeping(const json& app) {
  json copy = app;
  copy.erase("status");
  if (auto meta = copy.find("metadata"); meta != copy.end() && meta->is_object()) {
    meta->erase("resourceVersion");
    meta->erase("generation");
    meta->erase("managedFields");
  }
  return copy;
}

}  // namespace

std::vector<std::string> ObjectLister::Keys() const {
  std::vector<std::string> keys;
  for (const kube::ObjectPtr& object : List()) {
    keys.push_back(kube::ObjectKey(*object));
  }
  return keys;
}

bool DispatchRelevantChange(const json& old_app, const json& new_app) {
  return WithoutBookkeeping(old_app) != WithoutBookkeeping(new_app);
}

kube::Transform ApplicationTransform() {
  return kube::DropFields({"/status", "/metadata/managedFields"});
}

// A change the informer saw (watch event, or what a relist found changed) goes ahead of the
// initial list's keys and of resyncs: it never waits behind 300,000 unchanged Applications.
void AppEventHandler::OnAdd(const kube::ObjectPtr& object, bool in_initial_list) {
  enqueue_(kube::ObjectKey(*object), /*urgent=*/!in_initial_list);
}

void AppEventHandler::OnUpdate(const kube::ObjectPtr& old_object,
                               const kube::ObjectPtr& new_object) {
  if (DispatchRelevantChange(*old_object, *new_object)) {
    enqueue_(kube::ObjectKey(*new_object), /*urgent=*/true);
  }
}

void AppEventHandler::OnDelete(const kube::ObjectPtr& last_state) {
  enqueue_(kube::ObjectKey(*last_state), /*urgent=*/true);
}

}  // namespace mmi::dispatcher
