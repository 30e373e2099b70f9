// What the reconciler reads of the hub Applications: the cache (ObjectLister, an Informer in
// production) and its events (AppEventHandler, which only enqueues keys).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libs/kube/informer.h"
#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

// Read access to cached hub objects (an Informer in production, a map in tests). Thread-safe.
class ObjectLister {
 public:
  virtual ~ObjectLister() = default;
  // nullptr when absent.
  virtual kube::ObjectPtr Get(std::string_view ns, std::string_view name) const = 0;
  // Every cached object: a copy of the whole cache (decoded, with compact storage).
  virtual std::vector<kube::ObjectPtr> List() const = 0;
  // The key ("<namespace>/<name>") of every cached object: what a resync visits, so that it
  // never holds the whole cache twice (measured: 6.2 KB per Application at once through List()
  // with compact storage). The default goes through List(); InformerLister copies keys only.
  virtual std::vector<std::string> Keys() const;
  // True once the cache holds the complete initial list. Before that an absent object proves
  // nothing (it may simply not be listed yet), so nothing may be decided from Get() == nullptr.
  virtual bool synced() const = 0;
};

class InformerLister final : public ObjectLister {
 public:
  explicit InformerLister(const kube::Informer& informer) : informer_(informer) {}
  kube::ObjectPtr Get(std::string_view ns, std::string_view name) const override {
    return informer_.Get(ns, name);
  }
  std::vector<kube::ObjectPtr> List() const override { return informer_.List(); }
  std::vector<std::string> Keys() const override { return informer_.Keys(); }
  bool synced() const override { return informer_.HasSynced(); }

 private:
  const kube::Informer& informer_;
};

// Feeds an Application informer into the reconciler (`enqueue`, Reconciler::Enqueue): adds,
// deletes and updates that change what is dispatched (not status-only updates, hub-apis §5.2)
// enqueue the key. Runs on the informer thread; only enqueues.
class AppEventHandler final : public kube::InformerHandler {
 public:
  // `urgent`: a change the informer saw, ahead of the initial list's keys and of resyncs.
  using Enqueue = std::function<void(const std::string& key, bool urgent)>;
  explicit AppEventHandler(Enqueue enqueue) : enqueue_(std::move(enqueue)) {}
  void OnAdd(const kube::ObjectPtr& object, bool in_initial_list) override;
  void OnUpdate(const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) override;
  void OnDelete(const kube::ObjectPtr& last_state) override;

 private:
  const Enqueue enqueue_;
};

// True when the two versions of an Application differ in more than status and server
// bookkeeping (resourceVersion, generation, managedFields).
bool DispatchRelevantChange(const nlohmann::json& old_app, const nlohmann::json& new_app);

// The informer transform for Applications: drops status and managedFields.
kube::Transform ApplicationTransform();

}  // namespace mmi::dispatcher
