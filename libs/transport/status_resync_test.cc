#include "libs/transport/status_resync.h"

#include <gtest/gtest.h>

namespace mmi::transport {
namespace {

const cloudevents::Timestamp kTime(std::chrono::seconds(1'780'308'000));

TEST(StatusResyncTest, BuildsTheSpecsStatusResyncRequest) {
  cloudevents::ResourceStatusHashList hashes;
  hashes.status_hashes.push_back({"278f3a61-efe5-56de-abba-6aedbfcce272", std::string(64, 'a')});
  auto event = MakeStatusResyncRequest("mmi", "cluster1", hashes, "id-1", kTime);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, cloudevents::kStatusResyncRequestType);
  EXPECT_EQ(event->source, "mmi");
  EXPECT_EQ(*event->ClusterName(), "cluster1");
  EXPECT_EQ(*event->OriginalSource(), "");
  EXPECT_FALSE(event->HasExtension(cloudevents::kExtResourceId));
  ASSERT_TRUE(event->data.has_value());
  auto decoded = cloudevents::DecodeResourceStatusHashList(*event->data);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, hashes);
}

}  // namespace
}  // namespace mmi::transport
