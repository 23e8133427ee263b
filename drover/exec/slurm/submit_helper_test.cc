// The submission helper's wire format (submit_helper.h). The helper process itself, with the
// real drover-slurm-submit, is tested in exec/libslurm (submit_main_test.cc).

#include "drover/exec/slurm/submit_helper.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace drover::exec::slurm {
namespace {

TEST(SubmitRequest, RoundTripsArgumentsAndScript) {
  Sbatch sbatch;
  sbatch.args = {"--job-name=drover-7-1", "--chdir=/a dir/with spaces", "--requeue", ""};
  sbatch.script = "#!/bin/bash\necho 'a\nb'\n";
  Result<Sbatch> decoded = DecodeSubmitRequest(EncodeSubmitRequest(sbatch));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->args, sbatch.args);
  EXPECT_EQ(decoded->script, sbatch.script);
}

TEST(SubmitRequest, MalformedPayloadsAreRefusedWithTheReason) {
  const struct {
    std::string payload;
    std::string says;
  } cases[] = {
      {std::string(""), "number of arguments"},
      {std::string("x\0s\0", 4), "number of arguments"},
      {std::string("2\0a\0s\0", 6), "2 arguments and a script announced, 2 fields sent"},
      {std::string("0\0script", 8), "no terminating NUL"},
      {std::string("257\0", 4), "more than 256"},
  };
  for (const auto& c : cases) {
    Result<Sbatch> decoded = DecodeSubmitRequest(c.payload);
    ASSERT_FALSE(decoded) << c.says;
    EXPECT_EQ(decoded.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(decoded.error().message.find(c.says), std::string::npos) << decoded.error().message;
  }
}

class FrameTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair_), 0); }
  void TearDown() override {
    for (int fd : pair_) {
      if (fd >= 0) close(fd);
    }
  }
  void CloseWriter() {
    close(pair_[0]);
    pair_[0] = -1;
  }
  int pair_[2] = {-1, -1};
};

TEST_F(FrameTest, FramesArriveWholeAndTheEndOfTheStreamIsZero) {
  ASSERT_TRUE(WriteAll(pair_[0], Frame("ok 42") + Frame("")));
  std::string payload;
  EXPECT_EQ(ReadFrame(pair_[1], payload, 1000), 1);
  EXPECT_EQ(payload, "ok 42");
  EXPECT_EQ(ReadFrame(pair_[1], payload, 1000), 1);
  EXPECT_EQ(payload, "");
  CloseWriter();
  EXPECT_EQ(ReadFrame(pair_[1], payload, 1000), 0);
}

TEST_F(FrameTest, AnOversizedFrameIsRefusedBeforeItsBytesAreRead) {
  std::string big(4, '\0');
  const auto size = static_cast<std::uint32_t>(kMaxSubmitFrameBytes + 1);
  for (int i = 0; i < 4; ++i) big[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  ASSERT_TRUE(WriteAll(pair_[0], big));
  std::string payload;
  EXPECT_EQ(ReadFrame(pair_[1], payload, 1000), -1);
  EXPECT_EQ(errno, EMSGSIZE);
  EXPECT_TRUE(payload.empty());
}

TEST_F(FrameTest, AStreamThatEndsInsideAFrameIsAProtocolError) {
  ASSERT_TRUE(WriteAll(pair_[0], Frame("ok 42").substr(0, 6)));
  CloseWriter();
  std::string payload;
  EXPECT_EQ(ReadFrame(pair_[1], payload, 1000), -1);
  EXPECT_EQ(errno, EPROTO);
}

TEST_F(FrameTest, ASilentPeerTimesOut) {
  std::string payload;
  EXPECT_EQ(ReadFrame(pair_[1], payload, 20), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
}

}  // namespace
}  // namespace drover::exec::slurm
