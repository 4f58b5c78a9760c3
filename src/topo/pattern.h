// A job's communication pattern, stated by the pod annotation `vgpu.io/comm-pattern`:
//   allreduce                      (the default) data-parallel all-reduce over every GPU
//   pipeline                       one stage per GPU, stage r sends to stage r+1
//   tp=T,dp=D                      tensor-parallel groups of T consecutive ranks inside D
//                                  data-parallel groups; T x D must equal the GPU count
//   matrix=R0;R1;...               explicit N x N traffic matrix, rows separated by ';', values
//                                  (GB per step, >= 0) by ',' or spaces; N must equal the GPU
//                                  count; the matrix is made symmetric by max(W[a][b], W[b][a])
// Optional `,gb=X` (after allreduce/pipeline/tp) sets the bytes per step (default 1 GB; for tp
// the tensor-parallel bytes, with `dpgb=Y` for the data-parallel ones, default gb/8).
// Errors name the annotation and the field ("vgpu.io/comm-pattern: matrix row 2 has 3 values,
// expected 4"), for the extender's unschedulable reason.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "topo/bandwidth.h"

namespace vgpu::topo {

inline constexpr std::string_view kCommPatternAnnotation = "vgpu.io/comm-pattern";

struct CommPattern {
  enum class Kind { kAllReduce, kPipeline, kTensorData, kMatrix };
  Kind kind = Kind::kAllReduce;
  double gb = 1.0;  // all-reduce / pipeline / tensor-parallel bytes per step
  double dp_gb = 0.125;
  int tp = 0, dp = 0;          // kTensorData
  int ranks = 0;               // kMatrix: N
  std::vector<double> matrix;  // kMatrix: N*N, symmetric
  // True when rank order changes the predicted time (all but all-reduce).
  bool OrderMatters() const { return kind != Kind::kAllReduce; }
};

// Parses the annotation value for a request of `gpus` GPUs.
Result<CommPattern> ParseCommPattern(std::string_view text, int gpus);

// Predicted communication seconds per step with rank i on ordered[i].
double PatternSeconds(Evaluator& evaluator, const CommPattern& pattern,
                      const std::vector<int>& ordered);

}  // namespace vgpu::topo
