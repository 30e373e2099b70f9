#include "tools/fleet-sim/spoke_agent_runner.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/common/log.h"

namespace mmi::fleet_sim {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.spoke");
  return logger;
}

}  // namespace

SpokeAgentRunner::SpokeAgentRunner(std::unique_ptr<SpokeWorkAgent> agent, kube::KubeClient& client,
                                   SpokeRunnerSettings settings)
    : cluster_(agent->cluster()), agent_(std::move(agent)), client_(client), settings_(settings) {}

SpokeAgentRunner::~SpokeAgentRunner() { Stop(); }

void SpokeAgentRunner::Start(SpokeEventSink sink) {
  sink_ = std::move(sink);
  worker_ = std::thread([this] { Loop(); });
}

void SpokeAgentRunner::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (std::exchange(stopping_, true)) {
      return;
    }
  }
  if (worker_.joinable()) {
    worker_.join();
  }
  watches_.clear();  // requests stop and joins each watch thread
}

void SpokeAgentRunner::Enqueue(Task task) {
  absl::MutexLock lock(&mu_);
  if (!stopping_) {
    tasks_.push_back(std::move(task));
  }
}

void SpokeAgentRunner::Post(cloudevents::Event event) { Enqueue(std::move(event)); }

void SpokeAgentRunner::PostSpecResync() { Enqueue(SpecResyncCue{}); }

void SpokeAgentRunner::Loop() {
  pthread_setname_np(pthread_self(), absl::StrCat("spoke-", cluster_).substr(0, 15).c_str());
  auto next_resync = std::chrono::steady_clock::now() + settings_.resync;
  while (true) {
    std::deque<Task> batch;
    {
      absl::MutexLock lock(&mu_);
      const auto wait = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     next_resync - std::chrono::steady_clock::now()),
                                 std::chrono::milliseconds(0));
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](SpokeAgentRunner* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                                    self->mu_) { return self->stopping_ || !self->tasks_.empty(); },
                               this),
                           absl::FromChrono(wait));
      if (stopping_) {
        return;
      }
      batch.swap(tasks_);
    }
    for (Task& task : batch) {
      Run(task);
    }
    if (std::chrono::steady_clock::now() >= next_resync) {
      sink_(agent_->Resync());
      next_resync = std::chrono::steady_clock::now() + settings_.resync;
    }
    StartWatches();
  }
}

void SpokeAgentRunner::Run(Task& task) {
  if (auto* event = std::get_if<cloudevents::Event>(&task)) {
    auto replies = agent_->Handle(*event);
    if (!replies.ok()) {
      Log().Warn("dropping an event the agent cannot handle",
                 {{"cluster", cluster_}, {"error", std::string(replies.status().message())}});
      return;
    }
    sink_(*std::move(replies));
  } else if (std::holds_alternative<SpecResyncCue>(task)) {
    sink_({agent_->SpecResyncRequest()});
  } else {
    auto& change = std::get<ObjectEvent>(task);
    sink_(agent_->ObjectChanged(change.ref, change.object, change.deleted));
  }
}

void SpokeAgentRunner::StartWatches() {
  for (const kube::ResourceRef& ref : agent_->WatchedCollections()) {
    const std::string key = ref.CollectionPath();
    if (watches_.contains(key)) {
      continue;
    }
    watches_.emplace(
        key, std::jthread([this, ref](const std::stop_token& stop) { WatchLoop(ref, stop); }));
  }
}

void SpokeAgentRunner::WatchLoop(const kube::ResourceRef& ref, const std::stop_token& stop) {
  pthread_setname_np(pthread_self(), "spoke-watch");
  while (!stop.stop_requested()) {
    kube::WatchOptions options;
    options.timeout = std::chrono::seconds(300);
    const absl::Status status = client_.Watch(
        ref, options,
        [&](kube::WatchEvent&& event) {
          if (event.type == kube::WatchEventType::kError) {
            return false;
          }
          if (event.type != kube::WatchEventType::kBookmark) {
            Enqueue(ObjectEvent{ref, std::move(event.object),
                                event.type == kube::WatchEventType::kDeleted});
          }
          return true;
        },
        stop);
    if (!status.ok() && !absl::IsCancelled(status)) {
      Log().Debug("watch ended", {{"cluster", cluster_},
                                  {"collection", ref.CollectionPath()},
                                  {"error", std::string(status.message())}});
    }
    // Wait before watching again (what was missed meanwhile, the periodic resync reports).
    std::mutex wait_mu;
    std::condition_variable_any wake;
    std::unique_lock lock(wait_mu);
    wake.wait_for(lock, stop, settings_.watch_retry, [] { return false; });
  }
}

}  // namespace mmi::fleet_sim
