#include "drover/exec/kubernetes/client.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "drover/exec/kubernetes/fake_api_server.h"

namespace drover::exec::kubernetes {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kJobs[] = "/apis/batch/v1/namespaces/ml/jobs";

json Job(const std::string& name, const std::string& attempt = "") {
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata",
               {{"name", name},
                {"namespace", "ml"},
                {"labels", {{"app.kubernetes.io/managed-by", "drover"}}}}},
              {"spec", {{"template", {{"spec", {{"containers", json::array()}}}}}}}};
  if (!attempt.empty()) job["metadata"]["labels"]["drover.dev/attempt-name"] = attempt;
  return job;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    auto config = ParseKubeConfig(server_.KubeConfigYaml("ml"), "kubeconfig", "");
    ASSERT_TRUE(config) << config.error().ToString();
    auto client = Client::Connect(*config);
    ASSERT_TRUE(client) << client.error().ToString();
    client_ = std::move(*client);
  }

  FakeApiServer server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, CreatesGetsListsAndDeletes) {
  auto created = client_->Create(kJobs, Job("a", "drover-1-1"));
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ((*created)["metadata"]["name"], "a");
  EXPECT_FALSE(ResourceVersionOf(*created).empty());
  ASSERT_TRUE(client_->Create(kJobs, Job("b", "drover-2-1")));

  auto got = client_->Get(std::string(kJobs) + "/a");
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)["metadata"]["uid"], (*created)["metadata"]["uid"]);

  auto list = client_->List(kJobs, "drover.dev/attempt-name=drover-2-1");
  ASSERT_TRUE(list) << list.error().ToString();
  ASSERT_EQ((*list)["items"].size(), 1u);
  EXPECT_EQ((*list)["items"][0]["metadata"]["name"], "b");
  EXPECT_FALSE(ResourceVersionOf(*list).empty());

  ASSERT_TRUE(client_->Delete(std::string(kJobs) + "/a"));
  auto gone = client_->Get(std::string(kJobs) + "/a");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(gone.error().message, HasSubstr("HTTP 404 NotFound"));
  auto twice = client_->Delete(std::string(kJobs) + "/a");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(server_.requests(),
              ::testing::Contains("DELETE /apis/batch/v1/namespaces/ml/jobs/a"));
}

