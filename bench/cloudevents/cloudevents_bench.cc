// Encode/decode throughput of the CloudEvents codecs for the two event shapes the services move:
// a ~2 KB spec event (create_request for one Argo CD Application) and a ~20 KB status event (what
// Maestro streams back: echoed bundle + conditions + a large JsonRaw status feedback).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "bench/common/app_status.h"
#include "benchmark/benchmark.h"
#include "libs/cloudevents/json_format.h"
#include "libs/cloudevents/kafka_codec.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "nlohmann/json.hpp"
#ifdef MMI_BENCH_GRPC
#include "libs/cloudevents/grpc_codec.h"
#endif

namespace mmi::cloudevents {
namespace {

std::string ReadSample(const std::string& name) {
  std::ifstream in(std::string(MMI_SPEC_SAMPLES_DIR) + "/" + name, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

Event Decode(const std::string& json) {
  auto event = DecodeStructuredJson(json);
  if (!event.ok()) {
    throw std::runtime_error(std::string(event.status().message()));
  }
  return *event;
}

// The grpcclient sample with more manifest configs: ~2 KB as compact JSON.
const Event& SpecEvent() {
  static const Event event = [] {
    nlohmann::json sample = nlohmann::json::parse(ReadSample("cloudevents.grpcclient.json"));
    const auto config = sample["data"]["manifestConfigs"][0];
    for (int i = 2; sample.dump().size() < 2 * 1024; ++i) {
      auto copy = config;
      copy["resourceIdentifier"]["name"] = "maestro-e2e-upgrade-test-" + std::to_string(i);
      sample["data"]["manifestConfigs"].push_back(copy);
    }
    return Decode(sample.dump());
  }();
  return event;
}

// The Maestro status sample with a JsonRaw feedback listing many resources: ~20 KB.
const Event& StatusEvent() {
  static const Event event = [] {
    nlohmann::json sample = nlohmann::json::parse(ReadSample("cloudevents.status.maestro.json"));
    nlohmann::json app_status = {
        {"health", {{"status", "Healthy"}}},
        {"sync", {{"status", "Synced"}, {"revision", std::string(40, 'a')}}},
        {"resources", nlohmann::json::array()}};
    for (int i = 0; sample.dump().size() < 20 * 1024; ++i) {
      app_status["resources"].push_back(
          mmi::bench::SyncedDeploymentStatus(static_cast<std::size_t>(i)));
      sample["data"]["resourceStatus"][0]["statusFeedback"]["values"][0]["fieldValue"]["jsonRaw"] =
          app_status.dump();
    }
    return Decode(sample.dump());
  }();
  return event;
}

const Event& EventFor(int which) { return which == 0 ? SpecEvent() : StatusEvent(); }
const char* Label(int which) { return which == 0 ? "spec ~2KB" : "status ~20KB"; }

// Wire size per event (bytes processed / iterations), shown next to the label.
void SetLabelAndSize(benchmark::State& state) {
  state.SetLabel(Label(static_cast<int>(state.range(0))));
  if (state.iterations() > 0) {
    state.counters["wire_bytes"] =
        static_cast<double>(state.bytes_processed()) / static_cast<double>(state.iterations());
  }
}

template <typename T>
T Check(absl::StatusOr<T> value) {
  if (!value.ok()) {
    std::abort();
  }
  return *std::move(value);
}

void JsonEncode(benchmark::State& state) {
  const Event& event = EventFor(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto out = Check(EncodeStructuredJson(event));
    bytes += out.size();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  SetLabelAndSize(state);
}

void JsonDecode(benchmark::State& state) {
  const std::string wire = Check(EncodeStructuredJson(EventFor(static_cast<int>(state.range(0)))));
  for (auto _ : state) {
    benchmark::DoNotOptimize(Check(DecodeStructuredJson(wire)));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * wire.size()));
  SetLabelAndSize(state);
}

std::size_t MqttSize(const MqttMessage& message) {
  std::size_t size = message.payload.size();
  for (const auto& [name, value] : message.user_properties) {
    size += name.size() + value.size();
  }
  return size;
}

void MqttEncode(benchmark::State& state) {
  const Event& event = EventFor(static_cast<int>(state.range(0)));
  const std::size_t size = MqttSize(Check(EncodeMqtt(event)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(Check(EncodeMqtt(event)));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
  SetLabelAndSize(state);
}

void MqttDecode(benchmark::State& state) {
  const MqttMessage wire = Check(EncodeMqtt(EventFor(static_cast<int>(state.range(0)))));
  for (auto _ : state) {
    benchmark::DoNotOptimize(Check(DecodeMqtt(wire)));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * MqttSize(wire)));
  SetLabelAndSize(state);
}

std::size_t KafkaSize(const KafkaRecord& record) {
  std::size_t size = record.value.size();
  for (const auto& [name, value] : record.headers) {
    size += name.size() + value.size();
  }
  return size;
}

void KafkaEncode(benchmark::State& state) {
  const Event& event = EventFor(static_cast<int>(state.range(0)));
  const std::size_t size = KafkaSize(Check(EncodeKafka(event)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(Check(EncodeKafka(event)));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
  SetLabelAndSize(state);
}

void KafkaDecode(benchmark::State& state) {
  const KafkaRecord wire = Check(EncodeKafka(EventFor(static_cast<int>(state.range(0)))));
  for (auto _ : state) {
    benchmark::DoNotOptimize(Check(DecodeKafka(wire)));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * KafkaSize(wire)));
  SetLabelAndSize(state);
}

#ifdef MMI_BENCH_GRPC
// Includes protobuf serialization / parsing: what a gRPC stream really costs per event.
void GrpcEncode(benchmark::State& state) {
  const Event& event = EventFor(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    Check(EncodeGrpc(event)).SerializeToString(&out);
    bytes += out.size();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  SetLabelAndSize(state);
}

void GrpcDecode(benchmark::State& state) {
  std::string wire;
  Check(EncodeGrpc(EventFor(static_cast<int>(state.range(0))))).SerializeToString(&wire);
  for (auto _ : state) {
    benchmark::DoNotOptimize(Check(DecodeGrpcBytes(wire)));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * wire.size()));
  SetLabelAndSize(state);
}
BENCHMARK(GrpcEncode)->Arg(0)->Arg(1);
BENCHMARK(GrpcDecode)->Arg(0)->Arg(1);
#endif

// The payload step that follows a decode: typed ManifestBundle / ManifestBundleStatus (with the
// JsonRaw feedback parsed a second time).
void PayloadDecode(benchmark::State& state) {
  const Event& event = EventFor(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    if (state.range(0) == 0) {
      benchmark::DoNotOptimize(Check(ManifestBundleOf(event)));
    } else {
      benchmark::DoNotOptimize(Check(ManifestBundleStatusOf(event)));
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * event.data->size()));
  SetLabelAndSize(state);
}

BENCHMARK(JsonEncode)->Arg(0)->Arg(1);
BENCHMARK(JsonDecode)->Arg(0)->Arg(1);
BENCHMARK(MqttEncode)->Arg(0)->Arg(1);
BENCHMARK(MqttDecode)->Arg(0)->Arg(1);
BENCHMARK(KafkaEncode)->Arg(0)->Arg(1);
BENCHMARK(KafkaDecode)->Arg(0)->Arg(1);
BENCHMARK(PayloadDecode)->Arg(0)->Arg(1);

}  // namespace
}  // namespace mmi::cloudevents
