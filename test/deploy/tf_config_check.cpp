// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Reads this process's TF_CONFIG as a dsgd program does (cluster::resolve_from_environment) and
// prints what dsgd understood, for kubernetes_test.py: the cluster as canonical JSON, then the
// task and whether it is the chief. Exits 1 with dsgd's error when TF_CONFIG is refused.
#include <dsgd/cluster/environment.hpp>

#include <cstdio>

int main() {
  try {
    const auto role = dsgd::cluster::resolve_from_environment();
    std::printf("cluster %s\ntask %s\nchief %d\nsource %s\n", role.cluster.to_json().dump().c_str(),
                role.task.to_string().c_str(), role.is_chief() ? 1 : 0,
                std::string(dsgd::cluster::to_string(role.source)).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tf_config_check: %s\n", e.what());
    return 1;
  }
}
