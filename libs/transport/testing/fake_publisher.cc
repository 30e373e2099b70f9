#include "libs/transport/testing/fake_publisher.h"

#include <utility>

namespace mmi::transport::testing {

FakePublisher::FakePublisher(Mode mode, prometheus::Registry& registry)
    : mode_(mode),
      metrics_(std::make_unique<TransportMetrics>(registry, "fake", ClientRole::kPublisher)) {}

void FakePublisher::Record(const absl::Status& status) {
  if (metrics_ != nullptr) {
    metrics_->RecordPublish(status, std::chrono::steady_clock::duration::zero());
  }
}

absl::Status FakePublisher::Start() {
  absl::MutexLock lock(&mu_);
  ++start_calls_;
  if (start_result_.ok()) {
    started_ = true;
  }
  return start_result_;
}

void FakePublisher::Publish(cloudevents::Event event, PublishCallback done) {
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    published_.push_back(event);
    if (!started_ || stopped_) {
      result = absl::FailedPreconditionError("FakePublisher: Publish() outside Start()..Stop()");
    } else if (!scripted_.empty()) {
      result = std::move(scripted_.front());
      scripted_.pop_front();
    } else if (!connected_) {
      result = absl::UnavailableError("FakePublisher: not connected");
    } else if (mode_ == Mode::kManual) {
      pending_.push_back(Pending{std::move(event), std::move(done)});
      return;
    }
    if (result.ok()) {
      accepted_.push_back(event);
    }
  }
  Record(result);
  std::move(done)(std::move(result));
}

void FakePublisher::Stop() {
  std::deque<Pending> pending;
  {
    absl::MutexLock lock(&mu_);
    ++stop_calls_;
    stopped_ = true;
    pending.swap(pending_);
  }
  for (Pending& p : pending) {
    absl::Status status = absl::UnavailableError("FakePublisher: stopped before completion");
    Record(status);
    std::move(p.done)(std::move(status));
  }
}

bool FakePublisher::connected() const {
  absl::MutexLock lock(&mu_);
  return started_ && !stopped_ && connected_;
}

void FakePublisher::SetStartResult(absl::Status status) {
  absl::MutexLock lock(&mu_);
  start_result_ = std::move(status);
}

void FakePublisher::SetConnected(bool connected) {
  absl::MutexLock lock(&mu_);
  connected_ = connected;
}

size_t FakePublisher::max_in_flight() const {
  absl::MutexLock lock(&mu_);
  return max_in_flight_;
}

void FakePublisher::SetMaxInFlight(size_t max_in_flight) {
  absl::MutexLock lock(&mu_);
  max_in_flight_ = max_in_flight;
}

void FakePublisher::FailNext(absl::Status status) {
  absl::MutexLock lock(&mu_);
  scripted_.push_back(std::move(status));
}

bool FakePublisher::CompleteNext(absl::Status status) {
  Pending next;
  {
    absl::MutexLock lock(&mu_);
    if (pending_.empty()) {
      return false;
    }
    next = std::move(pending_.front());
    pending_.pop_front();
    if (status.ok()) {
      accepted_.push_back(next.event);
    }
  }
  Record(status);
  std::move(next.done)(std::move(status));
  return true;
}

int FakePublisher::CompleteAll(absl::Status status) {
  int n = 0;
  while (CompleteNext(status)) {
    ++n;
  }
  return n;
}

std::vector<cloudevents::Event> FakePublisher::published() const {
  absl::MutexLock lock(&mu_);
  return published_;
}

std::vector<cloudevents::Event> FakePublisher::accepted() const {
  absl::MutexLock lock(&mu_);
  return accepted_;
}

int FakePublisher::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(pending_.size());
}

int FakePublisher::start_calls() const {
  absl::MutexLock lock(&mu_);
  return start_calls_;
}

int FakePublisher::stop_calls() const {
  absl::MutexLock lock(&mu_);
  return stop_calls_;
}

}  // namespace mmi::transport::testing
