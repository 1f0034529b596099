// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: the deadline of a wait on an update rule's shard that must not time out.
#pragma once

#include <dsgd/update/concepts.hpp>

#include <chrono>

namespace dsgd::test {

/// Ten seconds from now: far beyond any wait that should end at once, short enough that a
/// test that wrongly waits ends with a named timeout instead of hanging.
inline update::clock_type::time_point soon() { return update::clock_type::now() + std::chrono::seconds(10); }

}  // namespace dsgd::test
