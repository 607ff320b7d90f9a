// runtime/reporting: the notified task's memory and status
// (notified_task.hpp), read from this process itself.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "comet/reporting/notified_task.hpp"

namespace comet::runtime {
namespace {

std::uint64_t addr_of(const void* p) {
  return reinterpret_cast<std::uint64_t>(p);
}

TEST(NotifiedTask, ReadsAStringUpToItsNul) {
  const char s[] = "/some/path";
  char out[64];
  std::size_t len = 99;
  EXPECT_EQ(task::read_string(::getpid(), addr_of(s), out, sizeof out, &len), 0);
  EXPECT_EQ(std::string(out, len), "/some/path");
}

TEST(NotifiedTask, AStringWithoutNulInTheCapIsTooLong) {
  const char s[] = "abcdefgh";
  char out[4];
  std::size_t len = 0;
  EXPECT_EQ(task::read_string(::getpid(), addr_of(s), out, sizeof out, &len), ENAMETOOLONG);
  EXPECT_EQ(len, 4u);
  EXPECT_EQ(std::string(out, len), "abcd");
}

TEST(NotifiedTask, AStringUpToAnUnmappedPageIsAFaultWithWhatWasRead) {
  const long page = ::sysconf(_SC_PAGESIZE);
  ASSERT_EQ(page, 4096);
  auto* m = static_cast<char*>(
      ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(::munmap(m + page, page), 0);
  std::memcpy(m + page - 3, "xyz", 3);  // no NUL before the hole
  char out[64];
  std::size_t len = 0;
  EXPECT_EQ(task::read_string(::getpid(), addr_of(m + page - 3), out, sizeof out, &len), EFAULT);
  EXPECT_EQ(std::string(out, len), "xyz");
  // A NUL before the page boundary ends the string there: no fault.
  std::memcpy(m + page - 3, "x\0z", 3);
  EXPECT_EQ(task::read_string(::getpid(), addr_of(m + page - 3), out, sizeof out, &len), 0);
  EXPECT_EQ(std::string(out, len), "x");
  EXPECT_EQ(task::read_string(::getpid(), 0, out, sizeof out, &len), EFAULT);
  ::munmap(m, page);
}

TEST(NotifiedTask, ReadAllNeedsEveryByte) {
  const char s[] = "12345678";
  char out[8];
  EXPECT_TRUE(task::read_all(::getpid(), addr_of(s), out, 8));
  EXPECT_EQ(std::memcmp(out, s, 8), 0);
  EXPECT_TRUE(task::read_all(::getpid(), 0, out, 0));
  EXPECT_FALSE(task::read_all(::getpid(), 0, out, 8));
}

TEST(NotifiedTask, StatusFieldsByName) {
  task::TaskStatus st;
  ASSERT_TRUE(st.read(::getpid()));
  auto uid = st.numbers("Uid");
  ASSERT_TRUE(uid.has_value());
  ASSERT_EQ(uid->size(), 4u);
  EXPECT_EQ((*uid)[1], static_cast<long>(::geteuid()));
  auto um = st.numbers("Umask", 8);
  ASSERT_TRUE(um.has_value());
  ASSERT_EQ(um->size(), 1u);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ((*um)[0], static_cast<long>(mask));
  auto nspid = st.numbers("NSpid");
  ASSERT_TRUE(nspid.has_value());
  EXPECT_FALSE(nspid->empty());
  EXPECT_FALSE(st.numbers("NoSuchField").has_value());
  // "Uid" is not "Uidx": a key names a whole field.
  EXPECT_FALSE(st.numbers("Ui").has_value());
}

TEST(NotifiedTask, StatusOfNoProcess) {
  task::TaskStatus st;
  EXPECT_FALSE(st.read(-1));
  EXPECT_FALSE(st.numbers("Uid").has_value());
}

TEST(NotifiedTask, TakesAnFdOfATask) {
  UniqueFd pidfd = task::open_pidfd(::getpid());
  ASSERT_TRUE(pidfd.valid());
  UniqueFd copy = task::take_fd(pidfd.get(), 1);
  // pidfd_getfd on oneself needs ptrace access to oneself: allowed.
  EXPECT_TRUE(copy.valid());
  EXPECT_FALSE(task::take_fd(pidfd.get(), 1 << 20).valid());
}

}  // namespace
}  // namespace comet::runtime
