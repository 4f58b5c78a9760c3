// Tests that preload libvgpu.so into other programs, in sanitizer builds (cmake/sanitizers.cmake).
//
// AddressSanitizer's runtime must be the first library of every process, and a library in
// LD_PRELOAD comes before a program's own dependencies: an instrumented libvgpu.so preloaded alone
// puts the runtime second and the program aborts. These helpers put the runtime first. Targets get
// VGPU_SANITIZER_PRELOAD from vgpu_test_preloads() in an asan build only; in a tsan or a normal
// build they change nothing.
#pragma once

#include <string>

namespace vgpu::testing {

#ifdef VGPU_SANITIZER_PRELOAD
inline constexpr const char* kSanitizerRuntime = VGPU_SANITIZER_PRELOAD;
#else
inline constexpr const char* kSanitizerRuntime = "";
#endif

// The LD_PRELOAD value that loads `libs` (space-separated): the sanitizer runtime, then `libs`.
inline std::string PreloadList(const std::string& libs) {
  std::string runtime = kSanitizerRuntime;
  if (runtime.empty()) return libs;
  return libs.empty() ? runtime : runtime + " " + libs;
}

// A prefix for a shell command line that starts a vgpu program (which preloads libvgpu.so into
// its children and keeps a sanitizer runtime of LD_PRELOAD ahead of it): "LD_PRELOAD=<runtime> "
// in an asan build, "" otherwise. Only the vgpu program gets the runtime: system tools started
// by the same shell stay as they are (some, such as procps, hang with the ASan runtime preloaded).
inline std::string SanitizerCommandPrefix() {
  std::string runtime = kSanitizerRuntime;
  return runtime.empty() ? "" : "LD_PRELOAD='" + runtime + "' ";
}

}  // namespace vgpu::testing
