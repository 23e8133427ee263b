// libFuzzer harness: arbitrary bytes through codec::ParseJson and, when they parse, every
// decoder of codec/json.h (the store's snapshots, the API's bodies and the agent wire all decode
// with these). Decoders never throw; a value that decodes must encode (DumpJson included) and
// decode again to the same JSON, so that a stored or sent value reads back as it was written.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "drover/codec/json.h"
#include "fuzz/fuzz_check.h"

namespace {

using nlohmann::json;

// Decodes `input` with `decode`; if that succeeds, checks the encode/decode round trip.
template <typename Decode>
void RoundTrip(const json& input, Decode decode) {
  auto value = decode(input);
  if (!value) return;
  const json encoded = drover::codec::ToJson(*value);
  (void)drover::codec::DumpJson(encoded);
  auto again = decode(encoded);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(drover::codec::ToJson(*again) == encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace codec = drover::codec;
  auto parsed = codec::ParseJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!parsed) return 0;
  const json& j = *parsed;
  (void)codec::DumpJson(j);
  RoundTrip(j, [](const json& in) { return codec::JobSpecFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::ExitStatusFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::WorkerFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::AttemptFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::JobFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::TransitionFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::NodeFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::LaunchSpecFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::CronSpecFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::WorkerEventFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::DecisionFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::QueueConfigFromJson(in); });
  RoundTrip(j, [](const json& in) { return codec::PolicyFromJson(in); });
  return 0;
}
