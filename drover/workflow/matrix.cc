#include "drover/workflow/matrix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace drover::workflow {
namespace {

// One draw of `d` as text.
std::string Draw(const Distribution& d, std::mt19937_64& generator) {
  const double u = UnitDraw(generator);
  switch (d.kind) {
    case Distribution::Kind::kUniform:
      return FormatNumber(d.lo + u * (d.hi - d.lo));
    case Distribution::Kind::kLogUniform:
      return FormatNumber(std::exp(std::log(d.lo) + u * (std::log(d.hi) - std::log(d.lo))));
    case Distribution::Kind::kChoice: {
      const auto i = static_cast<std::size_t>(u * static_cast<double>(d.choices.size()));
      return d.choices[std::min(i, d.choices.size() - 1)];
    }
  }
  return "";
}

}  // namespace

std::int64_t TrialCount(const Matrix& matrix) {
  switch (matrix.kind) {
    case Matrix::Kind::kGrid: {
      if (matrix.grid.empty()) return 0;
      std::int64_t product = 1;
      for (const auto& [name, values] : matrix.grid) {
        const auto n = static_cast<std::int64_t>(values.size());
        if (n != 0 && product > std::numeric_limits<std::int64_t>::max() / n) {
          return std::numeric_limits<std::int64_t>::max();
        }
        product *= n;
      }
      return product;
    }
    case Matrix::Kind::kList:
      return static_cast<std::int64_t>(matrix.list.size());
    case Matrix::Kind::kRandom:
      return matrix.count;
  }
  return 0;
}

std::vector<ParamSet> Expand(const Matrix& matrix) {
  std::vector<ParamSet> sets;
  switch (matrix.kind) {
    case Matrix::Kind::kGrid: {
      if (TrialCount(matrix) == 0) return sets;
      // An odometer over the parameters; the last one (in name order) turns fastest.
      std::vector<std::pair<const std::string*, const std::vector<std::string>*>> axes;
      for (const auto& [name, values] : matrix.grid) axes.emplace_back(&name, &values);
      std::vector<std::size_t> at(axes.size(), 0);
      while (true) {
        ParamSet set;
        for (std::size_t i = 0; i < axes.size(); ++i)
          set[*axes[i].first] = (*axes[i].second)[at[i]];
        sets.push_back(std::move(set));
        std::size_t i = axes.size();
        while (i > 0 && ++at[i - 1] == axes[i - 1].second->size()) at[--i] = 0;
        if (i == 0) break;
      }
      return sets;
    }
    case Matrix::Kind::kList:
      return matrix.list;
    case Matrix::Kind::kRandom: {
      std::mt19937_64 generator(matrix.seed);
      for (int n = 0; n < matrix.count; ++n) {
        ParamSet set;
        for (const auto& [name, distribution] : matrix.params) {
          set[name] = Draw(distribution, generator);
        }
        sets.push_back(std::move(set));
      }
      return sets;
    }
  }
  return sets;
}

std::string FormatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

double UnitDraw(std::mt19937_64& generator) {
  return static_cast<double>(generator() >> 11) * 0x1.0p-53;
}

}  // namespace drover::workflow
