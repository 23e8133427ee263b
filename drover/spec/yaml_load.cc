#include "drover/spec/yaml_load.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <sstream>

#include "drover/common/nesting.h"

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

// The nesting error of the header comment, at the bracket that goes too deep, or nullopt.
std::optional<YamlSyntaxError> FindDeepNesting(std::string_view text) {
  const std::optional<std::size_t> at = FindExcessNesting(text, NestingSyntax::kYaml);
  if (!at) return std::nullopt;
  YAML::Mark mark;
  mark.pos = static_cast<int>(*at);
  const std::string_view before = text.substr(0, *at);
  mark.line = static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t line_start = before.rfind('\n');
  mark.column = static_cast<int>(line_start == std::string_view::npos ? *at : *at - line_start - 1);
  return YamlSyntaxError{mark, NestedTooDeeply()};
}

}  // namespace

std::string NestedTooDeeply() {
  return fmt::format("the document is nested too deeply (more than {} levels)", kMaxNestingDepth);
}

LoadedYaml LoadYamlDocuments(std::string_view text) {
  LoadedYaml out;
  out.error = FindDeepNesting(text);
  if (out.error) return out;
  const std::string input(text);
  try {
    out.error = FindStall(input);
    if (!out.error) out.documents = YAML::LoadAll(input);
  } catch (const YAML::DeepRecursion& e) {
    out.error = YamlSyntaxError{e.mark, NestedTooDeeply()};
  } catch (const YAML::Exception& e) {
    out.error = YamlSyntaxError{e.mark, fmt::format("invalid YAML: {}", e.msg)};
  } catch (const std::exception& e) {
    out.error = YamlSyntaxError{YAML::Mark::null_mark(), fmt::format("invalid YAML: {}", e.what())};
  }
  if (out.error) out.documents.clear();
  return out;
}

}  // namespace drover::spec
