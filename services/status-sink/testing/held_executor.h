// An Executor whose tasks wait until the test runs them: work can pile up behind a store call
// or a hub write the test holds.
#pragma once

#include <deque>
#include <utility>

#include "libs/common/executor.h"

namespace mmi::status_sink {

class HeldExecutor final : public Executor {
 public:
  void Post(Task task) override { held_.push_back(std::move(task)); }
  void RunAll() {
    while (!held_.empty()) {
      Task task = std::move(held_.front());
      held_.pop_front();
      std::move(task)();
    }
  }

 private:
  std::deque<Task> held_;
};

}  // namespace mmi::status_sink
