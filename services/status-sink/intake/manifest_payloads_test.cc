#include "services/status-sink/intake/manifest_payloads.h"

#include <gtest/gtest.h>

#include <string>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/store/testing/fake_status_store.h"

namespace mmi::status_sink {
namespace {

std::string Id(int n) { return "00000000-0000-5000-8000-00000000000" + std::to_string(n); }

store::HubAppRef Resource(int n, const std::string& payload_hash, bool manifest = true) {
  store::HubAppRef ref;
  ref.resource_id = Id(n);
  ref.cluster = "cluster" + std::to_string(n);
  ref.hub_namespace = "argocd";
  ref.hub_name = "app-" + std::to_string(n);
  if (manifest) {
    store::ManifestRenderRef render;
    render.revision = "9f2c4e1";
    render.payload_hash = payload_hash;
    render.version = 1;
    ref.manifest = render;
  }
  return ref;
}

std::string Payload(const std::string& config_map) {
  cloudevents::ManifestBundle bundle;
  bundle.manifests = {
      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", config_map}}}}};
  return cloudevents::EncodeManifestBundle(bundle).value_or("");
}

class ManifestPayloadsTest : public ::testing::Test {
 protected:
  store::HubAppRef Add(int n, const std::string& hash, const std::string& config_map,
                       bool manifest = true) {
    store::HubAppRef ref = Resource(n, hash, manifest);
    store_.AddResourceForTest(ref, Payload(config_map));
    return ref;
  }

  store::testing::FakeStatusStore store_;
};

TEST_F(ManifestPayloadsTest, OneRenderSentToManyClustersIsHeldOnce) {
  ManifestPayloads payloads(/*max_payloads=*/8);
  const std::vector<store::HubAppRef> refs = {Add(1, "render-a", "a"), Add(2, "render-a", "a"),
                                              Add(3, "render-b", "b"),
                                              Add(4, "", "app", /*manifest=*/false)};
  ASSERT_TRUE(payloads.Load(store_, refs).ok());
  EXPECT_EQ(payloads.size(), 2U) << "one per payload hash; Application delivery loads none";
  auto a = payloads.Find("render-a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->size(), 1U);
  EXPECT_EQ((*a)[0]["metadata"]["name"], "a");
  EXPECT_EQ(payloads.Find("render-a").get(), a.get()) << "shared, not copied";
  EXPECT_EQ(payloads.Find("render-c"), nullptr);
  ASSERT_TRUE(payloads.Load(store_, refs).ok());  // nothing more to read
  EXPECT_EQ(payloads.size(), 2U);
}

TEST_F(ManifestPayloadsTest, BeyondTheBoundTheLeastRecentlyUsedRenderGoes) {
  ManifestPayloads payloads(/*max_payloads=*/2);
  ASSERT_TRUE(payloads.Load(store_, {Add(1, "render-a", "a"), Add(2, "render-b", "b")}).ok());
  ASSERT_NE(payloads.Find("render-a"), nullptr);  // b is now the least recently used
  ASSERT_TRUE(payloads.Load(store_, {Add(3, "render-c", "c")}).ok());
  EXPECT_EQ(payloads.size(), 2U);
  EXPECT_NE(payloads.Find("render-a"), nullptr);
  EXPECT_EQ(payloads.Find("render-b"), nullptr);
  EXPECT_NE(payloads.Find("render-c"), nullptr);
}

// A revision change under way: the refs were read when both resources held render-a, but the
// first one's bundle is render-b by the time its payload is read. Another resource of render-a
// is asked, so the reports against render-a can still be mapped (scenario (f) lost some before).
TEST_F(ManifestPayloadsTest, AResourceWhoseBundleChangedMeanwhileIsReplacedByAnotherOfItsHash) {
  ManifestPayloads payloads(/*max_payloads=*/8);
  Add(1, "render-b", "b");  // what the store holds now
  const std::vector<store::HubAppRef> refs = {Resource(1, "render-a"), Add(2, "render-a", "a"),
                                              Add(3, "render-a", "a")};
  ASSERT_TRUE(payloads.Load(store_, refs).ok());
  auto a = payloads.Find("render-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*a)[0]["metadata"]["name"], "a");
  EXPECT_NE(payloads.Find("render-b"), nullptr) << "what the first one answered is kept too";
  // No resource holds it any more: nothing loops, it stays missing.
  ASSERT_TRUE(payloads.Load(store_, {Resource(1, "render-gone"), Resource(2, "render-gone")}).ok());
  EXPECT_EQ(payloads.Find("render-gone"), nullptr);
}

TEST_F(ManifestPayloadsTest, AStoreErrorIsReturnedAndAPayloadThatIsNoBundleIsNotHeld) {
  ManifestPayloads payloads(/*max_payloads=*/8);
  store::HubAppRef broken = Resource(1, "render-x");
  store_.AddResourceForTest(broken, "not json");
  ASSERT_TRUE(payloads.Load(store_, {broken}).ok());
  EXPECT_EQ(payloads.Find("render-x"), nullptr);
  store_.FailWithForTest(absl::UnavailableError("database down"));
  EXPECT_EQ(payloads.Load(store_, {Add(2, "render-y", "y")}).code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace mmi::status_sink
