// Tests that preload libvgpu.so into other programs, in sanitizer builds (cmake/sanitizers.cmake).
//
// Every program of a sanitizer build is instrumented and needs the sanitizer runtime as the first
// library of its process; a library in LD_PRELOAD comes before an executable's own dependencies,
// so an instrumented libvgpu.so preloaded alone puts the runtime second and the program aborts.
// These helpers put the runtime first. Targets get VGPU_SANITIZER_RUNTIME from
// vgpu_test_preloads() in sanitizer builds only; in a normal build they change nothing.
#pragma once

#include <string>

namespace vgpu::testing {

#ifdef VGPU_SANITIZER_RUNTIME
inline constexpr const char* kSanitizerRuntime = VGPU_SANITIZER_RUNTIME;
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
// in a sanitizer build, "" otherwise. Only the vgpu program gets the runtime: system tools started
// by the same shell stay as they are (some, such as procps, hang with the ASan runtime preloaded).
inline std::string SanitizerCommandPrefix() {
  std::string runtime = kSanitizerRuntime;
  return runtime.empty() ? "" : "LD_PRELOAD='" + runtime + "' ";
}

}  // namespace vgpu::testing
