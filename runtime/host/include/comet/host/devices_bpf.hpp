// cgroup v2 device filter: the OCI linux.resources.devices rules compiled to
// a BPF_PROG_TYPE_CGROUP_DEVICE program (what runc's devicefilter.go and
// crun's ebpf.c do), since cgroup2 has no devices.allow/deny files.
//
// Semantics (those of the v1 devices cgroup as runc applies them):
//   - Rules are evaluated last-match-wins: the program tests them in reverse
//     order and the first that matches decides. No match: deny.
//   - type "a" or "" matches both char and block devices; "c"/"b" one kind;
//     any other type matches nothing for an allow rule and everything for a
//     deny rule (fail closed).
//   - A missing (or negative, runc's -1) major/minor is a wildcard. A value
//     above INT32_MAX can name no device (Linux majors are 12 bits, minors
//     20): the rule matches nothing and is dropped.
//   - access "rwm" subset: an allow rule matches when every requested access
//     bit is in the rule's access; a deny rule matches when any requested bit
//     is (as the v1 kernel matches deny exceptions, so "deny c 1:3 w" after
//     "allow c 1:3 rwm" refuses an "rw" open). Empty access means "rwm";
//     characters other than r, w, m are ignored.
//   - Rules after (in test order) a rule matching everything are unreachable
//     and not emitted (the verifier rejects dead code).
// The runtime appends runc's default device list to the config's rules
// before calling device_filter_program.
//
// Wiring, for a container cgroup directory D on the cgroup2 hierarchy:
//   TRY(auto prog, load_device_filter(device_filter_program(rules)));
//   UniqueFd dir(open(D, O_DIRECTORY | O_RDONLY | O_CLOEXEC));
//   TRYV(attach_device_filter(dir.get(), prog.get()));
// before the container process can open devices (i.e. before the init is
// released to exec). The program stays attached after both fds are closed,
// until detached or the cgroup is removed. `update` calls the same three
// steps again: the new program is attached first, then the programs an
// earlier attach_device_filter put there are detached, so there is no window
// without a filter. Needs CAP_SYS_ADMIN (BPF_PROG_LOAD of this type).
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

// Name given to our programs (bpf_prog_info.name) so a later attach only
// detaches filters this runtime attached, never someone else's.
inline constexpr const char kDeviceFilterName[] = "comet_devices";

// Pure: the program for rules (see the semantics above). Empty only when
// out of memory (load_device_filter then fails: fail closed).
std::vector<struct bpf_insn> device_filter_program(const std::vector<oci::DeviceCgroup>& rules);

// bpf(BPF_PROG_LOAD, BPF_PROG_TYPE_CGROUP_DEVICE, license "Apache"). On
// failure the error carries the verifier log.
Result<UniqueFd> load_device_filter(const std::vector<struct bpf_insn>& program);

// bpf(BPF_PROG_ATTACH, BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI) on the cgroup2
// directory fd, then detaches every program named kDeviceFilterName that was
// attached there before (programs of others are left alone: with ALLOW_MULTI
// all attached programs must allow an access, so they can only restrict).
// If the detach fails the new program stays attached (fail closed) and the
// error is returned.
Status attach_device_filter(int cgroup_dir_fd, int prog_fd);

// Ids of the CGROUP_DEVICE programs attached directly to the cgroup.
Result<std::vector<uint32_t>> attached_device_filters(int cgroup_dir_fd);

}  // namespace comet::runtime
