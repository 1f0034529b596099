// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/device/parse.hpp>.
#include <dsgd/device/cpu.hpp>
#include <dsgd/device/parse.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

BOOST_AUTO_TEST_SUITE(device_parse_test)

using dsgd::device::parse;
using dsgd::device::spec;
using kind = spec::kind;

static_assert(std::is_aggregate_v<spec>);

namespace {

// A bad device string: see dsgd::test::check_rejected.
void check_rejected(std::string_view text, std::size_t column, std::string_view reason) {
  dsgd::test::check_rejected([](std::string_view t) { return parse(t); }, text, column, reason);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(device_parse)

BOOST_AUTO_TEST_CASE(every_accepted_form_gives_kind_and_index) {
  BOOST_TEST((parse("cpu") == spec{kind::cpu, 0}));
  BOOST_TEST((parse("cpu:0") == spec{kind::cpu, 0}));
  BOOST_TEST((parse("cuda") == spec{kind::cuda, 0}));
  BOOST_TEST((parse("cuda:1") == spec{kind::cuda, 1}));
  BOOST_TEST((parse("gpu:1") == spec{kind::cuda, 1}));
  BOOST_TEST((parse("/cpu:0") == spec{kind::cpu, 0}));
  BOOST_TEST((parse("/gpu:0") == spec{kind::cuda, 0}));
  BOOST_TEST((parse("/device:CPU:0") == spec{kind::cpu, 0}));
  BOOST_TEST((parse("/device:GPU:1") == spec{kind::cuda, 1}));
  BOOST_TEST((parse("/device:gpu:7") == spec{kind::cuda, 7}));
  BOOST_TEST((parse("CUDA:12") == spec{kind::cuda, 12}));
  BOOST_TEST((parse("Gpu:3") == spec{kind::cuda, 3}));
  BOOST_TEST((parse("cuda:2147483647") == spec{kind::cuda, 2147483647}));
}

BOOST_AUTO_TEST_CASE(to_string_round_trips) {
  for (auto text : {"cpu", "cuda:1", "/device:GPU:3", "gpu:0", "CPU:0"}) {
    const spec s = parse(text);
    BOOST_TEST(parse(s.to_string()) == s);
  }
  BOOST_TEST(parse("/device:GPU:3").to_string() == "cuda:3");
  BOOST_TEST(parse("cpu").to_string() == "cpu:0");
}

BOOST_AUTO_TEST_CASE(the_cpu_device_name_parses_to_the_cpu) {
  BOOST_TEST((parse(dsgd::device::cpu::name()) == spec{kind::cpu, 0}));
}

BOOST_AUTO_TEST_CASE(a_non_numeric_index_is_rejected_at_its_column) {
  check_rejected("cuda:x", 5, "expected a device index (digits), got 'x'");
}

BOOST_AUTO_TEST_CASE(an_unknown_kind_is_rejected_at_its_first_character) {
  check_rejected("tpu:0", 0, "unknown device kind \"tpu\"");
  check_rejected("/device:TPU:0", 8, "unknown device kind \"TPU\"");
}

BOOST_AUTO_TEST_CASE(a_negative_index_is_rejected) {
  check_rejected("cuda:-1", 5, "device index must be non-negative");
}

BOOST_AUTO_TEST_CASE(an_index_that_overflows_int_is_rejected) {
  check_rejected("cuda:99999999999", 5, "device index 99999999999 is too large");
  check_rejected("cpu:2147483648", 4, "too large");
}

BOOST_AUTO_TEST_CASE(the_empty_string_is_rejected) { check_rejected("", 0, "empty device string"); }

BOOST_AUTO_TEST_CASE(a_missing_index_after_the_colon_is_rejected) {
  check_rejected("cuda:", 5, "missing device index");
}

BOOST_AUTO_TEST_CASE(garbage_after_the_index_is_rejected_where_it_starts) {
  check_rejected("cuda:1x", 6, "unexpected character 'x' after the device index");
  check_rejected("gpu:0 ", 5, "unexpected character ' '");
}

BOOST_AUTO_TEST_CASE(a_wrong_separator_after_the_kind_is_rejected) {
  check_rejected("cuda-1", 4, "unexpected character '-' after the device kind");
}

BOOST_AUTO_TEST_CASE(a_missing_kind_is_rejected) {
  check_rejected("/device:", 8, "missing device kind");
  check_rejected(":0", 0, "expected a device kind (cpu, cuda or gpu), got ':'");
}

BOOST_AUTO_TEST_CASE(control_characters_are_escaped_and_the_caret_still_lines_up) {
  check_rejected(std::string_view("cu\tda", 5), 0, "unknown device kind");
  check_rejected(std::string_view("cpu:\n", 5), 4, "got '\\x0a'");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
