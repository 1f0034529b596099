// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// cluster::token_from_environment: the secret every task of a job shares (DSGD_CLUSTER_TOKEN),
/// with no default: a task without one fails at start, unless it opts out explicitly.
#pragma once

#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/error.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace dsgd::cluster {

/// The token of a task that opted out of a secret (DSGD_INSECURE_NO_TOKEN=1): public, so it
/// proves nothing; every task that opted out shares it.
inline constexpr std::string_view insecure_token = "dsgd-insecure-no-token";

/// @returns the cluster token every task of a job must share (the key of the handshake's
/// HMAC): DSGD_CLUSTER_TOKEN. There is no default secret, since a token written in the source
/// would let anyone who read it join every cluster started that way. `dsgd-launch` gives a
/// single-host job a random one; under Slurm, MPI or a TF_CONFIG of your own, export one to
/// every task. DSGD_INSECURE_NO_TOKEN=1 runs without a secret (insecure_token), which @p log
/// is told of.
/// @throws dsgd::error(errc::invalid_argument) when neither is set, saying how to set one
inline std::string token_from_environment(const std::function<void(std::string_view)>& log = {},
                                          const env_lookup& env = process_environment()) {
  if (auto t = env("DSGD_CLUSTER_TOKEN"); t && !t->empty()) return *t;
  if (auto opt_out = env("DSGD_INSECURE_NO_TOKEN"); opt_out && *opt_out == "1") {
    if (log)
      log("DSGD_INSECURE_NO_TOKEN=1: running without a cluster secret; any process that can reach this "
          "task's port can join the cluster");
    return std::string(insecure_token);
  }
  throw error(errc::invalid_argument,
              "DSGD_CLUSTER_TOKEN is not set: every task of a cluster needs the same secret token. dsgd-launch "
              "gives a single-host job a random one; otherwise export one to every task, e.g. "
              "DSGD_CLUSTER_TOKEN=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \\n'), or set "
              "DSGD_INSECURE_NO_TOKEN=1 to run without a secret");
}

}  // namespace dsgd::cluster
