#include "analyze/evaluate.h"

#include <algorithm>
#include <cstdlib>

namespace vgpu::analyze {

size_t Tolerance(AnomalyKind k) { return k == AnomalyKind::kSpike ? 1 : 5; }

std::map<AnomalyKind, KindScore> Score(const std::vector<Injection>& labels,
                                       const std::vector<SeriesDetections>& injected,
                                       const std::vector<SeriesDetections>& clean,
                                       std::vector<UnmatchedDetection>* unmatched) {
  std::map<AnomalyKind, KindScore> score;
  for (AnomalyKind k : kAllKinds) score[k];
  for (const Injection& l : labels) ++score[l.kind].labels;
  std::map<size_t, const std::vector<Anomaly>*> clean_of;
  for (const SeriesDetections& c : clean) clean_of[c.series] = &c.anomalies;
  for (const SeriesDetections& d : injected) {
    struct Pair {
      long distance;
      size_t label, det;
    };
    std::vector<Pair> pairs;
    for (size_t li = 0; li < labels.size(); ++li) {
      const Injection& l = labels[li];
      if (l.series != d.series) continue;
      for (size_t di = 0; di < d.anomalies.size(); ++di) {
        const Anomaly& a = d.anomalies[di];
        long dist = static_cast<long>(a.start) - static_cast<long>(l.start);
        if (a.kind == l.kind && static_cast<size_t>(std::labs(dist)) <= Tolerance(l.kind)) {
          pairs.push_back({dist, li, di});
        }
      }
    }
    std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
      return std::labs(a.distance) < std::labs(b.distance);
    });
    std::vector<char> label_used(labels.size(), 0), det_used(d.anomalies.size(), 0);
    for (const Pair& p : pairs) {
      if (label_used[p.label] || det_used[p.det]) continue;
      label_used[p.label] = det_used[p.det] = 1;
      KindScore& s = score[labels[p.label].kind];
      ++s.matched;
      s.delay_sum += static_cast<double>(p.distance);
    }
    for (size_t di = 0; di < d.anomalies.size(); ++di) {
      const Anomaly& a = d.anomalies[di];
      KindScore& s = score[a.kind];
      ++s.detections;
      if (det_used[di]) continue;
      bool own = false;
      if (clean_of.count(d.series)) {
        own = std::any_of(clean_of[d.series]->begin(), clean_of[d.series]->end(),
                          [&](const Anomaly& c) {
                            return c.kind == a.kind && c.start <= a.end && a.start <= c.end;
                          });
      }
      if (own) {
        ++s.natural;
      } else if (unmatched) {
        unmatched->push_back({d.series, a});
      }
    }
  }
  return score;
}

}  // namespace vgpu::analyze
