// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The translation unit that carries the tests' precompiled header (test/CMakeLists.txt,
// DSGD_TEST_PCH); it has nothing of its own.
