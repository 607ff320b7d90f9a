// oci_config: config.json parsing, validation and serialisation.
//
// Invariants (beyond "no crash, no sanitizer report"):
//   1. parse_spec never throws (it returns Result).
//   2. When the input parses, validate_spec returns (either way).
//   3. Round trip: j1 = to_json(parse(x)) is non-empty valid JSON that
//      parse_spec accepts again, and to_json of that second parse equals j1
//      (compared as nlohmann dumps, so key order and spacing do not matter).
//   4. Validation depends on the model only: validate_spec gives the same
//      verdict (and message) on the re-parsed spec.
//   5. Compact and indented serialisations are the same JSON.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "comet/oci/spec.hpp"
#include "fuzz_check.hpp"

using comet::oci::parse_spec;
using comet::oci::to_json;
using comet::oci::validate_spec;

namespace {

std::string canonical(const std::string& text) {
  // parse throws on invalid JSON; the caller checks accept() first.
  return nlohmann::json::parse(text).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = parse_spec(comet::fuzz::as_view(data, size));
  if (!r.ok()) {
    FUZZ_CHECK(!r.error().message().empty(), "a parse error must say something");
    return 0;
  }
  const auto v1 = validate_spec(*r);

  const std::string j1 = to_json(*r);
  FUZZ_CHECK(!j1.empty(), "to_json returned nothing for a parsed spec");
  FUZZ_CHECK(nlohmann::json::accept(j1), "to_json produced invalid JSON:\n" + j1);

  auto r2 = parse_spec(j1);
  FUZZ_CHECK(r2.ok(), "to_json output does not re-parse: " +
                          (r2.ok() ? std::string() : r2.error().what()) + "\n" + j1);
  const std::string j2 = to_json(*r2);
  FUZZ_CHECK(nlohmann::json::accept(j2), "second to_json produced invalid JSON:\n" + j2);
  const std::string c1 = canonical(j1), c2 = canonical(j2);
  FUZZ_CHECK(c1 == c2, "round trip changed the spec:\nfirst:  " + c1 + "\nsecond: " + c2);

  const auto v2 = validate_spec(*r2);
  FUZZ_CHECK(v1.ok() == v2.ok(), "validate_spec verdict changed across the round trip: " +
                                     std::string(v1.ok() ? "ok" : v1.error().what()) + " vs " +
                                     std::string(v2.ok() ? "ok" : v2.error().what()));
  if (!v1.ok()) {
    FUZZ_CHECK(v1.error().message() == v2.error().message(),
               "validate_spec message changed across the round trip: " + v1.error().message() +
                   " vs " + v2.error().message());
  }

  const std::string compact = to_json(*r, -1);
  FUZZ_CHECK(nlohmann::json::accept(compact) && canonical(compact) == c1,
             "compact and indented to_json disagree:\n" + compact);
  return 0;
}
