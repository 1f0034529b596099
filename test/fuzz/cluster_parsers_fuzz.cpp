// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for the text parsers of <dsgd/cluster/*.hpp> and <dsgd/device/parse.hpp>:
// cluster-spec JSON, TF_CONFIG, local device strings ("cuda:1"), TF device strings
// ("/job:ps/task:0/device:GPU:0") and task addresses ("host:port", "[v6]:port").
//
// Input: one byte choosing the parser ('j' cluster spec, 't' TF_CONFIG, 'd' device, 's' device
// spec, 'a' address; any other byte by its value modulo 5), then the text. What parses must
// print back to text that parses to an equal value, as each to_string()/to_json() documents.
#include "fuzz_support.hpp"

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/device_spec.hpp>
#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/device/parse.hpp>

#include <string>
#include <string_view>

namespace c = dsgd::cluster;

namespace {

enum class parser { cluster_json, tf_config, device, device_spec, address };

parser parser_for(std::uint8_t b) {
  switch (b) {
    case 'j':
      return parser::cluster_json;
    case 't':
      return parser::tf_config;
    case 'd':
      return parser::device;
    case 's':
      return parser::device_spec;
    case 'a':
      return parser::address;
    default:
      return static_cast<parser>(b % 5);
  }
}

// Runs @p parse on @p text; a refusal must carry @p expected.
template <class Parse, class Check>
void parse_with(std::string_view text, dsgd::errc expected, Parse parse, Check check_round_trip) {
  try {
    check_round_trip(parse(text));
  } catch (const dsgd::error& e) {
    dsgd::fuzz::check(e.code() == expected, std::string("refused with another errc: ") + e.what());
    dsgd::fuzz::check(e.what()[0] != '\0', "refused without a message");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dsgd::fuzz::input_scope scope({data, size});
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  using dsgd::errc;
  using dsgd::fuzz::check;
  switch (parser_for(data[0])) {
    case parser::cluster_json:
      parse_with(
          text, errc::bad_cluster_spec, [](auto s) { return c::cluster_spec::from_json_string(s); },
          [](const c::cluster_spec& spec) {
            const auto j = spec.to_json();
            check(c::cluster_spec::from_json_string(j.dump()).to_json() == j,
                  "cluster_spec does not survive to_json and back");
          });
      break;
    case parser::tf_config:
      parse_with(
          text, errc::bad_cluster_spec, [](auto s) { return c::tf_config::parse(s); },
          [](const c::tf_config& config) {
            check(c::tf_config::parse(config.to_json().dump()) == config,
                  "tf_config does not survive to_json and back");
          });
      break;
    case parser::device:
      parse_with(
          text, errc::bad_device_string, [](auto s) { return dsgd::device::parse(s); },
          [](const dsgd::device::spec& d) {
            check(dsgd::device::parse(d.to_string()) == d, "device spec does not survive to_string");
          });
      break;
    case parser::device_spec:
      parse_with(
          text, errc::bad_device_string, [](auto s) { return c::device_spec::parse(s); },
          [](const c::device_spec& d) {
            check(c::device_spec::parse(d.to_string()) == d, "device_spec does not survive to_string");
          });
      break;
    case parser::address:
      parse_with(
          text, errc::bad_cluster_spec, [](auto s) { return c::task_address::parse(s); },
          [](const c::task_address& a) {
            check(c::task_address::parse(a.to_string()) == a, "task_address does not survive to_string");
          });
      break;
  }
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  return {
      R"(j{"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]})",
      R"(j{"chief": ["10.0.0.1:2222"], "ps": ["[::1]:2222", "ps1.example.com:2222"]})",
      R"(j{"worker": "localhost:1"})",
      R"(t{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"],)"
      R"( "ps": ["host3:2222"]}, "task": {"type": "worker", "index": 1}, "environment": "cloud"})",
      R"(t{"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator", "index": "0"}, "rpc_layer": "grpc"})",
      R"(t{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})",
      "dcpu:0",
      "dcuda:1",
      "dGPU:3",
      "s/job:ps/replica:0/task:1/device:GPU:0",
      "s/job:worker/task:0/cpu:0",
      "s/device:CPU:0",
      "alocalhost:2222",
      "a[fe80::1]:65535",
      "a10.1.2.3:0",
  };
}
