#include "libs/service/cli_parse.h"

#include "absl/strings/str_cat.h"

namespace mmi::service {

absl::Status ParseFlags(CLI::App& cli, int argc, const char* const* argv) {
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return absl::CancelledError(cli.help());
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(absl::StrCat("flags: ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace mmi::service
