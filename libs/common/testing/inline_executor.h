// An Executor that runs each task at once on the posting thread, so that a unit test sees the
// work a collaborator hands off done by the time the call returns.
#pragma once

#include <utility>

#include "libs/common/executor.h"

namespace mmi::testing {

class InlineExecutor final : public Executor {
 public:
  void Post(Task task) override { std::move(task)(); }
};

}  // namespace mmi::testing
