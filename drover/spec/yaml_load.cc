#include "drover/spec/yaml_load.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <sstream>

namespace drover::spec {
namespace {

// Receives the events of one document and remembers where it started.
class DocumentStartRecorder final : public YAML::EventHandler {
 public:
  YAML::Mark start() const { return start_; }

  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  YAML::Mark start_ = YAML::Mark::null_mark();
};

// The stalled-document error of the header comment, or nullopt. Throws YAML::Exception.
std::optional<YamlSyntaxError> FindStall(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStartRecorder recorder;
  YAML::Mark previous = YAML::Mark::null_mark();
  std::size_t count = 0;
  while (parser.HandleNextDocument(recorder)) {
    const YAML::Mark start = recorder.start();
    // Every document consumes at least one character, so more documents than characters is the
    // loop too, whatever the marks say.
    if ((count > 0 && start.pos == previous.pos) || ++count > text.size() + 1) {
      const auto at = static_cast<std::size_t>(std::max(start.pos, 0));
      return YamlSyntaxError{start, at < text.size()
                                        ? fmt::format("invalid YAML: unexpected '{}'", text[at])
                                        : std::string("invalid YAML: unexpected token")};
    }
    previous = start;
  }
  return std::nullopt;
}

}  // namespace

LoadedYaml LoadYamlDocuments(std::string_view text) {
  LoadedYaml out;
  const std::string input(text);
  try {
    out.error = FindStall(input);
    if (!out.error) out.documents = YAML::LoadAll(input);
  } catch (const YAML::DeepRecursion& e) {
    out.error = YamlSyntaxError{e.mark, "the document is nested too deeply"};
  } catch (const YAML::Exception& e) {
    out.error = YamlSyntaxError{e.mark, fmt::format("invalid YAML: {}", e.msg)};
  } catch (const std::exception& e) {
    out.error = YamlSyntaxError{YAML::Mark::null_mark(), fmt::format("invalid YAML: {}", e.what())};
  }
  if (out.error) out.documents.clear();
  return out;
}

}  // namespace drover::spec
