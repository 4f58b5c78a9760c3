// A fast path for the large, flat parts of extender requests and responses: splitting a JSON
// object into its top-level members without building a DOM and reading an array of strings (the
// escaped strings of the answers: common/json_string.h). A filter request for 1,000 nodes is
// mostly node names; reading them this way instead of through a JSON DOM halves the request's
// cost.
//
// Contract: the scanner checks structure (quotes, brackets, separators) but not the grammar of
// values it skips; callers parse the spans they use with a full parser and fall back to one when
// the scanner refuses. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vgpu::k8s {

// The members (raw key text, value text) of a top-level JSON object; std::nullopt when `text`
// is not one. Keys are returned undecoded (nullopt if a key has an escape).
std::optional<std::vector<std::pair<std::string_view, std::string_view>>> ScanObjectMembers(
    std::string_view text);

// The deepest nesting of arrays and objects accepted from outside. A Pod is a few levels deep
// (managedFields perhaps twenty); deeper text is refused before it is parsed, since printing or
// copying a JSON value recurses once per level.
inline constexpr int kMaxJsonNesting = 256;

// Whether JSON text nests arrays and objects deeper than `limit` (brackets inside strings do
// not count). Does not check the rest of the grammar.
bool JsonNestsDeeperThan(std::string_view text, int limit = kMaxJsonNesting);

// Reads a JSON array of strings ("[\"a\",\"b\"]"); false when `text` is anything else.
bool ScanStringArray(std::string_view text, std::vector<std::string>* out);

// The same, as views into `text`: false also when a string has an escape (the caller then uses
// ScanStringArray). Allocates nothing but `out`'s storage.
bool ScanStringArrayViews(std::string_view text, std::vector<std::string_view>* out);

}  // namespace vgpu::k8s
