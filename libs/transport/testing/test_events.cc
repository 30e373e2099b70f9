#include "libs/transport/testing/test_events.h"

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace mmi::transport::testing {
namespace {

cloudevents::Timestamp FixedTime(int seq) {
  return cloudevents::Timestamp(std::chrono::seconds(1'780'308'000) +
                                std::chrono::milliseconds(seq));
}

}  // namespace

cloudevents::Event MakeSpecEvent(std::string_view source, std::string_view cluster, int seq) {
  cloudevents::Event event;
  event.id = absl::StrCat("spec-", std::string(cluster), "-", seq);
  event.source = std::string(source);
  event.type = std::string(cloudevents::kSpecCreateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = FixedTime(seq);
  event.SetString(cloudevents::kExtClusterName, std::string(cluster));
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.SetString(cloudevents::kExtResourceId,
                  absl::StrCat("0000", seq, "-", std::string(cluster)));
  event.SetInteger(cloudevents::kExtResourceVersion, seq);
  event.SetString(cloudevents::kExtLogTracing, "{}");
  event.data = absl::StrCat(R"({"manifests":[{"apiVersion":"v1","kind":"ConfigMap",)",
                            R"("metadata":{"name":"cm-)", seq, R"(","namespace":"default"}}]})");
  return event;
}

cloudevents::Event MakeStatusEvent(std::string_view original_source, std::string_view cluster,
                                   int seq) {
  cloudevents::Event event;
  event.id = absl::StrCat("status-", std::string(cluster), "-", seq);
  event.source = absl::StrCat(std::string(cluster), "-work-agent");
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = FixedTime(seq);
  event.SetString(cloudevents::kExtClusterName, std::string(cluster));
  event.SetString(cloudevents::kExtOriginalSource, std::string(original_source));
  event.SetString(cloudevents::kExtResourceId,
                  absl::StrCat("0000", seq, "-", std::string(cluster)));
  event.SetInteger(cloudevents::kExtResourceVersion, 1);
  event.SetString(cloudevents::kExtSequenceId, absl::StrCat(1'000'000 + seq));
  event.SetString(cloudevents::kExtStatusHash, std::string(64, 'a'));
  event.data = R"({"conditions":[{"type":"Applied","status":"True"}],"resourceStatus":[]})";
  return event;
}

cloudevents::Event MakeStatusResyncRequest(std::string_view source, std::string_view cluster,
                                           int seq) {
  cloudevents::Event event;
  event.id = absl::StrCat("resync-", std::string(cluster), "-", seq);
  event.source = std::string(source);
  event.type = std::string(cloudevents::kStatusResyncRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = FixedTime(seq);
  event.SetString(cloudevents::kExtClusterName, std::string(cluster));
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.data = R"({"statusHashes":[]})";
  return event;
}

int SeqOf(const cloudevents::Event& event) {
  const auto dash = event.id.rfind('-');
  int seq = -1;
  if (dash == std::string::npos ||
      !absl::SimpleAtoi(std::string(event.id.substr(dash + 1)), &seq)) {
    return -1;
  }
  return seq;
}

}  // namespace mmi::transport::testing
