#include "drover/common/quantity.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <limits>

namespace drover {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// A non-negative decimal number split into integer and fractional digits, exact.
struct Decimal {
  std::int64_t whole = 0;
  std::int64_t fraction = 0;        // the fractional digits as an integer
  std::int64_t fraction_scale = 1;  // 10^(number of fractional digits)
};

// Parses the leading decimal number of `text`, returning the rest in `rest`.
Result<Decimal> ParseDecimal(std::string_view text, std::string_view& rest) {
  Decimal d;
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    if (text[i] == '-') return InvalidArgument("must not be negative");
    ++i;
  }
  std::size_t digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
    if (d.whole > (kMax - 9) / 10) return InvalidArgument("number is too large");
    d.whole = d.whole * 10 + (text[i] - '0');
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
      if (d.fraction_scale >= 1'000'000'000'000LL) return InvalidArgument("too many decimals");
      d.fraction = d.fraction * 10 + (text[i] - '0');
      d.fraction_scale *= 10;
    }
  }
  if (digits == 0) return InvalidArgument("expected a number");
  rest = text.substr(i);
  return d;
}

// d * multiplier, which must be a whole number that fits in int64.
Result<std::int64_t> Scale(const Decimal& d, std::int64_t multiplier, std::string_view what) {
  if (d.whole != 0 && multiplier > kMax / d.whole) return InvalidArgument("number is too large");
  std::int64_t whole = d.whole * multiplier;
  // fraction * multiplier / scale must be exact.
  __int128 frac = static_cast<__int128>(d.fraction) * multiplier;
  if (frac % d.fraction_scale != 0) {
    return InvalidArgument(fmt::format("is not a whole number of {}", what));
  }
  __int128 total = static_cast<__int128>(whole) + frac / d.fraction_scale;
  if (total > kMax) return InvalidArgument("number is too large");
  return static_cast<std::int64_t>(total);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::int64_t> ParseCpuMillis(std::string_view text) {
  text = Trim(text);
  std::string_view rest;
  DROVER_ASSIGN_OR_RETURN(auto d, ParseDecimal(text, rest));
  if (rest.empty()) return Scale(d, 1000, "millicores");
  if (rest == "m") {
    if (d.fraction != 0) return InvalidArgument("millicores must be a whole number");
    return d.whole;
  }
  return InvalidArgument(
      fmt::format("unknown CPU unit '{}' (write cores such as 8 or 0.5, or millicores such as "
                  "500m)",
                  rest));
}

Result<std::int64_t> ParseBytes(std::string_view text) {
  text = Trim(text);
  std::string_view rest;
  DROVER_ASSIGN_OR_RETURN(auto d, ParseDecimal(text, rest));
  struct Unit {
    std::string_view name;
    std::int64_t multiplier;
  };
  static constexpr std::array<Unit, 16> kUnits = {{
      {"", 1},
      {"B", 1},
      {"Ki", 1LL << 10},
      {"Mi", 1LL << 20},
      {"Gi", 1LL << 30},
      {"Ti", 1LL << 40},
      {"Pi", 1LL << 50},
      {"KiB", 1LL << 10},
      {"MiB", 1LL << 20},
      {"GiB", 1LL << 30},
      {"TiB", 1LL << 40},
      {"K", 1'000},
      {"M", 1'000'000},
      {"G", 1'000'000'000},
      {"T", 1'000'000'000'000},
      {"P", 1'000'000'000'000'000},
  }};
  std::string_view unit = rest;
  if (unit.size() == 2 && unit.back() == 'B' && unit.front() != 'i') unit.remove_suffix(1);  // GB
  for (const Unit& u : kUnits) {
    if (u.name == unit) return Scale(d, u.multiplier, "bytes");
  }
  return InvalidArgument(fmt::format(
      "unknown memory unit '{}' (use Ki, Mi, Gi, Ti for powers of 1024 or K, M, G, T for "
      "powers of 1000)",
      rest));
}

Result<DurationMs> ParseDuration(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return InvalidArgument("expected a duration such as 30s, 5m or 1h30m");
  DurationMs total = 0;
  bool first = true;
  while (!text.empty()) {
    std::string_view rest;
    DROVER_ASSIGN_OR_RETURN(auto d, ParseDecimal(text, rest));
    std::size_t unit_len = 0;
    while (unit_len < rest.size() && std::isalpha(static_cast<unsigned char>(rest[unit_len]))) {
      ++unit_len;
    }
    std::string_view unit = rest.substr(0, unit_len);
    std::int64_t multiplier;
    if (unit.empty() && first && unit_len == rest.size()) {
      multiplier = kMillisPerSecond;  // bare number: seconds
    } else if (unit == "ms") {
      multiplier = 1;
    } else if (unit == "s") {
      multiplier = kMillisPerSecond;
    } else if (unit == "m") {
      multiplier = kMillisPerMinute;
    } else if (unit == "h") {
      multiplier = kMillisPerHour;
    } else if (unit == "d") {
      multiplier = kMillisPerDay;
    } else {
      return InvalidArgument(fmt::format(
          "unknown duration unit '{}' (use ms, s, m, h or d, e.g. 30s or 1h30m)", unit));
    }
    DROVER_ASSIGN_OR_RETURN(const std::int64_t part, Scale(d, multiplier, "milliseconds"));
    if (part > kMax - total) return InvalidArgument("duration is too large");
    total += part;
    text = rest.substr(unit_len);
    first = false;
  }
  return total;
}

std::string FormatCpuMillis(std::int64_t millis) {
  if (millis % 1000 == 0) return fmt::format("{}", millis / 1000);
  return fmt::format("{}m", millis);
}

std::string FormatBytes(std::int64_t bytes) {
  static constexpr std::array<std::string_view, 5> kNames = {"Pi", "Ti", "Gi", "Mi", "Ki"};
  static constexpr std::array<int, 5> kShifts = {50, 40, 30, 20, 10};
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    std::int64_t unit = 1LL << kShifts[i];
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, kNames[i]);
  }
  return fmt::format("{}", bytes);
}

std::string FormatBytesApprox(std::int64_t bytes) {
  static constexpr std::array<std::string_view, 6> kNames = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{}", bytes);
  std::string text = fmt::format("{:.1f}", value);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text + std::string(kNames[unit]);
}

std::string FormatDuration(DurationMs duration) {
  if (duration < 0) return fmt::format("-{}", FormatDuration(-duration));
  if (duration < kMillisPerSecond) return fmt::format("{}ms", duration);
  if (duration < kMillisPerMinute) {
    if (duration % kMillisPerSecond == 0) return fmt::format("{}s", duration / kMillisPerSecond);
    return fmt::format("{:.1f}s", static_cast<double>(duration) / kMillisPerSecond);
  }
  std::int64_t seconds = duration / kMillisPerSecond;
  std::int64_t h = seconds / 3600, m = (seconds % 3600) / 60, s = seconds % 60;
  std::string out;
  if (h > 0) out += fmt::format("{}h", h);
  if (m > 0) out += fmt::format("{}m", m);
  if (s > 0) out += fmt::format("{}s", s);
  return out;
}

}  // namespace drover
