// Realistic OCM events for transport tests (maestro-protocol.md §1.5): a spec event a source
// publishes and a status event an agent sends back.
#pragma once

#include <string>
#include <string_view>

#include "libs/cloudevents/event.h"

namespace mmi::transport::testing {

// spec.create_request from `source` to `cluster`; `seq` makes the id unique and is also the
// resourceversion, so tests can check order. Data is a small ManifestBundle.
cloudevents::Event MakeSpecEvent(std::string_view source, std::string_view cluster, int seq);

// status.update_request from `cluster`'s agent to the source `original_source`; `seq` is in the
// id and the sequenceid.
cloudevents::Event MakeStatusEvent(std::string_view original_source, std::string_view cluster,
                                   int seq);

// status.resync_request from `source` for `cluster` ("" = all clusters).
cloudevents::Event MakeStatusResyncRequest(std::string_view source, std::string_view cluster,
                                           int seq);

// The `seq` a MakeSpecEvent/MakeStatusEvent was built with (parsed back from the id), or -1.
int SeqOf(const cloudevents::Event& event);

}  // namespace mmi::transport::testing
