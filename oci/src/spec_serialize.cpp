// Spec -> config.json text. The fields are those of spec_fields.hpp, with
// the omitempty rules of the Go reference (specs-go/config.go) and members
// in the Go struct order, so the output reads like `runc spec`'s.
//
// Not round-tripped: the has_* presence flags (network, rdma, intelRdt)
// carry no data to write back, so they are omitted; a spec using them is
// refused anyway.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "comet/oci/spec.hpp"
#include "spec_fields.hpp"

namespace comet::oci {
namespace {

using ojson = nlohmann::ordered_json;

using fields::is_map;
using fields::is_optional;
using fields::is_vector;

// What `omitempty` omits: "", false, 0, an empty array or map, an absent
// optional. A struct is never empty.
template <typename T>
bool is_empty(const T& v) {
  if constexpr (std::is_same_v<T, std::string> || is_vector<T>::value || is_map<T>::value) {
    return v.empty();
  } else if constexpr (std::is_arithmetic_v<T>) {
    return v == T{};
  } else if constexpr (is_optional<T>::value) {
    return !v.has_value();
  } else {
    return false;
  }
}

template <typename S>
ojson write_struct(const S& s);

template <typename T>
ojson write_value(const T& v) {
  if constexpr (std::is_same_v<T, std::string> || std::is_arithmetic_v<T>) {
    return ojson(v);
  } else if constexpr (is_optional<T>::value) {
    return write_value(*v);
  } else if constexpr (is_map<T>::value) {
    ojson m = ojson::object();
    for (const auto& [k, item] : v) m[k] = write_value(item);
    return m;
  } else if constexpr (is_vector<T>::value) {
    ojson a = ojson::array();
    for (const auto& item : v) a.push_back(write_value(item));
    return a;
  } else {
    return write_struct(v);
  }
}

// The visitor of a field list that writes one object: the members in the
// order of their `out` position (the order listed when none is given).
template <typename S>
class Writer {
 public:
  explicit Writer(const S& in) : in_(in) {}

  template <typename T>
  void field(const char* key, T S::*m, fields::Emit emit, int out = -1) {
    const int pos = out >= 0 ? out : listed_;
    ++listed_;
    const T& v = in_.*m;
    if (emit == fields::kOmitEmpty && is_empty(v)) return;
    members_.push_back({pos, key, write_value(v)});
  }

  void flag_object(const char*, bool S::*) {}
  template <typename Elem>
  void flag_array(const char*, bool S::*) {}

  ojson object() && {
    std::stable_sort(members_.begin(), members_.end(),
                     [](const Member& a, const Member& b) { return a.pos < b.pos; });
    ojson j = ojson::object();
    for (Member& m : members_) j[m.key] = std::move(m.value);
    return j;
  }

 private:
  struct Member {
    int pos;
    const char* key;
    ojson value;
  };
  const S& in_;
  int listed_ = 0;
  std::vector<Member> members_;
};

template <typename S>
ojson write_struct(const S& s) {
  Writer<S> w(s);
  fields::list(w, fields::Of<S>{});
  return std::move(w).object();
}

}  // namespace

std::string to_json(const Spec& spec, int indent) {
  try {
    return write_struct(spec).dump(indent < 0 ? -1 : indent, ' ', false,
                                   nlohmann::ordered_json::error_handler_t::replace);
  } catch (...) {
    return std::string();  // only std::bad_alloc can get here
  }
}

}  // namespace comet::oci
