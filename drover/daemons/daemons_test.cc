#include "drover/daemons/daemons.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::daemons {
namespace {

using ::testing::HasSubstr;

TEST(PlaneOptionsOfTest, SpecLimitFlagsSetThePlanesBounds) {
  ServerFlags flags;
  flags.max_spec_size = "8Mi";
  flags.max_arg_size = "64Ki";
  flags.max_launch_size = "512Ki";
  flags.max_remote_log_size = "1Gi";
  flags.diagnosis_min_sampled = "90s";
  flags.agent_timeout = "5s";
  auto options = PlaneOptionsOf(flags);
  ASSERT_TRUE(options) << options.error().ToString();
  EXPECT_EQ(options->spec_limits.max_expanded_bytes, 8 << 20);
  EXPECT_EQ(options->spec_limits.max_arg_bytes, 64 << 10);
  EXPECT_EQ(options->spec_limits.max_launch_bytes, 512 << 10);
  EXPECT_EQ(options->max_remote_log_bytes, std::int64_t{1} << 30);
  EXPECT_EQ(options->diagnosis.min_sampled_ms, 90'000);
  EXPECT_EQ(options->agent_timeout_ms, 5000);
}

TEST(PlaneOptionsOfTest, ServicePortsAreARange) {
  ServerFlags flags;
  flags.service_ports = "26100-26199";
  auto options = PlaneOptionsOf(flags);
  ASSERT_TRUE(options) << options.error().ToString();
  EXPECT_EQ(options->service_port_from, 26100);
  EXPECT_EQ(options->service_port_to, 26199);
  for (const char* bad : {"26100", "26199-26100", "0-10", "1-70000", "1-2x", "a-b"}) {
    flags.service_ports = bad;
    auto refused = PlaneOptionsOf(flags);
    ASSERT_FALSE(refused) << bad;
    EXPECT_THAT(refused.error().message, HasSubstr("--service-ports")) << bad;
  }
}

TEST(PlaneOptionsOfTest, UnsetFlagsKeepTheDefaults) {
  auto options = PlaneOptionsOf(ServerFlags{});
  ASSERT_TRUE(options) << options.error().ToString();
  EXPECT_EQ(options->spec_limits.max_expanded_bytes, spec::SpecLimits{}.max_expanded_bytes);
  EXPECT_EQ(options->spec_limits.max_arg_bytes, spec::kMaxArgBytes);
}

TEST(PlaneOptionsOfTest, BadValuesNameTheirFlag) {
  for (auto [field, flag] : {std::pair{&ServerFlags::max_spec_size, "--max-spec-size"},
                             {&ServerFlags::max_arg_size, "--max-arg-size"},
                             {&ServerFlags::max_launch_size, "--max-launch-size"},
                             {&ServerFlags::max_remote_log_size, "--max-remote-log-size"},
                             {&ServerFlags::diagnosis_min_sampled, "--diagnosis-min-sampled"}}) {
    for (const char* bad : {"lots", "0", "-1Mi"}) {
      ServerFlags flags;
      flags.*field = bad;
      auto options = PlaneOptionsOf(flags);
      ASSERT_FALSE(options) << flag << "=" << bad;
      EXPECT_EQ(options.error().code, ErrorCode::kInvalidArgument);
      EXPECT_THAT(options.error().message, HasSubstr(flag));
      EXPECT_THAT(options.error().message, HasSubstr(bad));
    }
  }
}

TEST(PlaneOptionsOfTest, AnArgumentLimitBeyondWhatExecTakesIsRefused) {
  ServerFlags flags;
  flags.max_arg_size = "1Mi";
  auto options = PlaneOptionsOf(flags);
  ASSERT_FALSE(options);
  EXPECT_THAT(options.error().message, HasSubstr("--max-arg-size: at most 131071 bytes"));
}

TEST(HttpOptionsOfTest, BadValuesNameTheirFlag) {
  ServerFlags flags;
  flags.max_body = "huge";
  auto body = HttpOptionsOf(flags);
  ASSERT_FALSE(body);
  EXPECT_THAT(body.error().message, HasSubstr("--max-body: expected a positive size"));
  flags = ServerFlags{};
  flags.idle_timeout = "0";
  auto idle = HttpOptionsOf(flags);
  ASSERT_FALSE(idle);
  EXPECT_THAT(idle.error().message, HasSubstr("--idle-timeout: expected a positive duration"));
  flags = ServerFlags{};
  flags.limits.threads = 0;
  auto threads = HttpOptionsOf(flags);
  ASSERT_FALSE(threads);
  EXPECT_THAT(threads.error().message, HasSubstr("--http-threads"));
}

TEST(HttpOptionsOfTest, TlsFlagsComeInPairs) {
  ServerFlags flags;
  flags.tls.cert_file = "site.pem";
  auto cert_only = HttpOptionsOf(flags);
  ASSERT_FALSE(cert_only);
  EXPECT_THAT(cert_only.error().message, HasSubstr("--tls-key: required with --tls-cert"));
  flags.tls = {"", "site.key"};
  auto key_only = HttpOptionsOf(flags);
  ASSERT_FALSE(key_only);
  EXPECT_THAT(key_only.error().message, HasSubstr("--tls-cert: required with --tls-key"));
  flags.tls = {"site.pem", "site.key"};
  auto both = HttpOptionsOf(flags);
  ASSERT_TRUE(both) << both.error().ToString();
  EXPECT_EQ(both->tls.cert_file, "site.pem");
  EXPECT_EQ(both->tls.key_file, "site.key");
}

}  // namespace
}  // namespace drover::daemons
