// Minimal --key=value command-line parsing shared by the binaries (no dependencies).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace jaxcc {

class Args {
 public:
  // Accepts --key=value, --key value and bare --flag. Unknown keys are an error, so a typo
  // never silently falls back to a default.
  Args(int argc, char** argv, const std::set<std::string>& known) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + a + "'");
      std::string key = a.substr(2), val;
      const size_t eq = key.find('=');
      if (eq != std::string::npos) {
        val = key.substr(eq + 1);
        key = key.substr(0, eq);
      } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0 && key != "help") {
        val = argv[++i];
      } else {
        val = "1";
      }
      if (!known.count(key)) throw std::invalid_argument("unknown option --" + key + " (see --help)");
      kv_[key] = val;
    }
  }
  bool has(const std::string& k) const { return kv_.count(k) > 0; }
  std::string str(const std::string& k, const std::string& def = "") const {
    auto it = kv_.find(k);
    return it == kv_.end() ? def : it->second;
  }
  double num(const std::string& k, double def) const {
    auto it = kv_.find(k);
    if (it == kv_.end()) return def;
    return ParseNum(it->second, "--" + k);
  }
  static double ParseNum(const std::string& s, const std::string& what) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
      throw std::invalid_argument(what + " needs a number, got '" + s + "'");
    return v;
  }

 private:
  std::map<std::string, std::string> kv_;
};

}  // namespace jaxcc
