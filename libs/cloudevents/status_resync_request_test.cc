#include <gtest/gtest.h>

#include "libs/cloudevents/maestro_events.h"

namespace mmi::cloudevents {
namespace {

const Timestamp kTime(std::chrono::seconds(1'780'308'000));

TEST(StatusResyncTest, BuildsTheSpecsStatusResyncRequest) {
  ResourceStatusHashList hashes;
  hashes.status_hashes.push_back({"278f3a61-efe5-56de-abba-6aedbfcce272", std::string(64, 'a')});
  auto event = MakeStatusResyncRequest("mmi", "cluster1", hashes, "id-1", kTime);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, kStatusResyncRequestType);
  EXPECT_EQ(event->source, "mmi");
  EXPECT_EQ(*event->ClusterName(), "cluster1");
  EXPECT_EQ(*event->OriginalSource(), "");
  EXPECT_FALSE(event->HasExtension(kExtResourceId));
  ASSERT_TRUE(event->data.has_value());
  auto decoded = DecodeResourceStatusHashList(*event->data);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, hashes);
}

}  // namespace
}  // namespace mmi::cloudevents
