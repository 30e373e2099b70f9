#include "services/status-sink/writes/writer.h"

#include <gtest/gtest.h>

namespace mmi::status_sink {
namespace {

TEST(WriterTest, ClassifiesHubAnswers) {
  EXPECT_EQ(ClassifyWriteError(absl::OkStatus()), WriteResult::kOk);
  EXPECT_EQ(ClassifyWriteError(absl::NotFoundError("gone")), WriteResult::kNotFound);
  EXPECT_EQ(ClassifyWriteError(absl::InvalidArgumentError("422")), WriteResult::kInvalid);
  EXPECT_EQ(ClassifyWriteError(absl::ResourceExhaustedError("429")), WriteResult::kRetry);
  EXPECT_EQ(ClassifyWriteError(absl::UnavailableError("503")), WriteResult::kRetry);
  EXPECT_EQ(ClassifyWriteError(absl::PermissionDeniedError("403")), WriteResult::kRetry);
}

}  // namespace
}  // namespace mmi::status_sink
