#pragma once

// Loading a YAML stream with yaml-cpp without letting an exception or a hang escape.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drover::spec {

struct YamlSyntaxError {
  YAML::Mark mark;      // 0-based, as yaml-cpp reports it; may be YAML::Mark::null_mark()
  std::string field;    // the path of the value at fault ("env.X", "command[2]"), or ""
  std::string message;  // "invalid YAML: ...", NestedTooDeeply(), ...
};

struct LoadedYaml {
  std::vector<YAML::Node> documents;     // empty documents included, as YAML::Null nodes
  std::optional<YamlSyntaxError> error;  // set: `documents` is empty
};

// YAML::LoadAll that never throws and always terminates.
//
// yaml-cpp 0.7 (Debian 12) loops forever, allocating, when a token that cannot start a node
// appears at the top level of a stream (a stray ',' as in ",", "[a]," or "- a\n,"): the parser
// keeps returning the same empty document without consuming input (jbeder/yaml-cpp#1040, fixed
// upstream by PR #1319). The stream is therefore walked once with the event parser; a document
// that starts where the previous one did is that loop and is reported as a syntax error. Only a
// stream that ends normally is then loaded. Costs a second parse of the text.
//
// The same walk refuses, as errors at the offending value with its field path:
//   - text that is not UTF-8 (yaml-cpp passes the bytes on, and the JSON codec would later
//     rewrite them to U+FFFD): "invalid UTF-8 (byte 0xFF); the spec must be UTF-8 text", at the
//     byte's line and column (counted in bytes), with the path of the value holding it;
//   - with max_expanded_bytes > 0, a stream whose expanded size (SpecLimits::max_expanded_bytes:
//     scalar bytes plus one per node, every alias counted as a copy of its anchor's node) exceeds
//     it, at the value where the running total crosses the bound. The count is linear in the
//     text: an anchor's size is recorded once, when its node ends.
//
// Text nested more than kMaxNestingDepth levels (common/nesting.h, an upper bound that counts
// every bracket) is refused with NestedTooDeeply() at the bracket that goes too deep, before
// yaml-cpp reads it: yaml-cpp would refuse it too, but only after holding ~230 bytes per
// character of it.
LoadedYaml LoadYamlDocuments(std::string_view text, std::int64_t max_expanded_bytes = 0);

// "the document is nested too deeply (more than 499 levels)".
std::string NestedTooDeeply();

}  // namespace drover::spec
