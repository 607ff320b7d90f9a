// The task a seccomp notification stopped (seccomp_unotify(2)), as the
// reporter and its rules (unix_rule.cpp, create_rule.cpp, the exec and
// connect reports of reporter_notify.cpp) look at it while it waits: is
// the notification still pending (the task alive, its pid not reused),
// what its memory holds at an address the call names, its fds
// (pidfd_getfd) and its /proc/PID/status.
//
// The memory is copied once and only the copy is judged: another thread of
// the task (or a shared mapping) can change it after the look. Every fd and
// every status read is checked with notif_valid() afterwards by the rule
// that needs it to be the task's own (a pid can be reused once the task is
// gone).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/fd.hpp"

namespace comet::runtime::task {

// SECCOMP_IOCTL_NOTIF_ID_VALID: the notification `id` still waits for its
// answer (its task has not died).
bool notif_valid(int listener, std::uint64_t id) noexcept;

// process_vm_readv(2) of n bytes at addr: what it returns (a short count
// at an unmapped page, -1 with errno).
ssize_t read_some(int pid, std::uint64_t addr, void* out, std::size_t n) noexcept;
// All n bytes (true for n == 0).
bool read_all(int pid, std::uint64_t addr, void* out, std::size_t n) noexcept;

// A NUL-terminated string at addr into out[0..cap), read page by page
// (process_vm_readv stops at the first unmapped page). 0 with *len the
// length before the NUL; EFAULT (addr 0, or a fault before the NUL) with
// *len what was read before it; ENAMETOOLONG with *len = cap when the cap
// bytes hold no NUL. out is not NUL-terminated past *len.
int read_string(int pid, std::uint64_t addr, char* out, std::size_t cap, std::size_t* len) noexcept;

// pidfd_open(pid) and pidfd_getfd(pidfd, fd): a copy of the task's fd
// (invalid with errno set).
UniqueFd open_pidfd(int pid) noexcept;
UniqueFd take_fd(int pidfd, int fd) noexcept;

// /proc/PID/status, read once; fields by name.
class TaskStatus {
 public:
  // At most max bytes of it (false when it cannot be read, or is empty).
  bool read(int pid, std::size_t max = static_cast<std::size_t>(-1));
  // The numbers on the line "key:" (in `base`), up to the first token that
  // is not one; nullopt when no line starts with "key:".
  std::optional<std::vector<long>> numbers(std::string_view key, int base = 10) const;

 private:
  std::string text_;
};

}  // namespace comet::runtime::task
