// Scoring detections against injected labels (inject.h), per kind.
//
// A detection matches a label of the same kind on the same series when its start is within
// `tolerance` slots of the label's start (spikes: 1, the others: 5); each label and each
// detection matches at most once (nearest start first). Recall = matched labels / labels.
// Precision is reported two ways:
// - strict: matched / all detections of that kind on the injected series;
// - attributable: detections that coincide (same kind, overlapping slots) with one found on the
//   untouched series are left out first: those are the series' own events, which carry no label.
// Delay: the mean of (detected start - labelled start) over matches, in slots.
// `unmatched`, when given, receives the detections that match no label and are not the series'
// own events (the ones that lower precision).
#pragma once

#include <map>
#include <vector>

#include "analyze/anomaly.h"
#include "analyze/inject.h"

namespace vgpu::analyze {

// Detections of one series.
struct SeriesDetections {
  size_t series = 0;
  std::vector<Anomaly> anomalies;
};

struct KindScore {
  size_t labels = 0, detections = 0, matched = 0, natural = 0;
  double delay_sum = 0;
  double Recall() const { return labels ? static_cast<double>(matched) / labels : 0; }
  double StrictPrecision() const {
    return detections ? static_cast<double>(matched) / detections : 0;
  }
  double Precision() const {
    size_t d = detections - natural;
    return d ? static_cast<double>(matched) / d : 0;
  }
  double F1() const {
    double p = Precision(), r = Recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0;
  }
  double MeanDelay() const { return matched ? delay_sum / matched : 0; }
};

size_t Tolerance(AnomalyKind k);

struct UnmatchedDetection {
  size_t series = 0;
  Anomaly anomaly;
};

// `injected`: detections on the injected series; `clean`: on the untouched ones.
std::map<AnomalyKind, KindScore> Score(const std::vector<Injection>& labels,
                                       const std::vector<SeriesDetections>& injected,
                                       const std::vector<SeriesDetections>& clean,
                                       std::vector<UnmatchedDetection>* unmatched = nullptr);

}  // namespace vgpu::analyze