TEST_F(ClientTest, ADuplicateCreateIsAlreadyExists) {
  ASSERT_TRUE(client_->Create(kJobs, Job("a")));
  auto again = client_->Create(kJobs, Job("a"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
  EXPECT_THAT(again.error().message,
              HasSubstr("HTTP 409 AlreadyExists: jobs.batch \"a\" already exists"));
}

TEST_F(ClientTest, RetriesAfterTooManyRequests) {
  server_.Throttle(2, 1);
  const auto start = std::chrono::steady_clock::now();
  auto created = client_->Create(kJobs, Job("a"));
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ(client_->throttled(), 2);
  EXPECT_GE(waited, std::chrono::seconds(2));  // Retry-After: 1, twice
  EXPECT_EQ(server_.Items(kJobs).size(), 1u);  // created once
}

TEST_F(ClientTest, GivesUpAfterMaxAttemptsOfTooManyRequests) {
  KubeConfig config = *ParseKubeConfig(server_.KubeConfigYaml("ml"), "kubeconfig", "");
  ClientOptions options;
  options.max_attempts = 2;
  options.max_retry_after_ms = 10;
  auto client = Client::Connect(config, options);
  ASSERT_TRUE(client);
  server_.Throttle(5, 1);
  auto got = (*client)->Get(std::string(kJobs) + "/a");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::kResourceExhausted);
  EXPECT_THAT(got.error().message, HasSubstr("HTTP 429 TooManyRequests"));
}

TEST_F(ClientTest, WatchStreamsEventsAfterAResourceVersion) {
  auto list = client_->List(kJobs, "");
  ASSERT_TRUE(list);
  const std::string rv = ResourceVersionOf(*list);
  ASSERT_TRUE(client_->Create(kJobs, Job("a")));
  server_.Patch(kJobs, "a", {{"status", {{"active", 1}}}});
  std::vector<std::string> seen;
  auto end = client_->Watch(kJobs, "", rv, 5, [&](const WatchEvent& event) {
    if (event.type != "BOOKMARK")
      seen.push_back(event.type + " " + ResourceVersionOf(event.object));
    return seen.size() < 2;
  });
  ASSERT_TRUE(end) << end.error().ToString();
  EXPECT_TRUE(end->stopped);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_THAT(seen[0], HasSubstr("ADDED"));
  EXPECT_THAT(seen[1], HasSubstr("MODIFIED"));
  EXPECT_EQ(end->resource_version, seen[1].substr(seen[1].find(' ') + 1));
  EXPECT_THAT(server_.requests().back(), HasSubstr("allowWatchBookmarks=true"));
}

TEST_F(ClientTest, AWatchFromACompactedResourceVersionIsGone) {
  auto list = client_->List(kJobs, "");
  const std::string rv = ResourceVersionOf(*list);
  ASSERT_TRUE(client_->Create(kJobs, Job("a")));
  server_.Compact();
  for (bool as_http : {false, true}) {
    SCOPED_TRACE(as_http ? "410 status" : "ERROR event");
    server_.GoneAsHttpStatus(as_http);
    int events = 0;
    auto end = client_->Watch(kJobs, "", rv, 5, [&](const WatchEvent&) {
      ++events;
      return true;
    });
    ASSERT_TRUE(end) << end.error().ToString();
    EXPECT_TRUE(end->gone);
    EXPECT_EQ(events, 0);
  }
}

// The reflector's view of a collection: what its handler was given, in order.
struct Recorder {
  std::vector<std::string> changes;
  Reflector::Handler handler() {
    return [this](const std::string& type, const json& object) {
      changes.push_back(type + " " + object["metadata"].value("name", "") + " " +
                        object.value("status", json::object()).dump());
    };
  }
};

TEST_F(ClientTest, ReflectorRelistsAfterGoneWithoutLosingOrRepeatingChanges) {
  Recorder recorder;
  Reflector reflector(kJobs, "app.kubernetes.io/managed-by=drover", recorder.handler());
  ASSERT_TRUE(client_->Create(kJobs, Job("a")));
  ASSERT_TRUE(client_->Create(kJobs, Job("b")));
  ASSERT_TRUE(reflector.Step(*client_, 1));  // list, then a watch that sees nothing new
  EXPECT_THAT(recorder.changes, ElementsAre("ADDED a {}", "ADDED b {}"));
  recorder.changes.clear();

  // While no watch is open: a changes, b goes, c comes; then the history is compacted, so the
  // next watch from the reflector's resourceVersion is 410 Gone.
  server_.Patch(kJobs, "a", {{"status", {{"active", 1}}}});
  server_.Remove(kJobs, "b");
  ASSERT_TRUE(client_->Create(kJobs, Job("c")));
  server_.Compact();
  ASSERT_TRUE(reflector.Step(*client_, 1));
  EXPECT_EQ(reflector.lists(), 2);
  EXPECT_THAT(recorder.changes,
              ElementsAre("DELETED b {}", "MODIFIED a {\"active\":1}", "ADDED c {}"));
  recorder.changes.clear();

  // It watches on from the new list's resourceVersion: the next change arrives once.
  server_.Patch(kJobs, "c", {{"status", {{"succeeded", 1}}}});
  ASSERT_TRUE(reflector.Step(*client_, 1));
  EXPECT_THAT(recorder.changes, ElementsAre("MODIFIED c {\"succeeded\":1}"));
  EXPECT_EQ(reflector.lists(), 2);
}

TEST_F(ClientTest, ReflectorSurvivesGoneAsAnHttpStatusAndThrottling) {
  Recorder recorder;
  Reflector reflector(kJobs, "", recorder.handler());
  ASSERT_TRUE(reflector.Step(*client_, 1));
  ASSERT_TRUE(client_->Create(kJobs, Job("a")));
  server_.Compact();
  server_.GoneAsHttpStatus(true);
  server_.Throttle(1, 1);  // the watch itself is throttled first
  ASSERT_TRUE(reflector.Step(*client_, 1));
  EXPECT_THAT(recorder.changes, ElementsAre("ADDED a {}"));
  EXPECT_EQ(reflector.lists(), 2);
  EXPECT_EQ(client_->throttled(), 1);
}

// A self-signed certificate (its own CA) for 127.0.0.1 and its key, PEM.
struct Identity {
  std::string cert_pem;
  std::string key_pem;
};

std::string Pem(const std::function<int(BIO*)>& write) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return pem;
}

