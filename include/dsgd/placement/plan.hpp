// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The vocabulary of placement: what a variable is (name, shape) and where its shards live.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/tensor/shape.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dsgd::placement {

/// A variable as placement sees it: a name, a shape and an element size, in creation order.
struct variable_info {
  std::string name;
  dsgd::shape shape;
  std::size_t element_bytes = sizeof(float);

  std::size_t bytes() const noexcept { return shape.elements() * element_bytes; }
};

/// One contiguous slice of a variable, held by one ps task. A variable that is not partitioned
/// has a single shard covering all of it. Slices run along dimension 0, so a shard is whole rows.
struct shard {
  std::size_t variable = 0;  ///< index of the variable in creation order
  std::size_t ps_task = 0;   ///< which ps task holds it
  std::size_t offset = 0;    ///< first element of the slice
  std::size_t elements = 0;  ///< number of elements in the slice

  friend bool operator==(const shard&, const shard&) = default;
};

/// What one ps task holds, for the load report.
struct ps_load {
  std::size_t variables = 0;  ///< shards held (a partitioned variable counts once per shard)
  std::size_t bytes = 0;
};

/// The result of placing variables over ps tasks: every shard of every variable, in order.
class plan {
 public:
  plan() = default;
  plan(std::vector<variable_info> variables, std::size_t ps_tasks, std::vector<shard> shards)
      : variables_(std::move(variables)), ps_tasks_(ps_tasks), shards_(std::move(shards)) {}

  const std::vector<variable_info>& variables() const noexcept { return variables_; }
  const std::vector<shard>& shards() const noexcept { return shards_; }
  std::size_t ps_tasks() const noexcept { return ps_tasks_; }

  /// @returns the shards of variable @p v, in offset order.
  std::vector<shard> shards_of(std::size_t v) const {
    std::vector<shard> out;
    for (const auto& s : shards_)
      if (s.variable == v) out.push_back(s);
    return out;
  }

  /// @returns the number of shards and bytes each ps task holds.
  std::vector<ps_load> load() const {
    std::vector<ps_load> out(ps_tasks_);
    for (const auto& s : shards_) {
      out[s.ps_task].variables += 1;
      out[s.ps_task].bytes += s.elements * variables_[s.variable].element_bytes;
    }
    return out;
  }

  /// @returns a canonical one-line description: "w[2,2]@0+0:4 b[2,2]@1+0:4" (name, shape,
  /// then ps@offset:elements per shard). Two workers that placed alike print the same line.
  std::string describe() const {
    std::string out;
    for (const auto& s : shards_) {
      if (!out.empty()) out += ' ';
      const auto& v = variables_[s.variable];
      out += v.name + v.shape.to_string() + "@" + std::to_string(s.ps_task) + "+" + std::to_string(s.offset) + ":" +
             std::to_string(s.elements);
    }
    return out;
  }

  /// @returns a 64-bit FNV-1a digest of describe(), exchanged at connect time so that workers
  /// that computed different placements are detected before any training.
  std::uint64_t fingerprint() const {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : describe()) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    return h;
  }

  /// @returns a per-ps table: "ps:0 2 variables 1024 bytes\n...".
  std::string load_report() const {
    std::string out;
    auto l = load();
    for (std::size_t p = 0; p < l.size(); ++p)
      out += "ps:" + std::to_string(p) + " " + std::to_string(l[p].variables) + " variables " +
             std::to_string(l[p].bytes) + " bytes\n";
    return out;
  }

 private:
  std::vector<variable_info> variables_;
  std::size_t ps_tasks_ = 0;
  std::vector<shard> shards_;
};

/// Throws dsgd::error(errc::placement_mismatch) naming both placements when @p theirs (the
/// describe() line a peer sent, with its fingerprint) differs from @p mine.
inline void verify_same_placement(const plan& mine, std::uint64_t their_fingerprint, const std::string& theirs,
                                  const std::string& peer) {
  if (mine.fingerprint() == their_fingerprint && mine.describe() == theirs) return;
  throw error(errc::placement_mismatch, "placement differs from " + peer +
                                            "'s (were variables created in a different "
                                            "order or with other shapes?)\n  local:   " +
                                            mine.describe() + "\n  " + peer + ": " + theirs);
}

namespace detail {

inline void check_ps_tasks(std::size_t ps_tasks, const char* who) {
  if (ps_tasks == 0)
    throw error(errc::invalid_argument, std::string(who) + ": the cluster has no ps task to place variables on");
}

}  // namespace detail

}  // namespace dsgd::placement
