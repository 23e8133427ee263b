#include "drover/spec/yaml_load.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

#include "drover/common/nesting.h"
#include "drover/common/utf8.h"
#include "drover/spec/limits.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec {
namespace {

// U+FFFD REPLACEMENT CHARACTER, which a reader may put in place of bytes that are not UTF-8
// (yaml-cpp 0.7 passes them through).
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Receives the events of a stream: remembers where the current document started, follows the
// field path of each value, sums the expanded size and finds the value holding a given line's
// replaced bytes (see LoadYamlDocuments).
class StreamScanner final : public YAML::EventHandler {
 public:
  // `utf8_line`: the 0-based line of the first byte that is not UTF-8, or -1.
  StreamScanner(std::int64_t max_expanded_bytes, int utf8_line)
      : max_expanded_bytes_(max_expanded_bytes), utf8_line_(utf8_line) {}

  YAML::Mark start() const { return start_; }
  // The first value that took the expanded size over the bound.
  const std::optional<YamlSyntaxError>& too_large() const { return too_large_; }
  // The path, escaped (EscapeForMessage), of the last value starting at or before utf8_line that
  // holds bytes that are not UTF-8 (or U+FFFD).
  const std::string& utf8_field() const { return utf8_field_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    start_ = mark;
    frames_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, 1); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto size = sizes_.find(anchor);
    Leaf(mark, YAML::NullAnchor, size == sizes_.end() ? 1 : size->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    if (utf8_line_ >= 0 && mark.line <= utf8_line_ &&
        (FindInvalidUtf8(value) || value.find(kReplacement) != std::string::npos)) {
      utf8_field_ = EscapeForMessage(Path(&value));
    }
    if (!frames_.empty() && frames_.back().map && frames_.back().items % 2 == 0) {
      frames_.back().key = value;
    }
    Leaf(mark, anchor, static_cast<std::int64_t>(value.size()) + 1);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, /*map=*/false);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, /*map=*/true);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    bool map = false;
    std::string path;
    std::size_t items = 0;  // nodes seen so far (a mapping's keys and values both count)
    std::string key;        // a mapping's current key ("?" when it is not a scalar)
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::int64_t total_at_start = 0;
  };

  // The path of the node about to start. `key_text`: its text, when it is a scalar (a key's
  // path names the key itself).
  std::string Path(const std::string* key_text = nullptr) const {
    if (frames_.empty()) return "";
    const Frame& top = frames_.back();
    if (!top.map) return internal::Index(top.path, top.items);
    if (top.items % 2 == 0) return internal::Child(top.path, key_text ? *key_text : "?");
    return internal::Child(top.path, top.key);
  }

  void Grow(const YAML::Mark& mark, std::int64_t bytes) {
    constexpr std::int64_t kCap = std::numeric_limits<std::int64_t>::max() / 4;
    total_ = std::min(kCap, total_ + std::min(kCap, bytes));
    if (max_expanded_bytes_ > 0 && total_ > max_expanded_bytes_ && !too_large_) {
      too_large_ = YamlSyntaxError{
          mark, Path(),
          fmt::format("the document expands to more than {} bytes (aliases count as copies of "
                      "what their anchor names); the limit is {} bytes",
                      max_expanded_bytes_, max_expanded_bytes_)};
    }
  }

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, std::int64_t bytes) {
    const std::int64_t before = total_;
    Grow(mark, bytes);
    if (anchor != YAML::NullAnchor) sizes_[anchor] = total_ - before;
    Advance();
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool map) {
    Frame frame;
    frame.map = map;
    frame.path = Path();
    frame.anchor = anchor;
    frame.total_at_start = total_;
    frames_.push_back(std::move(frame));
    Grow(mark, 1);
  }

  void Close() {
    if (frames_.empty()) return;
    const Frame& top = frames_.back();
    if (top.anchor != YAML::NullAnchor) sizes_[top.anchor] = total_ - top.total_at_start;
    const bool was_key = frames_.size() >= 2 && frames_[frames_.size() - 2].map &&
                         frames_[frames_.size() - 2].items % 2 == 0;
    frames_.pop_back();
    if (was_key) frames_.back().key.assign(1, '?');  // not `= "?"`: GCC 12 -Wrestrict
    Advance();
  }

  void Advance() {
    if (!frames_.empty()) ++frames_.back().items;
  }

  std::int64_t max_expanded_bytes_;
  int utf8_line_;
  YAML::Mark start_ = YAML::Mark::null_mark();
  std::vector<Frame> frames_;
  std::map<YAML::anchor_t, std::int64_t> sizes_;  // the expanded size of each anchored node
  std::int64_t total_ = 0;
  std::optional<YamlSyntaxError> too_large_;
  std::string utf8_field_;
};

