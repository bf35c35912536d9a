// Test helper: deterministic initializer values for graphs written in the text form.
#pragma once

#include <fmt/core.h>
#include <fmt/format.h>

#include <string>
#include <vector>

namespace cleave {

/// `count` comma-separated values in [-0.5, 0.5), another sequence for each seed.
inline std::string text_numbers(int count, int seed) {
  std::vector<double> result;
  for (int i = 0; i < count; ++i) result.push_back(((i * 37 + seed * 11) % 23) / 23.0 - 0.5);
  return fmt::format("{}", fmt::join(result, ","));
}

}  // namespace cleave
