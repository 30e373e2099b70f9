// gRPC binding (§4): Event <-> io.cloudevents.v1.CloudEvent with OCM's attribute keys.
//
// Encoding (binary mode, as Go sends): id/source/spec_version/type in fields 1-4;
// `datacontenttype` -> attributes["contenttype"] (ce_string); `time` -> attributes["ce-time"]
// (ce_timestamp); extension x -> attributes["ce-x"] with the oneof chosen from the value type
// (String -> ce_string, Integer -> ce_integer, Boolean -> ce_boolean, Timestamp -> ce_timestamp,
// Binary -> ce_bytes); data -> binary_data. A heartbeat Event (type kHeartbeatType) encodes to
// fields 1, 3, 4 only.
//
// Decoding accepts binary mode (non-empty attributes, spec_version "1.0") and structured mode
// (attributes["contenttype"] starting with `application/cloudevents`: binary_data is a JSON
// format event). Keys neither `contenttype` nor `ce-*` are ignored, as Go ignores them;
// text_data/proto_data are ignored. A heartbeat (type kHeartbeatType) is recognised by its type
// before anything else and returned as an Event with id, spec_version and type only
// (Event::IsHeartbeat() is true); a non-heartbeat with an empty attributes map is
// kInvalidArgument. Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"
#include "proto/cloudevent.pb.h"

namespace mmi::cloudevents {

absl::StatusOr<io::cloudevents::v1::CloudEvent> EncodeGrpc(const Event& event,
                                                           const CodecLimits& limits = {});

absl::StatusOr<Event> DecodeGrpc(const io::cloudevents::v1::CloudEvent& message,
                                 const CodecLimits& limits = {});

// Parses a serialized CloudEvent message, then DecodeGrpc. kInvalidArgument when the bytes are
// not a valid CloudEvent message or exceed the limit.
absl::StatusOr<Event> DecodeGrpcBytes(std::string_view serialized, const CodecLimits& limits = {});

// True for a heartbeat (checked on `type` only, as Go does).
bool IsHeartbeat(const io::cloudevents::v1::CloudEvent& message);

// The heartbeat a server sends on every Subscribe stream (§4.6).
io::cloudevents::v1::CloudEvent MakeHeartbeat(std::string id);

}  // namespace mmi::cloudevents
