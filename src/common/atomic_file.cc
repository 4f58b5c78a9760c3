#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace vgpu {
namespace {

Status Fail(const std::string& what, const std::string& path, int error) {
  return Status::IoError(what + " " + path + ": " + std::strerror(error));
}

// The directory and the name of `path` ("a/b" -> "a", "b"; "b" -> ".", "b"; "/b" -> "/", "b").
void Split(const std::string& path, std::string* dir, std::string* name) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    *dir = ".";
    *name = path;
    return;
  }
  *dir = slash == 0 ? "/" : path.substr(0, slash);
  *name = path.substr(slash + 1);
}

// Writes all of `text` to `fd`; false with errno set on failure.
bool WriteAll(int fd, std::string_view text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode) {
  static std::atomic<unsigned> counter{0};
  std::string dir, base;
  Split(path, &dir, &base);
  const std::string tmp = dir + "/." + base + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Fail("cannot create", tmp, errno);
  const char* step = nullptr;
  if (!WriteAll(fd, text)) {
    step = "cannot write";
  } else if (::fsync(fd) != 0) {
    step = "cannot sync";
  } else if (::fchmod(fd, mode) != 0) {
    step = "cannot set the mode of";
  }
  if (step != nullptr) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Fail(step, tmp, e);
  }
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Fail("cannot close", tmp, e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Fail("cannot rename " + tmp + " to", path, e);
  }
  // The rename is durable once the directory is.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Fail("cannot open the directory", dir, errno);
  int rc = ::fsync(dfd);
  int e = errno;
  ::close(dfd);
  // Some file systems cannot sync a directory (EINVAL); the rename itself has happened.
  if (rc != 0 && e != EINVAL) return Fail("cannot sync the directory", dir, e);
  return Status::Ok();
}

}  // namespace vgpu
