// Reading limits files (config.h: ParseLimitsFile, LoadLimitsFile). A limits file enforces a
// slice, so it is trusted only whole: the first line that does not parse rejects the file, and
// so do an empty file, a directory, a pipe or socket, one that cannot be read, one larger
// than kMaxLimitsFileSize, a last line without its newline, and a file written by vgpu (first line
// kLimitsFileHeader, common/limits_format.h) without its end marker. A rejected file takes the
// safe side of everything it could have set (RejectSource) and is reported in one message that
// names the file and the line; every byte of the file that reaches the message is escaped
// (common/printable.h).
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string_view>

#include "common/limits_format.h"
#include "common/printable.h"
#include "common/units.h"
#include "intercept/config/config.h"

namespace vgpu::intercept {
namespace {

using std::string_view;
using units_internal::Sub;

constexpr char kRejected[] = "limits file rejected: every allocation is refused";

// Length of the valid UTF-8 sequence at the start of `s` (ASCII or not), 0 if invalid: no
// overlong forms, no surrogates, nothing above U+10FFFF.
size_t Utf8Length(string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = byte(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return n;
}

// Checks the bytes of one line (without its newline): text, UTF-8, no control characters except
// tabs and a carriage return at the end (CRLF files). On failure writes why into `why`.
bool CheckLineBytes(string_view line, char* why, size_t size) {
  for (size_t i = 0; i < line.size();) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    bool control = (c < 0x20 && c != '\t' && !(c == '\r' && i + 1 == line.size())) || c == 0x7f;
    if (control) {
      std::snprintf(why, size, "control character 0x%02x in column %zu", c, i + 1);
      return false;
    }
    size_t n = Utf8Length(Sub(line, i));
    if (n == 0) {
      std::snprintf(why, size, "byte 0x%02x in column %zu is not UTF-8 text", c, i + 1);
      return false;
    }
    i += n;
  }
  return true;
}

bool IsAbsolutePathKey(string_view key) {
  return key == "region" || key == "CUDA_DEVICE_MEMORY_SHARED_CACHE" || key == "arbiter_dir" ||
         key == "VGPU_ARBITER_DIR";
}

// Rejects the file: the source takes the safe side, and `message` (which names the file and,
// where there is one, the line) is reported once with the consequence.
void Reject(const char* message, SourceSettings* out, ConfigErrors* errors) {
  RejectSource(out);
  // A long message is cut before the consequence, never the consequence itself.
  char head[sizeof(ConfigErrors::messages[0]) - sizeof(kRejected) - 2];
  EscapeForDisplay(message, head, sizeof(head));
  errors->Add("%s; %s", head, kRejected);
}

}  // namespace

void RejectSource(SourceSettings* s) {
  *s = SourceSettings{};
  const Setting bad{Setting::kInvalid, 0};
  s->memory_all = s->sm_all = s->guarantee_all = bad;
  for (int d = 0; d < kMaxDevices; ++d) s->memory[d] = s->sm[d] = s->guarantee[d] = bad;
  s->priority = s->weight = s->mode = s->time_slice = s->latency_slack = bad;
  s->copy_rate[0] = s->copy_rate[1] = s->copy_burst = s->copy_borrow = bad;
  s->memory_mode = bad;  // strict: nothing spills
  // The context overhead stays the environment's (else the default): with no memory nothing can
  // be allocated whatever it is, and an overhead of 0 keeps contexts possible.
  s->rejected = true;
}

void ParseLimitsFile(const char* text, size_t length, const char* name, SourceSettings* out,
                     ConfigErrors* errors) {
  char shown_name[160];
  EscapeForDisplay(name, shown_name, sizeof(shown_name));
  char message[sizeof(ConfigErrors::messages[0])];
  if (length == 0) {
    std::snprintf(message, sizeof(message), "%s: the limits file is empty", shown_name);
    Reject(message, out, errors);
    return;
  }
  string_view all(text, length);
  bool written_by_vgpu = false;
  bool ended = false;
  int line_no = 0;
  while (!all.empty()) {
    size_t nl = all.find('\n');
    string_view raw = Sub(all, 0, nl);
    all = nl == string_view::npos ? string_view() : Sub(all, nl + 1);
    ++line_no;
    char where[sizeof(shown_name) + 16];
    std::snprintf(where, sizeof(where), "%s:%d", shown_name, line_no);
    char why[96];
    if (!CheckLineBytes(raw, why, sizeof(why))) {
      std::snprintf(message, sizeof(message), "%s: %s", where, why);
      Reject(message, out, errors);
      return;
    }
    char excerpt[100];
    EscapeForDisplay(TrimBlanks(raw), excerpt, sizeof(excerpt), 60);
    // Checked before the line is used: a cut "memory=1GiB" reads as "memory=1".
    if (nl == string_view::npos) {
      std::snprintf(message, sizeof(message),
                    "%s: the last line \"%s\" has no newline: the file is cut short", where,
                    excerpt);
      Reject(message, out, errors);
      return;
    }
    string_view line = TrimBlanks(raw);
    if (line_no == 1 && Sub(line, 0, kLimitsFileHeaderPrefix.size()) == kLimitsFileHeaderPrefix) {
      written_by_vgpu = true;
    }
    if (ended) {
      std::snprintf(message, sizeof(message), "%s: \"%s\" after the end marker \"%.*s\"", where,
                    excerpt, static_cast<int>(kLimitsFileEnd.size()), kLimitsFileEnd.data());
      Reject(message, out, errors);
      return;
    }
    if (line == kLimitsFileEnd) {
      ended = true;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    size_t eq = line.find('=');
    if (eq == string_view::npos) {
      std::snprintf(message, sizeof(message), "%s: expected key=value, got \"%s\"", where, excerpt);
      Reject(message, out, errors);
      return;
    }
    string_view key = TrimBlanks(Sub(line, 0, eq));
    string_view value = TrimBlanks(Sub(line, eq + 1));
    ConfigErrors line_errors;
    if (IsAbsolutePathKey(key) && !value.empty() && value.front() != '/') {
      line_errors.Add("%s: %.*s must be an absolute path", where, static_cast<int>(key.size()),
                      key.data());
    } else if (!ApplyConfigKey(key, value, true, where, out, &line_errors)) {
      char shown_key[100];
      EscapeForDisplay(key, shown_key, sizeof(shown_key), 40);
      line_errors.Add("%s: unknown key \"%s\"", where, shown_key);
    }
    if (line_errors.count > 0) {
      Reject(line_errors.messages[0], out, errors);
      return;
    }
  }
  if (written_by_vgpu && !ended) {
    std::snprintf(message, sizeof(message),
                  "%s:%d: no end marker \"%.*s\" after the last line: the file written by vgpu "
                  "is cut short",
                  shown_name, line_no, static_cast<int>(kLimitsFileEnd.size()),
                  kLimitsFileEnd.data());
    Reject(message, out, errors);
  }
}

void LoadLimitsFile(const char* path, bool optional, SourceSettings* out, ConfigErrors* errors) {
  char shown[160];
  EscapeForDisplay(path, shown, sizeof(shown));
  char message[sizeof(ConfigErrors::messages[0])];
  // O_NONBLOCK: a FIFO in the file's place must not hang the process (it is refused below).
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (optional && errno == ENOENT) return;
    std::snprintf(message, sizeof(message), "%s: cannot open the limits file (%s)", shown,
                  std::strerror(errno));
    Reject(message, out, errors);
    return;
  }
  // No fstat(): glibc 2.33 gave it a new symbol version, and the library must load with 2.17.
  // A pipe or socket cannot seek; a directory fails the read with EISDIR.
  if (::lseek(fd, 0, SEEK_CUR) < 0 && errno == ESPIPE) {
    ::close(fd);
    std::snprintf(message, sizeof(message), "%s: the limits file is not a regular file", shown);
    Reject(message, out, errors);
    return;
  }
  static char buffer[kMaxLimitsFileSize + 1];  // init runs once, under the init lock
  size_t total = 0;
  int read_errno = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer + total, kMaxLimitsFileSize + 1 - total);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_errno = errno;
    if (n <= 0) break;
    total += static_cast<size_t>(n);
    if (total > kMaxLimitsFileSize) break;
  }
  ::close(fd);
  if (read_errno == EISDIR) {
    std::snprintf(message, sizeof(message), "%s: the limits file is a directory", shown);
    Reject(message, out, errors);
    return;
  }
  if (read_errno != 0) {
    std::snprintf(message, sizeof(message), "%s: cannot read the limits file (%s)", shown,
                  std::strerror(read_errno));
    Reject(message, out, errors);
    return;
  }
  if (total > kMaxLimitsFileSize) {
    std::snprintf(message, sizeof(message), "%s: the limits file is larger than %zu bytes", shown,
                  kMaxLimitsFileSize);
    Reject(message, out, errors);
    return;
  }
  ParseLimitsFile(buffer, total, path, out, errors);
}

}  // namespace vgpu::intercept
