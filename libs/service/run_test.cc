#include "libs/service/run.h"

#include <gtest/gtest.h>

namespace mmi::service {
namespace {

TEST(RunServiceTest, SettingsOutcomeGivesTheExitCode) {
  const log::Logger log("test");
  EXPECT_EQ(ExitCodeForSettings(absl::OkStatus(), log), std::nullopt);
  EXPECT_EQ(ExitCodeForSettings(absl::CancelledError("usage: x"), log), 0);
  EXPECT_EQ(ExitCodeForSettings(absl::InvalidArgumentError("store.dsn: required"), log), 2);
}

TEST(RunServiceTest, AFailedStartStopsTheAppAndExitsOne) {
  const log::Logger log("test");
  bool stopped = false;
  bool waited = false;
  const int code =
      RunUntilStopped(log, {.start = [] { return absl::UnavailableError("database down"); },
                            .request_stop = [] {},
                            .wait =
                                [&] {
                                  waited = true;
                                  return 0;
                                },
                            .stop = [&] { stopped = true; }});
  EXPECT_EQ(code, 1);
  EXPECT_TRUE(stopped);
  EXPECT_FALSE(waited);
}

TEST(RunServiceTest, AnAppThatStopsByItselfReturnsItsExitCode) {
  BlockShutdownSignals();  // the signal thread is woken with SIGTERM when the app stops alone
  const log::Logger log("test");
  int stops = 0;
  const int code = RunUntilStopped(log, {.start = [] { return absl::OkStatus(); },
                                         .request_stop = [] {},
                                         .wait = [] { return 1; },  // e.g. lost leadership
                                         .stop = [&] { ++stops; }});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(stops, 1);
}

}  // namespace
}  // namespace mmi::service
