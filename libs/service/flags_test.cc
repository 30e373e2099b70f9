#include "libs/service/flags.h"

#include <gtest/gtest.h>

#include <fstream>

namespace mmi::service {
namespace {

struct Tiny {
  std::string name = "default";
};

absl::StatusOr<Tiny> ParseTiny(std::string_view text) {
  if (text == "bad") {
    return absl::InvalidArgumentError("name: expected a string");
  }
  return Tiny{.name = std::string(text)};
}

TEST(CommonFlagsTest, GivenFlagsOverrideTheSettingsAndOthersKeepThem) {
  CLI::App cli{"test"};
  CommonFlags flags;
  AddCommonFlags(cli, flags);
  const char* argv[] = {"svc",   "--kubeconfig", "/k",  "--leader-elect",
                        "false", "--log-level",  "warn"};
  ASSERT_TRUE(ParseFlags(cli, 7, argv).ok());
  HubSettings hub{.context = "ctx"};
  StoreSettings store{.dsn = "from-env"};
  LeaderSettings leader;
  std::string admin = "0.0.0.0:8080";
  std::string level = "info";
  ApplyCommonFlags(flags, hub, store, leader, admin, level);
  EXPECT_EQ(hub.kubeconfig, "/k");
  EXPECT_EQ(hub.context, "ctx");
  EXPECT_EQ(store.dsn, "from-env");
  EXPECT_FALSE(leader.enabled);
  EXPECT_EQ(admin, "0.0.0.0:8080");
  EXPECT_EQ(level, "warn");
}

TEST(CommonFlagsTest, HelpIsCancelledAndBadFlagsAreInvalid) {
  CLI::App cli{"test"};
  CommonFlags flags;
  AddCommonFlags(cli, flags);
  const char* help[] = {"svc", "--help"};
  const absl::Status h = ParseFlags(cli, 2, help);
  EXPECT_EQ(h.code(), absl::StatusCode::kCancelled);
  EXPECT_NE(h.message().find("--store-dsn"), std::string::npos);
  CLI::App cli2{"test"};
  CommonFlags flags2;
  AddCommonFlags(cli2, flags2);
  const char* bad[] = {"svc", "--no-such-flag"};
  EXPECT_EQ(ParseFlags(cli2, 2, bad).code(), absl::StatusCode::kInvalidArgument);
}

TEST(LoadConfigFileTest, NamesTheFileInEveryError) {
  EXPECT_EQ(LoadConfigFile<Tiny>("", ParseTiny)->name, "default");
  const auto missing = LoadConfigFile<Tiny>("/nonexistent/mmi.yaml", ParseTiny);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("--config /nonexistent/mmi.yaml: "), std::string::npos);
  const std::string path = ::testing::TempDir() + "/service_flags_test.yaml";
  std::ofstream(path) << "bad";
  const auto bad = LoadConfigFile<Tiny>(path, ParseTiny);
  EXPECT_EQ(bad.status().message(), path + ": name: expected a string");
}

}  // namespace
}  // namespace mmi::service
