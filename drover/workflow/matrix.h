#pragma once

// A sweep stage's `matrix` (docs/workflows.md) and its expansion into parameter sets, one per
// trial. Pure and deterministic: the same matrix gives the same sets, in the same order, on
// every platform.

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace drover::workflow {

// One trial's parameters: name -> value text.
using ParamSet = std::map<std::string, std::string>;

// How a `random` matrix draws one parameter.
struct Distribution {
  enum class Kind {
    kUniform,     // lo + u * (hi - lo)
    kLogUniform,  // exp(log lo + u * (log hi - log lo)); requires 0 < lo
    kChoice,      // one of `choices`, each equally likely
  };
  Kind kind = Kind::kUniform;
  double lo = 0;
  double hi = 0;
  std::vector<std::string> choices;  // kChoice: not empty

  friend bool operator==(const Distribution&, const Distribution&) = default;
};

struct Matrix {
  enum class Kind { kGrid, kList, kRandom };
  Kind kind = Kind::kGrid;
  // kGrid: each parameter's values (none empty), in the order written.
  std::map<std::string, std::vector<std::string>> grid;
  // kList: the parameter sets as written.
  std::vector<ParamSet> list;
  // kRandom: `count` sets drawn from `params` by a generator seeded with `seed`.
  int count = 0;
  std::uint64_t seed = 0;
  std::map<std::string, Distribution> params;

  friend bool operator==(const Matrix&, const Matrix&) = default;
};

// The number of sets Expand() returns; for a grid, the product of the value counts, saturating
// at INT64_MAX (a caller checks it against its limit before expanding).
std::int64_t TrialCount(const Matrix& matrix);

// The parameter sets, trial 1 first:
//   grid: the cartesian product, parameters in name order, the last name varying fastest, each
//         parameter's values in the order written ({b: [1, 2], a: [x, y]} gives a=x b=1,
//         a=x b=2, a=y b=1, a=y b=2);
//   list: as written;
//   random: `count` sets; for each set, each parameter in name order takes one draw.
// Drawn numbers are printed by FormatNumber.
std::vector<ParamSet> Expand(const Matrix& matrix);

// A number as a parameter value: printf's %.6g ("0.001", "1e-05", "123457").
std::string FormatNumber(double value);

// A uniform draw in [0, 1): the top 53 bits of one raw 64-bit output, times 2^-53. Used instead
// of std::uniform_real_distribution, whose output differs between standard libraries.
double UnitDraw(std::mt19937_64& generator);

}  // namespace drover::workflow
