// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Must NOT compile: a rule whose shard serves pushes and pulls but cannot be checkpointed (no
// saved_state, save or restore), given to the trainer. The test conformance_near_miss_update_rule
// passes when the compiler refuses it naming the concept.
#include <dsgd/trainer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

struct no_checkpoints {
  static std::uint64_t next_pull(std::uint64_t, std::uint64_t);

  template <class D, class O>
  struct shard {
    shard(D, std::span<const float>, O, std::size_t);
    std::size_t size() const;
    dsgd::update::push_outcome push(std::size_t, std::uint64_t, const float*);
    std::optional<std::uint64_t> try_pull(std::size_t, std::uint64_t, float*);
    std::string wait_reason(std::size_t, std::uint64_t);
    void finish(std::size_t);
    std::uint64_t step();
    std::uint64_t dropped();
    void assign(std::span<const float>, std::uint64_t);
  };

  template <class D, class O>
  std::unique_ptr<shard<D, O>> make_shard(D, std::span<const float>, O, std::size_t) const;
};

dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, no_checkpoints, dsgd::optim::sgd>* refused = nullptr;
