// Private to comet_reporting: what fswatch.cpp (the pinned program and its
// maps) shares with fswatch_linger.cpp (the detacher), and the image that
// runtime/embed.cmake generates.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"

namespace comet::runtime {
namespace detail {
// The BPF object (bpf/fswatch.bpf.c), embedded; defined in the generated
// fswatch_image.cpp.
std::span<const unsigned char> fswatch_bpf_image() noexcept;
}  // namespace detail

namespace fsw {
// This build's program: a different object is a different pin directory,
// with its own detacher (two versions of the runtime may run side by side).
const std::string& program_hash();
// Where this program and its maps are pinned in bpffs.
std::string pin_dir();
// flock'ed for every change of the pins and of the watched map's keys.
Result<UniqueFd> lock();
// The watched cgroups and their slots; entries of cgroups that are gone
// are dropped on the way.
std::map<std::uint64_t, std::uint32_t> live_entries(int slot_of);
// Nothing is watched any more: mark the program idle and start the
// detacher (fswatch_linger_main), unless one is waiting already.
void detach_when_idle();
}  // namespace fsw

}  // namespace comet::runtime
