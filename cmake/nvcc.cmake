# The CUDA toolkit's nvcc, for the programs built against NVIDIA's CUDA runtime (tests/simgpu,
# bench/intercept): VGPU_NVCC when given, else found on $CUDA_HOME, $CUDA_PATH, PATH or
# /usr/local/cuda. Empty (VGPU_NVCC-NOTFOUND) without a toolkit: those programs are not built and
# their tests and benchmark rows say so.
if(NOT DEFINED VGPU_NVCC)
  find_program(VGPU_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin
               PATHS /usr/local/cuda NO_CACHE)
endif()
