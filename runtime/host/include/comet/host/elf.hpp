// The one ELF reader of the runtime: what the kernel and ld.so read from an
// executable's or a shared object's headers. Pure: a byte buffer in, typed
// values or an error out.
//
//   elf_interpreter()  the ELF header, the program headers and PT_INTERP
//                      only: enough for the first bytes of a file (the
//                      Landlock exec lock reads 64 KiB of each program,
//                      lifecycle/confine.cpp)
//   parse_elf()        all of that plus PT_DYNAMIC: DT_NEEDED, DT_SONAME,
//                      DT_RPATH, DT_RUNPATH (`rootfs --from-host`,
//                      pack/hostroot.hpp)
//
// The files are untrusted (a pack's rootfs, any host program): every
// offset, size and string is checked against the buffer, and nothing is
// read past it. 64-bit little-endian ET_EXEC/ET_DYN only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::runtime {

struct ElfInfo {
  uint16_t type = 0;     // ET_EXEC or ET_DYN
  uint16_t machine = 0;  // EM_*
  std::string interp;    // PT_INTERP; empty for a static binary
  std::string soname;    // DT_SONAME
  std::vector<std::string> needed;
  std::vector<std::string> rpath;    // DT_RPATH, split on ':', not expanded
  std::vector<std::string> runpath;  // DT_RUNPATH, split on ':', not expanded
};

// Parses the headers of an ELF executable or shared object. NAME is used in
// errors only ("NAME: not an ELF file"). 32-bit and big-endian files are
// refused; so is anything that is not ET_EXEC/ET_DYN, and any offset, size or
// string that falls outside BYTES.
Result<ElfInfo> parse_elf(std::span<const unsigned char> bytes, std::string_view name);

// The program interpreter (PT_INTERP) of the ELF file whose first bytes are
// BYTES, "" for a static binary; PT_DYNAMIC is not read. The same checks and
// errors as parse_elf() for the headers and PT_INTERP.
Result<std::string> elf_interpreter(std::span<const unsigned char> bytes, std::string_view name);

// The EM_* value of the machine this runtime is built for (EM_X86_64).
uint16_t host_elf_machine();

}  // namespace comet::runtime