Identity SelfSigned(const std::string& common_name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1"},
                            std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                            std::pair{NID_key_usage, "digitalSignature,keyCertSign"}}) {
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
  }
  X509_sign(cert, key, EVP_sha256());
  Identity identity{
      Pem([&](BIO* bio) { return PEM_write_bio_X509(bio, cert); }), Pem([&](BIO* bio) {
        return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
      })};
  X509_free(cert);
  EVP_PKEY_free(key);
  return identity;
}

std::string Base64(const std::string& text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  const int size = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                   reinterpret_cast<const unsigned char*>(text.data()),
                                   static_cast<int>(text.size()));
  out.resize(static_cast<std::size_t>(size));
  return out;
}

// A kubeconfig for `server` with the CA in a file and the client's certificate as data.
std::string TlsKubeConfig(const std::string& server, const std::string& ca_file,
                          const Identity* client) {
  std::string text = fmt::format(
      "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
      "    server: {}\n    certificate-authority: {}\ncontexts:\n- name: c\n  context: "
      "{{cluster: k, user: u}}\nusers:\n- name: u\n  user:\n",
      server, ca_file);
  if (client) {
    text += fmt::format("    client-certificate-data: {}\n    client-key-data: {}\n",
                        Base64(client->cert_pem), Base64(client->key_pem));
  } else {
    text += "    token: secret-token\n";
  }
  return text;
}

TEST(ClientTls, VerifiesTheServerAndPresentsAClientCertificate) {
  const Identity server_identity = SelfSigned("fake-apiserver");
  const Identity client_identity = SelfSigned("drover");
  FakeApiServer server(
      {server_identity.cert_pem, server_identity.key_pem, client_identity.cert_pem});
  ASSERT_TRUE(server.Start());
  const std::string dir = ::testing::TempDir() + "/kube-tls-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/ca.crt") << server_identity.cert_pem;
  std::ofstream(dir + "/other-ca.crt") << SelfSigned("someone-else").cert_pem;

  auto config =
      ParseKubeConfig(TlsKubeConfig(server.url(), "ca.crt", &client_identity), "kubeconfig", dir);
  ASSERT_TRUE(config) << config.error().ToString();
  auto client = Client::Connect(*config);
  ASSERT_TRUE(client) << client.error().ToString();
  auto created = (*client)->Create(kJobs, Job("a"));
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ((*created)["metadata"]["name"], "a");

  // A server the CA did not sign is not talked to.
  auto wrong_ca = Client::Connect(*ParseKubeConfig(
      TlsKubeConfig(server.url(), "other-ca.crt", &client_identity), "kubeconfig", dir));
  ASSERT_TRUE(wrong_ca);
  auto refused = (*wrong_ca)->Get(std::string(kJobs) + "/a");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);

  // Without a client certificate the server does not talk to us.
  auto anonymous = Client::Connect(
      *ParseKubeConfig(TlsKubeConfig(server.url(), "ca.crt", nullptr), "kubeconfig", dir));
  ASSERT_TRUE(anonymous);
  EXPECT_FALSE((*anonymous)->Get(std::string(kJobs) + "/a"));
}

TEST(ClientTls, SendsTheBearerToken) {
  const Identity server_identity = SelfSigned("fake-apiserver");
  FakeApiServer server({server_identity.cert_pem, server_identity.key_pem, ""});
  ASSERT_TRUE(server.Start());
  const std::string dir = ::testing::TempDir() + "/kube-token-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/ca.crt") << server_identity.cert_pem;
  auto config = ParseKubeConfig(TlsKubeConfig(server.url(), "ca.crt", nullptr), "kubeconfig", dir);
  ASSERT_TRUE(config) << config.error().ToString();
  auto client = Client::Connect(*config);
  ASSERT_TRUE(client);
  ASSERT_TRUE((*client)->List(kJobs, ""));
  EXPECT_EQ(server.last_authorization(), "Bearer secret-token");
}

