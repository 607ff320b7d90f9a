// The ELF header of a little-endian x86_64 file with its program headers
// right after it, for tests that craft ELF images byte by byte.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace comet::test {

// TYPE (ET_EXEC, ET_DYN) with PHNUM program headers at offset 64; the entry
// point is the caller's.
inline Elf64_Ehdr x86_64_ehdr(std::uint16_t type, std::uint16_t phnum) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = type;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = phnum;
  return eh;
}

}  // namespace comet::test
