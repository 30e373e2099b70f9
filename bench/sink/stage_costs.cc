#include "bench/sink/stage_costs.h"

#include <simdjson.h>
#include <time.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "libs/cloudevents/kafka_codec.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/common/clock.h"
#include "libs/store/status_store.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/coalescing/coalescer.h"
#include "services/status-sink/decoding/decode.h"
#include "services/status-sink/decoding/internal/json_tree.h"
#include "services/status-sink/decoding/one_pass_decoder.h"
#include "services/status-sink/decoding/status_report.h"
#include "services/status-sink/intake/manifest_statuses.h"

namespace mmi::bench {
namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The fastest of `rounds` runs of `body` (which handles `events` events), per event.
double MicrosPerEvent(std::size_t events, int rounds, const std::function<void()>& body) {
  double best = std::numeric_limits<double>::max();
  for (int round = 0; round < rounds; ++round) {
    const double start = ThreadCpuSeconds();
    body();
    best = std::min(best, ThreadCpuSeconds() - start);
  }
  return best * 1e6 / static_cast<double>(events);
}

// Keeps the optimiser from dropping a result.
template <typename T>
void Keep(T&& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

struct Inputs {
  std::vector<cloudevents::MqttMessage> mqtt;
  std::vector<cloudevents::KafkaRecord> kafka;
  std::vector<cloudevents::Event> events;
  std::vector<std::string> feedback;  // the JsonRaw text of each event
  // The same number of events of a resource in manifest delivery, of about the same size.
  std::vector<cloudevents::Event> manifest_events;
};

Inputs MakeInputs(const EventShape& shape, std::size_t count) {
  Inputs in;
  const std::size_t entries = EntriesForSize(shape);
  for (std::size_t n = 0; n < count; ++n) {
    cloudevents::Event event = BenchStatusEvent(shape, entries, n);
    in.mqtt.push_back(*cloudevents::EncodeMqtt(event));
    in.kafka.push_back(*cloudevents::EncodeKafka(event));
    auto payload = cloudevents::ManifestBundleStatusOf(event);
    in.feedback.push_back(payload->resource_status[0].status_feedback[0].field_value.json_raw);
    in.events.push_back(std::move(event));
  }
  const std::size_t manifests = ManifestsForSize(shape);
  for (std::size_t n = 0; n < count; ++n) {
    in.manifest_events.push_back(BenchManifestStatusEvent(shape, manifests, n));
  }
  return in;
}

std::vector<status_sink::StatusUpdate> Updates(const Inputs& in) {
  std::vector<status_sink::StatusUpdate> updates;
  for (const auto& event : in.events) {
    auto decoded = status_sink::DecodeStatusReport(event);
    updates.push_back(std::get<status_sink::StatusReport>(std::move(decoded)).update);
  }
  return updates;
}

std::vector<StageCost> DecodeStages(const Inputs& in, std::size_t n, int rounds) {
  std::vector<StageCost> out;
  out.push_back({"transport decode: MQTT message -> CloudEvent", MicrosPerEvent(n, rounds, [&] {
                   for (const auto& m : in.mqtt) {
                     Keep(cloudevents::DecodeMqtt(m));
                   }
                 })});
  out.push_back({"transport decode: Kafka record -> CloudEvent", MicrosPerEvent(n, rounds, [&] {
                   for (const auto& r : in.kafka) {
                     Keep(cloudevents::DecodeKafka(r));
                   }
                 })});
  out.push_back({"status decode, full typed path (before)", MicrosPerEvent(n, rounds, [&] {
                   for (const auto& e : in.events) {
                     Keep(status_sink::DecodeStatusReportFull(e));
                   }
                 })});
  out.push_back({"  of which feedback JSON parse (nlohmann)", MicrosPerEvent(n, rounds, [&] {
                   for (const auto& text : in.feedback) {
                     Keep(nlohmann::json::parse(text));
                   }
                 })});
  out.push_back({"  of which metadata extension parse (nlohmann)", MicrosPerEvent(n, rounds, [&] {
                   for (const auto& e : in.events) {
                     Keep(cloudevents::ObjectMetaOf(e));
                   }
                 })});
  out.push_back({"status decode, one-pass path (after: status as text + material hash)",
                 MicrosPerEvent(n, rounds, [&] {
                   for (const auto& e : in.events) {
                     Keep(status_sink::DecodeStatusReport(e));
                   }
                 })});
  status_sink::internal::JsonTreeParser tree_parser;
  std::string text;
  std::string hash;
  out.push_back({"  of which the status's material hash (simdjson index, dump, SHA-256)",
                 MicrosPerEvent(n, rounds, [&] {
                   for (const auto& feedback : in.feedback) {
                     simdjson::dom::element root;
                     if (tree_parser.Index(feedback, root) &&
                         status_sink::MaterialHashOfIndex(root, 100, false, text, hash)) {
                       Keep(hash);
                     }
                   }
                 })});
  out.push_back({"status tree for a hub write (StatusTree; written reports only)",
                 MicrosPerEvent(n, rounds, [&] {
                   for (const auto& feedback : in.feedback) {
                     Keep(tree_parser.Parse(feedback, 100));
                   }
                 })});
  out.push_back(
      {"manifest delivery: one-pass decode to no_feedback, then the bundle decode (before)",
       MicrosPerEvent(n, rounds, [&] {
         for (const auto& e : in.manifest_events) {
           Keep(status_sink::DecodeStatusReport(e));
           Keep(status_sink::DecodeBundleReport(e));
         }
       })});
  out.push_back({"manifest delivery: the bundle decode alone (after, resource known in the mode)",
                 MicrosPerEvent(n, rounds, [&] {
                   for (const auto& e : in.manifest_events) {
                     Keep(status_sink::DecodeStatusOrBundleReport(e, false, true));
                   }
                 })});
  std::vector<status_sink::StatusReport> bundles;
  for (const auto& e : in.manifest_events) {
    bundles.push_back(std::get<status_sink::StatusReport>(
        status_sink::DecodeStatusOrBundleReport(e, false, true)));
  }
  out.push_back({"manifest delivery: the report held for render changes, as JSON (HeldOf)",
                 MicrosPerEvent(n, rounds, [&] {
                   for (const auto& b : bundles) {
                     Keep(status_sink::ManifestStatuses::HeldOf(b));
                   }
                 })});
  return out;
}

std::vector<StageCost> LoopStages(const EventShape& shape, const Inputs& in, std::size_t n,
                                  int rounds) {
  std::unordered_map<std::string, store::HubAppRef> refs;
  for (std::size_t r = 0; r < shape.resources; ++r) {
    refs[BenchResourceId(r)] = store::HubAppRef{.resource_id = BenchResourceId(r),
                                                .cluster = shape.cluster,
                                                .hub_namespace = kBenchHubNamespace,
                                                .hub_name = BenchAppName(r),
                                                .appset_namespace = std::nullopt,
                                                .appset_name = std::nullopt};
  }
  const auto updates = Updates(in);
  std::vector<StageCost> out;
  out.push_back({"id lookup (cached hub Application)", MicrosPerEvent(n, rounds, [&] {
                   for (const auto& u : updates) {
                     Keep(refs.find(u.resource_id));
                   }
                 })});
  // Offer() consumes its update: copies are made outside the timed region.
  double best = std::numeric_limits<double>::max();
  for (int round = 0; round < rounds; ++round) {
    auto copies = updates;
    status_sink::Coalescer coalescer({}, RealClock::Instance());
    const double start = ThreadCpuSeconds();
    for (auto& u : copies) {
      Keep(coalescer.Offer(std::move(u), [] {}));
    }
    best = std::min(best, ThreadCpuSeconds() - start);
  }
  out.push_back({"coalesce (Offer; the material hash is the decoder's)",
                 best * 1e6 / static_cast<double>(n)});
  return out;
}

}  // namespace

StageCosts MeasureStages(const EventShape& shape, std::size_t events, int rounds) {
  const Inputs in = MakeInputs(shape, events);
  StageCosts costs;
  costs.event_bytes = cloudevents::MqttMessageSize(in.mqtt.front());
  costs.payload_bytes = in.events.front().data->size();
  costs.stages = DecodeStages(in, events, rounds);
  auto loop = LoopStages(shape, in, events, rounds);
  costs.stages.insert(costs.stages.end(), loop.begin(), loop.end());
  return costs;
}

}  // namespace mmi::bench
