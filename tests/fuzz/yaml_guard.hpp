// Known-bug switch for the fuzz targets.
//
// Two findings of these targets are fixed (docs/reliability.md,
// "Findings"): yaml-cpp 0.7's YAML::LoadAll looping forever on a stray ','
// (jbeder/yaml-cpp#1040; the parsers now use libyaml, and read one
// document), and non-UTF-8 manifests reaching capabilities_to_json (now
// refused). The reproducers stay in tests/fuzz/known/. The check that
// would have tolerated the second is off by default: set
// COMET_FUZZ_KNOWN_BUGS=0 to turn it back on.
#pragma once

#include "comet/base/switches.hpp"

namespace comet::fuzz {

inline bool known_bugs_enabled() {
  static const bool on = switches::fuzz_known_bugs();
  return on;
}

}  // namespace comet::fuzz
