// Compute-sharing settings of libvgpu.so: the keys, their parsers and how the limits files and
// the environment combine (the file wins; the environment may only lower). Part of config.h's
// pipeline; split out to keep each file to one job.
//
//   limits file            environment                          meaning
//   cores[.<i>]            CUDA_DEVICE_SM_LIMIT[_<i>]           max share, percent (config.cc)
//   guarantee[.<i>]        VGPU_CORES_GUARANTEE[_<i>]           guaranteed share, percent
//   weight                 VGPU_CORES_WEIGHT                    1..10000, spare time among equals
//   mode                   VGPU_CORES_MODE                      capped | elastic
//   priority               CUDA_TASK_PRIORITY, VGPU_PRIORITY    realtime|high|normal|low|idle
//                                                               (HAMi numbers: 0 high, 1 normal)
//   time_slice             VGPU_TIME_SLICE                      turn length, 0.5ms..1s (5ms)
//   arbiter_dir            VGPU_ARBITER_DIR                     directory of the per-GPU arbiters
// (The environment names are accepted as file keys too.)
//
// Combination: guarantee and weight min(file, env); priority the less important level; mode,
// time slice and arbiter directory the file's when it sets them, else the environment's. Without
// an explicit mode a slice is elastic when it has a guarantee and capped otherwise; a capped
// slice's guarantee is its max (none when its max is 100). Bad values are reported and take the
// safe side: no guarantee, weight 1, the lowest priority named, the default time slice.
//
// Default arbiter directory: $VGPU_STATE_DIR/arbiter, else $XDG_RUNTIME_DIR/vgpu/arbiter, else
// /run/vgpu/arbiter when /run is writable, else /tmp/vgpu-<uid>/arbiter — the same state
// directory `vgpu run` and `vgpu top` use. Relative directories from the environment are made
// absolute against the working directory when the configuration is read.
#pragma once

#include <string_view>

#include "intercept/config/config.h"

namespace vgpu::intercept {

// Applies one compute key to a source; false if `key` is not a compute key. `file_keys` enables
// the limits-file spellings.
bool ApplyComputeKey(std::string_view key, std::string_view value, bool file_keys,
                     const char* where, SourceSettings* s, ConfigErrors* errors);

// Merges the compute settings of a second limits file into `into` (the more restrictive value).
void MergeComputeSources(const SourceSettings& other, SourceSettings* into);

// Fills the compute fields of `config` from the two sources. REQUIRES: config->sm_limit[]
// already combined. Sets config->compute_limited when any compute setting applies.
void CombineCompute(const SourceSettings& file, const SourceSettings& env, Config* config);

// The default arbiter directory for the environment `envp` (rules above).
void DefaultArbiterDir(char* const* envp, uid_t uid, char* out, size_t size);

}  // namespace vgpu::intercept
