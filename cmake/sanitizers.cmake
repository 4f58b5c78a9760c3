# Sanitizer builds (presets asan and tsan, scripts/test-sanitizers): which sanitizer the flags ask
# for, and the runtime that tests must preload ahead of an instrumented libvgpu.so.
#
# AddressSanitizer insists on being the first library of a process. A library in LD_PRELOAD comes
# before a program's own dependencies, so an instrumented libvgpu.so preloaded alone puts libasan
# second and the program aborts ("ASan runtime does not come first"), whether the program is
# instrumented or not. Tests that preload the library into other programs therefore preload
# libasan ahead of it. ThreadSanitizer has no such rule: libtsan loads as libvgpu.so's dependency,
# and preloading it into a program that is not instrumented (sh, bash) crashes that program, so
# tsan builds preload nothing more. Normal builds leave all of this empty.
#
# The asan preset builds with clang, which compiles the instrumented tree in about half of GCC's
# time, and leaves out clang's -fsanitize=function: vgpu declares the few CUDA and NVML types it
# calls through dlsym'd pointers itself (nvml.h is not installed; libvgpu.so does not include
# cuda.h), ABI-identical to the drivers' but with other C++ names, and that check reports every
# such call into the simulated GPU, whose C++ definitions carry the toolkit's names.
#
#   VGPU_SANITIZER          "address", "thread" or empty
#   VGPU_SANITIZER_PRELOAD  absolute path of the address sanitizer's shared runtime (GCC's
#                           libasan.so.N, clang's libclang_rt.asan-<arch>.so) in an address
#                           build, otherwise empty
#   vgpu_test_preloads(<target>...)  for tests that preload libraries into other programs:
#       tests/sanitizer_env.h on the include path, and VGPU_SANITIZER_PRELOAD="<path>" as a
#       compile definition where there is one
set(VGPU_SANITIZER "")
set(VGPU_SANITIZER_PRELOAD "")
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*address")
  set(VGPU_SANITIZER address)
elseif(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*thread")
  set(VGPU_SANITIZER thread)
endif()
if(VGPU_SANITIZER STREQUAL "address")
  # GCC's runtime is libasan.so.N; clang's, with -shared-libasan (the asan preset), is
  # libclang_rt.asan-<arch>.so, which lives outside the loader's path: programs get its folder
  # as their run path.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(runtime_name libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
    if(NOT CMAKE_EXE_LINKER_FLAGS MATCHES "-shared-libasan")
      message(FATAL_ERROR "address sanitizer build with clang: link with -shared-libasan (as the "
        "asan preset does), so that every process shares the one runtime tests preload")
    endif()
  else()
    set(runtime_name libasan.so)
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${runtime_name}
    OUTPUT_VARIABLE runtime OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  # The compiler prints the bare name back when it has no such file.
  if(NOT rc EQUAL 0 OR NOT IS_ABSOLUTE "${runtime}" OR NOT EXISTS "${runtime}")
    message(FATAL_ERROR "address sanitizer build: ${CMAKE_CXX_COMPILER} "
      "-print-file-name=${runtime_name} gave \"${runtime}\", not a file (is the compiler's "
      "sanitizer runtime installed? scripts/bootstrap installs it)")
  endif()
  file(REAL_PATH "${runtime}" VGPU_SANITIZER_PRELOAD)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    get_filename_component(runtime_dir "${VGPU_SANITIZER_PRELOAD}" DIRECTORY)
    add_link_options("LINKER:-rpath,${runtime_dir}")
  endif()
endif()
if(VGPU_SANITIZER)
  message(STATUS "${VGPU_SANITIZER} sanitizer build; tests preload \"${VGPU_SANITIZER_PRELOAD}\"")
endif()

function(vgpu_test_preloads)
  foreach(target ${ARGN})
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    if(VGPU_SANITIZER_PRELOAD)
      target_compile_definitions(${target} PRIVATE
        VGPU_SANITIZER_PRELOAD="${VGPU_SANITIZER_PRELOAD}")
    endif()
  endforeach()
endfunction()

# Why tests that talk gRPC are disabled in tsan builds (vgpu_add_test TSAN_SKIP): Debian's gRPC,
# protobuf and abseil are not built with ThreadSanitizer, so it cannot see their synchronisation
# and reports races inside every gRPC call (in gRPC, protobuf and the gRPC headers' inline code).
# The node daemon's own threads are covered by its unit tests, which do run under TSan.
set(VGPU_TSAN_SKIP_GRPC
  "talks gRPC, and Debian's gRPC, protobuf and abseil are not built with ThreadSanitizer")

# The pure computing rooms (placement engine, trace simulator, MIG geometry, analyses) run
# millions of steps in the property and replay tests. In a sanitizer build (Debug, -O0) those
# tests took minutes (ReplayProperty.NoOverAllocationAndTheQueueInvariantHold: 172 s of CPU);
# -O1, which AddressSanitizer's documentation recommends for speed, brings them to seconds (15 s)
# and keeps every check. Called from the top-level CMakeLists.txt once the rooms are defined,
# for them and for the test programs that vgpu_add_test marks OPTIMIZED.
set(VGPU_SANITIZER_FAST_ROOMS vgpu_sched vgpu_sim vgpu_mig vgpu_analyze vgpu_topo)
function(vgpu_sanitizer_fast)
  if(NOT VGPU_SANITIZER)
    return()
  endif()
  foreach(target ${ARGN})
    target_compile_options(${target} PRIVATE -O1)
  endforeach()
endfunction()
