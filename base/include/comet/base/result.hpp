// One error type for the whole project: an errno (0 when the failure is not a
// syscall's) plus a human message that gains context as it rises.
//
//   Result<int> r = ...;            // holds an int or an Error
//   TRY(auto fd, open_thing(path)); // returns the error from the caller
//   TRYV(do_thing());               // for Result<void>
//   return Error::sys(errno, "mount /proc on " + target);
//
// Messages are lowercase and name the path or value; Error::sys appends
// ": EPERM (Operation not permitted)" style text when rendered.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace comet {

class Error {
 public:
  Error() = default;
  Error(int err, std::string msg) : errno_(err), msg_(std::move(msg)) {}

  static Error msg(std::string m) { return Error(0, std::move(m)); }
  static Error sys(int err, std::string m) { return Error(err, std::move(m)); }

  int err() const { return errno_; }
  const std::string& message() const { return msg_; }

  // "context: message"
  Error& wrap(const std::string& context) {
    msg_ = context + ": " + msg_;
    return *this;
  }
  Error wrapped(const std::string& context) const& {
    Error e = *this;
    e.wrap(context);
    return e;
  }

  // The full text: message plus the errno name and strerror when set.
  std::string what() const;

 private:
  int errno_ = 0;
  std::string msg_;
};

// Name of an errno value ("EPERM"), or "E<n>" for a value with no name. The
// project's one errno-name function (error text, violation events, probes).
std::string errno_name(int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::in_place_index<0>, std::move(v)) {}      // NOLINT: implicit on purpose
  Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { return err_; }
  Error&& error() && { return std::move(err_); }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status ok() {
  return {};
}

}  // namespace comet

#define COMET_CONCAT_(a, b) a##b
#define COMET_CONCAT(a, b) COMET_CONCAT_(a, b)

// TRY(decl, expr): evaluate expr (a Result<T>); on error return it; else bind
// the value to decl.
#define TRY(decl, expr) TRY_IMPL_(COMET_CONCAT(try_res_, __LINE__), decl, expr)
#define TRY_IMPL_(tmp, decl, expr)              \
  auto tmp = (expr);                            \
  if (!tmp.ok()) return std::move(tmp).error(); \
  decl = std::move(tmp).value()

// TRYV(expr): for Result<void> (or any Result whose value is not needed).
#define TRYV(expr)                                      \
  do {                                                  \
    auto try_v_ = (expr);                               \
    if (!try_v_.ok()) return std::move(try_v_).error(); \
  } while (0)

// TRYC(expr, context): as TRYV, wrapping the error with a context string.
#define TRYC(expr, context)                                           \
  do {                                                                \
    auto try_v_ = (expr);                                             \
    if (!try_v_.ok()) return std::move(try_v_).error().wrap(context); \
  } while (0)
