// held_bytes: what the status sink holds in memory per waiting report, in each representation
// it could keep (bench/sink/README.md, "Memory held per report"):
//   * an Application `.status` waiting in the coalescer: the nlohmann tree, or its JSON text
//     (StatusUpdate::status_text, KeepStatusAsText);
//   * an agent's ManifestBundle status held for render changes (ManifestStatuses::Hold): the
//     decoded cloudevents::ManifestBundleStatus, or the event's `data` text.
// Counts the heap bytes of N live items (malloc_usable_size of every operator new this program
// makes, glibc's allocator) and prints bytes per item. Prints figures only.
//
//   held_bytes [--items N] [--bytes B]
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/sink/status_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/decoding/status_update.h"

namespace {

std::atomic<long long> live_bytes{0};

void* Allocate(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  live_bytes += static_cast<long long>(malloc_usable_size(p));
  return p;
}

void Release(void* p) noexcept {
  if (p != nullptr) {
    live_bytes -= static_cast<long long>(malloc_usable_size(p));
    std::free(p);
  }
}

}  // namespace

void* operator new(std::size_t size) { return Allocate(size); }
void* operator new[](std::size_t size) { return Allocate(size); }
void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, std::size_t /*size*/) noexcept { Release(p); }
void operator delete[](void* p, std::size_t /*size*/) noexcept { Release(p); }

namespace mmi::bench {
namespace {

// Heap bytes per item of `items` kept alive by `make` (called once per item; its result is kept
// until all were made).
template <typename T>
double BytesPerItem(std::size_t items, const std::function<T(std::size_t)>& make) {
  std::vector<T> kept;
  kept.reserve(items);
  kept.push_back(make(0));  // warms up what the first call sets up (parsers), not counted
  kept.clear();
  const long long before = live_bytes.load();  // the vector's buffer is reserved already
  for (std::size_t n = 0; n < items; ++n) {
    kept.push_back(make(n));
  }
  return static_cast<double>(live_bytes.load() - before) / static_cast<double>(items) +
         static_cast<double>(sizeof(T));
}

int Run(std::size_t items, std::size_t bytes) {
  const EventShape shape{.target_bytes = bytes, .resources = items};
  const std::size_t entries = EntriesForSize(shape);
  const std::size_t manifests = ManifestsForSize(shape);
  std::vector<std::string> statuses;  // the Application `.status` texts
  std::vector<std::string> bundles;   // a manifest bundle's agent status (`data`)
  for (std::size_t n = 0; n < items; ++n) {
    auto payload = cloudevents::ManifestBundleStatusOf(BenchStatusEvent(shape, entries, n));
    statuses.push_back(payload->resource_status[0].status_feedback[0].field_value.json_raw);
    bundles.push_back(*BenchManifestStatusEvent(shape, manifests, n).data);
  }
  using Json = nlohmann::json;
  using Bundle = std::shared_ptr<const cloudevents::ManifestBundleStatus>;
  const double tree = BytesPerItem<Json>(items, [&](std::size_t n) {
    status_sink::StatusUpdate u;
    u.status_text = statuses[n];
    return status_sink::StatusTree(u);
  });
  const double text = BytesPerItem<std::string>(items, [&](std::size_t n) {
    status_sink::StatusUpdate u;
    u.status_text = statuses[n];
    status_sink::StatusTree(u);
    status_sink::KeepStatusAsText(u, false);  // what the sink keeps
    return std::move(u.status_text);
  });
  const double decoded = BytesPerItem<Bundle>(items, [&](std::size_t n) {
    return std::make_shared<const cloudevents::ManifestBundleStatus>(
        *cloudevents::ManifestBundleStatusFromJson(Json::parse(bundles[n])));
  });
  const double raw = BytesPerItem<std::string>(items, [&](std::size_t n) {
    std::string copy = bundles[n];  // what HeldOf keeps of the agent's `data`: a copy
    return copy;
  });
  std::printf("### heap bytes per held item (%zu items; texts of about %zu bytes)\n\n", items,
              bytes);
  std::printf("| item | as | bytes (text) | bytes held | ratio |\n|---|---|---:|---:|---:|\n");
  std::printf(
      "| Application `.status` waiting in the coalescer | nlohmann tree | %zu | %.0f | %.1f |\n",
      statuses[0].size(), tree, tree / text);
  std::printf("| | JSON text | %zu | %.0f | 1.0 |\n", statuses[0].size(), text);
  std::printf(
      "| agent's bundle status held for render changes | ManifestBundleStatus | %zu | %.0f | %.1f "
      "|\n",
      bundles[0].size(), decoded, decoded / raw);
  std::printf("| | JSON text | %zu | %.0f | 1.0 |\n", bundles[0].size(), raw);
  return 0;
}

}  // namespace
}  // namespace mmi::bench

int main(int argc, char** argv) {
  std::size_t items = 10'000;
  std::size_t bytes = 1'600;
  CLI::App cli("held_bytes: heap bytes the status sink holds per waiting report");
  cli.add_option("--items", items, "items measured")->check(CLI::PositiveNumber);
  cli.add_option("--bytes", bytes, "size of the status texts")->check(CLI::PositiveNumber);
  CLI11_PARSE(cli, argc, argv);
  return mmi::bench::Run(items, bytes);
}