// Walks the stream once with `scanner`. The stalled-document error of the header comment, or
// nullopt. Throws YAML::Exception.
std::optional<YamlSyntaxError> Scan(const std::string& text, StreamScanner& scanner) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  YAML::Mark previous = YAML::Mark::null_mark();
  std::size_t count = 0;
  while (parser.HandleNextDocument(scanner)) {
    const YAML::Mark start = scanner.start();
    // Every document consumes at least one character, so more documents than characters is the
    // loop too, whatever the marks say.
    if ((count > 0 && start.pos == previous.pos) || ++count > text.size() + 1) {
      const auto at = static_cast<std::size_t>(std::max(start.pos, 0));
      return YamlSyntaxError{start, "",
                             at < text.size()
                                 ? fmt::format("invalid YAML: unexpected '{}'", text[at])
                                 : std::string("invalid YAML: unexpected token")};
    }
    previous = start;
  }
  return std::nullopt;
}

// The 0-based mark of byte `offset` of `text` (columns count bytes).
YAML::Mark MarkOf(std::string_view text, std::size_t offset) {
  YAML::Mark mark;
  mark.pos = static_cast<int>(offset);
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  mark.line = static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
  mark.column = static_cast<int>(
      line_start == std::string_view::npos || offset == 0 ? offset : offset - line_start - 1);
  return mark;
}

}  // namespace

std::string NestedTooDeeply() {
  return fmt::format("the document is nested too deeply (more than {} levels)", kMaxNestingDepth);
}

LoadedYaml LoadYamlDocuments(std::string_view text, std::int64_t max_expanded_bytes) {
  LoadedYaml out;
  if (std::optional<std::size_t> deep = FindExcessNesting(text, NestingSyntax::kYaml)) {
    out.error = YamlSyntaxError{MarkOf(text, *deep), "", NestedTooDeeply()};
    return out;
  }
  const std::string input(text);
  const std::optional<std::size_t> invalid = FindInvalidUtf8(text);
  const YAML::Mark invalid_mark = invalid ? MarkOf(text, *invalid) : YAML::Mark::null_mark();
  StreamScanner scanner(max_expanded_bytes, invalid ? invalid_mark.line : -1);
  try {
    out.error = Scan(input, scanner);
    if (!out.error) out.error = scanner.too_large();
    if (!out.error && !invalid) out.documents = YAML::LoadAll(input);
  } catch (const YAML::DeepRecursion& e) {
    out.error = YamlSyntaxError{e.mark, "", NestedTooDeeply()};
  } catch (const YAML::Exception& e) {
    out.error = YamlSyntaxError{e.mark, "", fmt::format("invalid YAML: {}", e.msg)};
  } catch (const std::exception& e) {
    out.error =
        YamlSyntaxError{YAML::Mark::null_mark(), "", fmt::format("invalid YAML: {}", e.what())};
  }
  if (invalid) {
    // The root cause of whatever else the walk found.
    out.error =
        YamlSyntaxError{invalid_mark, scanner.utf8_field(),
                        fmt::format("invalid UTF-8 (byte 0x{:02X}); the spec must be UTF-8 text",
                                    static_cast<unsigned char>(text[*invalid]))};
  }
  if (out.error) out.documents.clear();
  return out;
}

}  // namespace drover::spec
