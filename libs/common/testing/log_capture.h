// LogCapture: the log lines written while it lives (log::SetOutputForTest), for tests that
// check what a component logged.
#pragma once

#include <sstream>
#include <string>

#include "libs/common/log.h"

namespace mmi::testing {

class LogCapture {
 public:
  LogCapture() { log::SetOutputForTest(&out_); }
  ~LogCapture() { log::SetOutputForTest(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

}  // namespace mmi::testing
