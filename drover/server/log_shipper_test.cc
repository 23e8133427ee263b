// LogShipper, the agent end of "Logs from anywhere": against a fake server that keeps what it is
// sent as the real one does (only the bytes from the end of what it keeps; it answers its size),
// with the workers' logs in a temporary runs directory.

#include "drover/server/log_shipper.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "drover/testing/temp_dir.h"

namespace drover::server {
namespace {

class LogShipperTest : public ::testing::Test {
 protected:
  // Appends `text` to `key`'s `stream` in the runs directory.
  void Write(const model::WorkerKey& key, const std::string& stream, const std::string& text) {
    const std::string dir =
        fmt::format("{}/{}/{}/{}", runs_.path(), key.job.value(), key.attempt, key.rank);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/" + stream + ".log", std::ios::app) << text;
  }

  // The fake server: keeps each stream up to `limit_` bytes, answers `fail_` once when set.
  Result<api::RemoteLogAck> Post(const model::WorkerKey& key, const std::string& stream,
                                 std::int64_t offset, std::string_view data) {
    ++posts_;
    if (fail_) return tl::unexpected(*std::exchange(fail_, std::nullopt));
    std::string& kept = kept_[{key, stream}];
    const auto size = static_cast<std::int64_t>(kept.size());
    const std::int64_t end = offset + static_cast<std::int64_t>(data.size());
    if (offset <= size && end > size) {
      kept += data.substr(static_cast<std::size_t>(size - offset));
      if (static_cast<std::int64_t>(kept.size()) > limit_) kept.resize(limit_);
    }
    const auto now = static_cast<std::int64_t>(kept.size());
    return api::RemoteLogAck{now, now >= limit_};
  }

  LogShipper Shipper(std::int64_t turn_bytes = LogShipper::kDefaultTurnBytes) {
    return LogShipper(
        runs_.path(),
        [this](const model::WorkerKey& key, const std::string& stream, std::int64_t offset,
               std::string_view data) { return Post(key, stream, offset, data); },
        turn_bytes);
  }

  testing::TempDir runs_{"drover-log-shipper"};
  std::map<std::pair<model::WorkerKey, std::string>, std::string> kept_;
  std::optional<Error> fail_;
  std::int64_t limit_ = std::int64_t{1} << 40;
  int posts_ = 0;
  const model::WorkerKey key_{JobId(7), 1, 0};
};

TEST_F(LogShipperTest, ShipsWhatIsNewInBothStreams) {
  LogShipper shipper = Shipper();
  shipper.Track(key_);
  shipper.Ship();  // nothing written yet
  EXPECT_TRUE(shipper.Drained(key_));
  EXPECT_EQ(posts_, 0);
  Write(key_, "stdout", "one\n");
  Write(key_, "stderr", "oops\n");
  shipper.Ship();
  Write(key_, "stdout", "two\n");
  shipper.Ship();
  EXPECT_TRUE(shipper.Drained(key_));
  EXPECT_EQ((kept_[{key_, "stdout"}]), "one\ntwo\n");
  EXPECT_EQ((kept_[{key_, "stderr"}]), "oops\n");
  EXPECT_EQ(posts_, 3);
}

TEST_F(LogShipperTest, AServerNotReachedHoldsTheStreamUntilTheNextTurn) {
  LogShipper shipper = Shipper();
  shipper.Track(key_);
  Write(key_, "stdout", "kept\n");
  fail_ = Error{ErrorCode::kUnavailable, "connection refused", {}};
  shipper.Ship();
  EXPECT_FALSE(shipper.Drained(key_));  // its exit waits
  shipper.Ship();
  EXPECT_TRUE(shipper.Drained(key_));
  EXPECT_EQ((kept_[{key_, "stdout"}]), "kept\n");
}

TEST_F(LogShipperTest, AStreamTheServerRefusesCountsAsShipped) {
  LogShipper shipper = Shipper();
  shipper.Track(key_);
  Write(key_, "stdout", "refused\n");
  fail_ = Error{ErrorCode::kNotFound, "node runs no such worker", {}};
  shipper.Ship();
  EXPECT_TRUE(shipper.Drained(key_));
  Write(key_, "stdout", "more\n");
  shipper.Ship();
  EXPECT_EQ(posts_, 1);  // not sent again
}

TEST_F(LogShipperTest, AFullStreamIsNoLongerShipped) {
  limit_ = 4;
  LogShipper shipper = Shipper();
  shipper.Track(key_);
  Write(key_, "stdout", "0123456789");
  shipper.Ship();
  Write(key_, "stdout", "more");
  shipper.Ship();
  EXPECT_TRUE(shipper.Drained(key_));
  EXPECT_EQ((kept_[{key_, "stdout"}]), "0123");
  EXPECT_EQ(posts_, 1);
}

TEST_F(LogShipperTest, ARestartedAgentContinuesWhereTheServerIs) {
  Write(key_, "stdout", "before the restart\n");
  {
    LogShipper first = Shipper();
    first.Track(key_);
    first.Ship();
  }
  Write(key_, "stdout", "after\n");
  LogShipper second = Shipper();  // starts at 0, is told the server's size
  second.Track(key_);
  second.Ship();
  EXPECT_TRUE(second.Drained(key_));
  EXPECT_EQ((kept_[{key_, "stdout"}]), "before the restart\nafter\n");
}

TEST_F(LogShipperTest, ATurnShipsAtMostItsBudget) {
  LogShipper shipper = Shipper(/*turn_bytes=*/4);
  shipper.Track(key_);
  Write(key_, "stdout", "0123456789");
  shipper.Ship();
  EXPECT_EQ((kept_[{key_, "stdout"}]), "0123");
  EXPECT_FALSE(shipper.Drained(key_));
  shipper.Ship();
  shipper.Ship();
  EXPECT_TRUE(shipper.Drained(key_));
  EXPECT_EQ((kept_[{key_, "stdout"}]), "0123456789");
}

TEST_F(LogShipperTest, AForgottenWorkerIsNotShipped) {
  LogShipper shipper = Shipper();
  shipper.Track(key_);
  shipper.Forget(key_);
  Write(key_, "stdout", "late\n");
  shipper.Ship();
  EXPECT_EQ(posts_, 0);
  EXPECT_TRUE(shipper.Drained(key_));
}

}  // namespace
}  // namespace drover::server
