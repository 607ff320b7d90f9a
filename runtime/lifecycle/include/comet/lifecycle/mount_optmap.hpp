// The Linux mount flag options, as util-linux's libmount names them
// (mnt_get_builtin_optmap(MNT_LINUX_MAP), util-linux 2.38, without the
// "name=" entries, which are not flags). A table of our own rather than
// libmount's: libmount with its libblkid, libselinux and libpcre2 is four
// shared objects mapped and relocated at every start of comet-runtime (and
// libselinux's constructor probes /sys/fs/selinux), for a constant table.
// tests/mount_optmap_test.cpp compares it with libmount's, entry by entry.
#pragma once

#include <sys/mount.h>

#include <cstddef>
#include <span>

namespace comet::runtime {

struct MountOptName {
  const char* name;
  unsigned long flag;  // MS_*: MS_REC is part of the r* propagation forms
  bool invert;         // clears the flag ("rw", "exec", "suid"...)
};

inline constexpr MountOptName kLinuxMountOpts[] = {
    {"ro", MS_RDONLY, false},
    {"rw", MS_RDONLY, true},
    {"exec", MS_NOEXEC, true},
    {"noexec", MS_NOEXEC, false},
    {"suid", MS_NOSUID, true},
    {"nosuid", MS_NOSUID, false},
    {"dev", MS_NODEV, true},
    {"nodev", MS_NODEV, false},
    {"sync", MS_SYNCHRONOUS, false},
    {"async", MS_SYNCHRONOUS, true},
    {"dirsync", MS_DIRSYNC, false},
    {"remount", MS_REMOUNT, false},
    {"bind", MS_BIND, false},
    {"rbind", MS_BIND | MS_REC, false},
    {"silent", MS_SILENT, false},
    {"loud", MS_SILENT, true},
    {"mand", MS_MANDLOCK, false},
    {"nomand", MS_MANDLOCK, true},
    {"atime", MS_NOATIME, true},
    {"noatime", MS_NOATIME, false},
    {"iversion", MS_I_VERSION, false},
    {"noiversion", MS_I_VERSION, true},
    {"diratime", MS_NODIRATIME, true},
    {"nodiratime", MS_NODIRATIME, false},
    {"relatime", MS_RELATIME, false},
    {"norelatime", MS_RELATIME, true},
    {"strictatime", MS_STRICTATIME, false},
    {"nostrictatime", MS_STRICTATIME, true},
    {"lazytime", MS_LAZYTIME, false},
    {"nolazytime", MS_LAZYTIME, true},
    {"unbindable", MS_UNBINDABLE, false},
    {"runbindable", MS_UNBINDABLE | MS_REC, false},
    {"private", MS_PRIVATE, false},
    {"rprivate", MS_PRIVATE | MS_REC, false},
    {"slave", MS_SLAVE, false},
    {"rslave", MS_SLAVE | MS_REC, false},
    {"shared", MS_SHARED, false},
    {"rshared", MS_SHARED | MS_REC, false},
    {"symfollow", MS_NOSYMFOLLOW, true},
    {"nosymfollow", MS_NOSYMFOLLOW, false},
};

inline constexpr std::span<const MountOptName> linux_mount_opts() {
  return kLinuxMountOpts;
}

}  // namespace comet::runtime
