# Sanitizer builds (presets asan and tsan, scripts/test-sanitizers): which sanitizer the flags ask for and
# where its runtime is.
#
# An instrumented libvgpu.so or simulated driver can be loaded into a program that is not
# instrumented itself (a shell, a test worker) only when the sanitizer runtime is the first
# library of the process, so the tests that preload the library into other programs preload the
# runtime ahead of it (VGPU_SANITIZER_RUNTIME). Normal builds leave VGPU_SANITIZER empty and
# nothing here changes them.
#
#   VGPU_SANITIZER          "address", "thread" or empty
#   VGPU_SANITIZER_RUNTIME  absolute path of the runtime (libasan.so.N or libtsan.so.N), or empty
#   vgpu_test_preloads(<target>...)  for tests that preload libraries into other programs:
#       tests/sanitizer_env.h on the include path, and in sanitizer builds the compile
#       definitions VGPU_SANITIZER_RUNTIME="<path>" and VGPU_SANITIZER_NAME="<name>"
set(VGPU_SANITIZER "")
set(VGPU_SANITIZER_RUNTIME "")
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*address")
  set(VGPU_SANITIZER address)
  set(runtime_name libasan.so)
elseif(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*thread")
  set(VGPU_SANITIZER thread)
  set(runtime_name libtsan.so)
endif()
if(VGPU_SANITIZER)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${runtime_name}
    OUTPUT_VARIABLE runtime OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  # The compiler prints the bare name back when it has no such file.
  if(NOT rc EQUAL 0 OR NOT IS_ABSOLUTE "${runtime}" OR NOT EXISTS "${runtime}")
    message(FATAL_ERROR "${VGPU_SANITIZER} sanitizer build: ${CMAKE_CXX_COMPILER} "
      "-print-file-name=${runtime_name} gave \"${runtime}\", not a file (is the runtime installed?)")
  endif()
  file(REAL_PATH "${runtime}" VGPU_SANITIZER_RUNTIME)
  message(STATUS "${VGPU_SANITIZER} sanitizer build, runtime ${VGPU_SANITIZER_RUNTIME}")
endif()

function(vgpu_test_preloads)
  foreach(target ${ARGN})
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    if(VGPU_SANITIZER)
      target_compile_definitions(${target} PRIVATE
        VGPU_SANITIZER_RUNTIME="${VGPU_SANITIZER_RUNTIME}" VGPU_SANITIZER_NAME="${VGPU_SANITIZER}")
    endif()
  endforeach()
endfunction()
