// Small statistics helpers for the summaries.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace jaxcc {

// Percentile with linear interpolation between order statistics (numpy's default), so the
// C++ summaries and jaxcc.metrics agree on the same samples. Sorts v in place. NaN if empty.
inline double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// Writes a summary's JSON text to `path`, or to stdout when `path` is empty.  Returns the
// process exit status: 0, or 1 (with a message naming `prog` and the file) if it cannot write.
inline int WriteSummary(const std::string& text, const std::string& path, const char* prog) {
  if (path.empty()) {
    std::cout << text << "\n";
    return 0;
  }
  std::ofstream f(path);
  f << text << "\n";
  if (!f) {
    std::cerr << prog << ": cannot write --summary file " << path << "\n";
    return 1;
  }
  return 0;
}

}  // namespace jaxcc
