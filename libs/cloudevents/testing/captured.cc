#include "libs/cloudevents/testing/captured.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents::testing {

absl::StatusOr<std::string> ReadCapturedFile(std::string_view file) {
  const std::string path = absl::StrCat(MMI_CAPTURED_SAMPLES_DIR, "/", std::string(file));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read the captured traffic file ", path));
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

absl::StatusOr<std::vector<CapturedRecord>> ReadCaptured(std::string_view file) {
  absl::StatusOr<std::string> text = ReadCapturedFile(file);
  if (!text.ok()) {
    return text.status();
  }
  std::vector<CapturedRecord> records;
  std::istringstream lines(*text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) {
      continue;
    }
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("topic") || !record.contains("payload") ||
        !record.contains("properties")) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(file), ":", number, ": not a mosquitto_sub -F %j record"));
    }
    CapturedRecord out;
    out.line = number;
    out.topic = record["topic"].get<std::string>();
    // mosquitto_sub prints an empty payload as null.
    if (record["payload"].is_string()) {
      out.message.payload = record["payload"].get<std::string>();
    }
    const nlohmann::json& properties = record["properties"];
    if (properties.contains("content-type") && properties["content-type"].is_string()) {
      out.message.content_type = properties["content-type"].get<std::string>();
    }
    if (properties.contains("user-properties")) {
      for (const auto& [key, value] : properties["user-properties"].items()) {
        out.message.user_properties.emplace_back(key, value.get<std::string>());
      }
    }
    records.push_back(std::move(out));
  }
  return records;
}

}  // namespace mmi::cloudevents::testing
