// `drover server --tls-cert --tls-key` with a site CA (docs/security.md, "TLS"): the CLI and a
// remote agent given the CA bundle by --ca or DROVER_CA, over the real binary.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "drover/api/tls_client.h"
#include "drover/testing/test_ca.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class Tls : public IntegrationTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::MakeTestCa(dir_.path(), "site-ca", /*with_server=*/true))
        << "the openssl command failed";
  }
  std::string Ca() const { return dir_.Sub("site-ca.pem"); }
};

TEST_F(Tls, CliAndRemoteAgentWorkWithTheSiteCa) {
  auto server = StartServer(
      "server", "0", {"--tls-cert", dir_.Sub("server.pem"), "--tls-key", dir_.Sub("server.key")});
  ASSERT_TRUE(server->ok());
  ASSERT_THAT(server->url(), ::testing::StartsWith("https://127.0.0.1:"));

  CommandResult nodes = RunDrover({"--server", server->url(), "--ca", Ca(), "nodes"}, dir_.path());
  EXPECT_EQ(nodes.exit_code, 0) << nodes.out << nodes.err;
  CommandResult unverified = RunDrover({"--server", server->url(), "nodes"}, dir_.path());
  EXPECT_NE(unverified.exit_code, 0);
  EXPECT_THAT(unverified.err, HasSubstr("TLS: certificate verify failed for " + server->url()));
  EXPECT_THAT(unverified.err, HasSubstr("pass --ca or DROVER_CA"));
  CommandResult plain =
      RunDrover({"--server", "http" + server->url().substr(5), "--ca", Ca(), "nodes"}, dir_.path());
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_THAT(plain.err, HasSubstr("https://"));

  // The agent takes the CA from DROVER_CA, which it inherits.
  ::setenv("DROVER_CA", Ca().c_str(), 1);
  std::unique_ptr<ChildProcess> agent = StartAgent(*server, "remote-tls", "1xA100-40GB");
  ::unsetenv("DROVER_CA");
  api::ApiClient client(server->url(), kMillisPerMinute, Ca(), api::ConnectTls);
  client.SetBearer(server->token());
  ASSERT_TRUE(WaitForNodeState(client, "remote-tls", "ready"))
      << ProcessLogs(server.get(), {{"agent", agent.get()}});
  const std::string proof = dir_.Sub("ran-over-tls");
  auto ids = Submit(client, fmt::format("kind: Job\nname: tls-job\n"
                                        "resources: {{cpu: 100m, memory: 64Mi, gpus: 1}}\n"
                                        "command: [touch, {}]\n",
                                        proof));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded")
      << GetJob(client, ids[0]).dump(2) << ProcessLogs(server.get(), {{"agent", agent.get()}});
  EXPECT_EQ(GetJob(client, ids[0])["attempts"][0]["workers"][0]["node"], "remote-tls");
  EXPECT_TRUE(std::filesystem::exists(proof));
}

TEST_F(Tls, ServerRefusesToStartWithHalfOrBadTlsFlags) {
  CommandResult half = RunDrover({"server", "--data", dir_.Sub("half"), "--listen", "127.0.0.1:0",
                                  "--tls-cert", dir_.Sub("server.pem")},
                                 dir_.path());
  EXPECT_NE(half.exit_code, 0);
  EXPECT_THAT(half.err, HasSubstr("--tls-key: required with --tls-cert"));
  CommandResult mismatched =
      RunDrover({"server", "--data", dir_.Sub("bad"), "--listen", "127.0.0.1:0", "--tls-cert",
                 dir_.Sub("server.pem"), "--tls-key", dir_.Sub("site-ca.key")},
                dir_.path());
  EXPECT_NE(mismatched.exit_code, 0);
  EXPECT_THAT(mismatched.err,
              HasSubstr("does not match the certificate in " + dir_.Sub("server.pem")));
}

}  // namespace
}  // namespace drover::integration
