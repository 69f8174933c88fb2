// The EP SDK's log (tessera/ep/logging.h), which plugins write through: one line per message at or above the
// process-wide threshold, nothing below it, parts built only when written.
#include "core/logging.h"

#include <gtest/gtest.h>

namespace tessera::test {
namespace {

// Restores the threshold the test found.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = LogThreshold(); }
  void TearDown() override { SetLogThreshold(saved_); }
  LogLevel saved_ = LogLevel::kWarning;
};

struct CountsStreaming {
  int* count;
};
std::ostream& operator<<(std::ostream& os, const CountsStreaming& c) {
  ++*c.count;
  return os << "part";
}

TEST_F(LoggingTest, WritesAtOrAboveTheThresholdOnly) {
  SetLogThreshold(LogLevel::kInfo);
  EXPECT_TRUE(LogEnabled(LogLevel::kWarning));
  EXPECT_FALSE(LogEnabled(LogLevel::kVerbose));
  int built = 0;
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "plugin: device ", 3, " ", CountsStreaming{&built});
  Log(LogLevel::kVerbose, "hidden ", CountsStreaming{&built});
  const std::string written = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(written.find("[tessera I "), std::string::npos) << written;
  EXPECT_NE(written.find("] plugin: device 3 part\n"), std::string::npos) << written;
  EXPECT_EQ(written.find("hidden"), std::string::npos) << written;
  EXPECT_EQ(built, 1) << "the message below the threshold is not built";
}

}  // namespace
}  // namespace tessera::test
