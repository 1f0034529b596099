// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The library version, as macros for the preprocessor and as a constexpr value.
#pragma once

#define DSGD_VERSION_MAJOR 0
#define DSGD_VERSION_MINOR 1
#define DSGD_VERSION_PATCH 0

namespace dsgd {

/// The version of the dsgd headers in use.
struct version_info {
  int major, minor, patch;
};

/// @returns the version of the dsgd headers this translation unit was compiled with.
constexpr version_info version() noexcept { return {DSGD_VERSION_MAJOR, DSGD_VERSION_MINOR, DSGD_VERSION_PATCH}; }

}  // namespace dsgd
