// Helpers shared by the libFuzzer targets of libs/cloudevents.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace mmi::cloudevents::fuzz {

// A property that must hold for every accepted input; aborts (a fuzzer finding) otherwise.
inline void Check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

// Decoders may only fail with kInvalidArgument (or kResourceExhausted on allocation failure).
inline void CheckDecodeError(const absl::Status& status) {
  Check(status.code() == absl::StatusCode::kInvalidArgument ||
            status.code() == absl::StatusCode::kResourceExhausted,
        "decoder returned an unexpected status code");
}

// Text framing of a binary-mode message (MQTT / Kafka), so seeds can be written by hand:
//   line 1: content type, or "~" for none
//   then one "name=value" line per property/header, until an empty line
//   the rest: payload
struct FramedMessage {
  std::optional<std::string> content_type;
  std::vector<std::pair<std::string, std::string>> properties;
  std::string payload;
};

inline FramedMessage ParseFramed(std::string_view input) {
  FramedMessage out;
  auto next_line = [&](std::string_view* line) {
    const auto end = input.find('\n');
    if (end == std::string_view::npos) {
      *line = input;
      input = {};
      return false;
    }
    *line = input.substr(0, end);
    input.remove_prefix(end + 1);
    return true;
  };
  std::string_view line;
  const bool more = next_line(&line);
  if (line != "~") {
    out.content_type = std::string(line);
  }
  if (!more) {
    return out;
  }
  while (next_line(&line) && !line.empty()) {
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) {
      out.properties.emplace_back(std::string(line), std::string());
    } else {
      out.properties.emplace_back(std::string(line.substr(0, eq)),
                                  std::string(line.substr(eq + 1)));
    }
  }
  if (!line.empty()) {  // last property line without a trailing newline
    return out;
  }
  out.payload = std::string(input);
  return out;
}

}  // namespace mmi::cloudevents::fuzz
