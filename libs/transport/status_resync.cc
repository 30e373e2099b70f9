#include "libs/transport/status_resync.h"

#include <utility>

namespace mmi::transport {

absl::StatusOr<cloudevents::Event> MakeStatusResyncRequest(
    std::string_view source_id, std::string_view cluster,
    const cloudevents::ResourceStatusHashList& hashes, std::string id,
    cloudevents::Timestamp time) {
  absl::StatusOr<std::string> data = cloudevents::EncodeResourceStatusHashList(hashes);
  if (!data.ok()) {
    return data.status();
  }
  cloudevents::Event event;
  event.id = std::move(id);
  event.source = std::string(source_id);
  event.type = std::string(cloudevents::kStatusResyncRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = time;
  // §1.5: clustername = target or "", originalsource "", no resource extensions.
  event.SetString(cloudevents::kExtClusterName, std::string(cluster));
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.data = *std::move(data);
  return event;
}

}  // namespace mmi::transport