TEST(KubeConfig, ReadsTheCurrentContextsClusterAndUser) {
  const std::string dir = ::testing::TempDir() + "/kubeconfig-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/ca.crt") << "CA PEM";
  const std::string text = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev
  cluster: {server: "https://dev:6443", insecure-skip-tls-verify: true}
- name: prod
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority: ca.crt
contexts:
- name: dev
  context: {cluster: dev, user: dev}
- name: prod
  context: {cluster: prod, user: admin, namespace: ml}
users:
- name: dev
  user: {token: dev-token}
- name: admin
  user:
    client-certificate-data: Q0VSVCBQRU0=
    client-key-data: S0VZIFBFTQ==
)";
  auto prod = ParseKubeConfig(text, "config", dir);
  ASSERT_TRUE(prod) << prod.error().ToString();
  EXPECT_EQ(prod->server, "https://10.0.0.1:6443");
  EXPECT_EQ(prod->ca_pem, "CA PEM");
  EXPECT_EQ(prod->client_cert_pem, "CERT PEM");
  EXPECT_EQ(prod->client_key_pem, "KEY PEM");
  EXPECT_EQ(prod->namespace_name, "ml");
  EXPECT_TRUE(prod->token.empty());

  auto dev = ParseKubeConfig(text, "config", dir, "dev");
  ASSERT_TRUE(dev) << dev.error().ToString();
  EXPECT_EQ(dev->token, "dev-token");
  EXPECT_TRUE(dev->insecure_skip_tls_verify);
  EXPECT_EQ(dev->namespace_name, "");
}

TEST(KubeConfig, ErrorsNameTheFileAndField) {
  auto missing = ParseKubeConfig("current-context: x\ncontexts: []\n", "/k/config", "");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "/k/config: contexts: no context named 'x'");
  auto plugin = ParseKubeConfig(
      "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
      "clusters: [{name: k, cluster: {server: 'https://k'}}]\n"
      "users: [{name: u, user: {exec: {command: gke-gcloud-auth-plugin}}}]\n",
      "/k/config", "");
  ASSERT_FALSE(plugin);
  EXPECT_THAT(plugin.error().message,
              HasSubstr("/k/config: users[0].user.exec: credential plugins are not supported"));
  auto bad_server = ParseKubeConfig(
      "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
      "clusters: [{name: k, cluster: {server: 'k:6443'}}]\n",
      "/k/config", "");
  ASSERT_FALSE(bad_server);
  EXPECT_EQ(bad_server.error().message,
            "/k/config: clusters[0].cluster.server: expected an https:// (or http://) URL, found "
            "'k:6443'");
}

TEST(ParseTime, ReadsRfc3339) {
  EXPECT_EQ(ParseTime("1970-01-01T00:00:01Z"), 1000);
  EXPECT_EQ(ParseTime("2025-01-02T03:04:05.250Z"), 1735787045250);
  EXPECT_EQ(ParseTime("2025-01-02T05:04:05+02:00"), 1735787045000);
  EXPECT_EQ(ParseTime("yesterday"), std::nullopt);
}

}  // namespace
}  // namespace drover::exec::kubernetes

namespace drover::exec::kubernetes {
namespace {

// Not run by default: serves a fake API server with one Job for 60 s, for trying kubectl
// against it by hand (docs/operations.md):
//   drover_exec_kubernetes_test --gtest_also_run_disabled_tests --gtest_filter='*ForKubectl' &
// then kubectl --server URL get jobs -n ml.
TEST(FakeApiServerByHand, DISABLED_ServeForKubectl) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start());
  server.Put(kJobs, Job("drover-1-1", "drover-1-1"));
  std::cout << "serving at " << server.url() << std::endl;
  std::this_thread::sleep_for(std::chrono::seconds(60));
}

}  // namespace
}  // namespace drover::exec::kubernetes
