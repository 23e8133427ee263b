#include "drover/gateway/sse.h"

namespace drover::gateway {

std::vector<std::string> SseReader::Feed(std::string_view bytes) {
  std::vector<std::string> events;
  while (!bytes.empty()) {
    const std::size_t newline = bytes.find('\n');
    const std::string_view part = bytes.substr(0, newline);
    if (!skipping_) {
      if (line_.size() + part.size() > kMaxLineBytes) {
        skipping_ = true;
        ++dropped_lines_;
        line_.clear();
      } else {
        line_.append(part);
      }
    }
    if (newline == std::string_view::npos) break;
    bytes.remove_prefix(newline + 1);
    if (!skipping_) {
      std::string_view line = line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      Line(line, events);
    }
    skipping_ = false;
    line_.clear();
  }
  return events;
}

void SseReader::Line(std::string_view line, std::vector<std::string>& events) {
  if (line.empty()) {
    if (has_data_) {
      if (data_ == "[DONE]") {
        done_ = true;
      } else {
        events.push_back(data_);
      }
    }
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.substr(0, 5) != "data:") return;
  line.remove_prefix(5);
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (data_.size() + line.size() + 1 > kMaxLineBytes) {
    ++dropped_lines_;
    return;
  }
  if (has_data_) data_ += '\n';
  data_.append(line);
  has_data_ = true;
}

}  // namespace drover::gateway
