// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for <dsgd/protocol/messages.hpp>: control messages (Boost.Serialization) decoded
// from arbitrary bytes by decode_control(), as a ps task decodes what an authenticated peer
// sent. A decode either succeeds or throws dsgd::error(errc::bad_frame); it must never trust a
// length or count in the bytes further than the bytes themselves go (the tracker in
// fuzz_support.cpp fails any single allocation out of proportion to the input).
//
// Input: one byte choosing the message type (register_request, error_reply, shard_layout,
// checkpoint_request, embedding::table_spec), then the control payload.
#include "fuzz_support.hpp"

#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/protocol/messages.hpp>

#include <string>
#include <string_view>

namespace protocol = dsgd::protocol;

namespace {

// A decoded message encodes to bytes that decode to a message with the same encoding.
template <class M>
void decode_as(std::string_view payload, const char* what) {
  M m;
  try {
    m = protocol::decode_control<M>(payload, what);
  } catch (const dsgd::error& e) {
    dsgd::fuzz::check(e.code() == dsgd::errc::bad_frame, "decode_control threw another errc");
    dsgd::fuzz::check(std::string(e.what()).find(what) != std::string::npos,
                      "decode_control's error does not name the message");
    return;
  }
  const auto again = protocol::encode_control(m);
  dsgd::fuzz::check(protocol::encode_control(protocol::decode_control<M>(again, what)) == again,
                    "a decoded message does not survive encode and decode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dsgd::fuzz::input_scope scope({data, size});
  if (size == 0) return 0;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The transport refuses larger control payloads before anything is read (limits).
  if (payload.size() > dsgd::transport::limits{}.max_control_bytes) return 0;
  switch (data[0] % 5) {
    case 0:
      decode_as<protocol::register_request>(payload, "register_request");
      break;
    case 1:
      decode_as<protocol::error_reply>(payload, "error_reply");
      break;
    case 2:
      decode_as<protocol::shard_layout>(payload, "shard_layout");
      break;
    case 3:
      decode_as<protocol::checkpoint_request>(payload, "checkpoint_request");
      break;
    default:
      decode_as<dsgd::embedding::table_spec>(payload, "create_table");
      break;
  }
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  std::vector<std::string> out;
  auto add = [&](char type, const std::string& payload) { out.push_back(std::string(1, type) + payload); };
  protocol::register_request r;
  r.task = "worker:1";
  r.replica = 1;
  r.fingerprint = 0x1234567890abcdefull;
  r.placement = "dense0/kernel -> ps:0; dense0/bias -> ps:1";
  r.shards = 2;
  r.layouts.push_back({0, 0, "emb", {1000, 16}, 0, 500});
  r.layouts.push_back({0, 1, "emb", {1000, 16}, 500, 500});
  add(0, protocol::encode_control(r));
  r.chief = true;
  r.layouts.clear();
  add(0, protocol::encode_control(r));
  add(0, protocol::encode_control(protocol::register_request{}));
  add(1, protocol::encode_control(protocol::error_reply{static_cast<std::int32_t>(dsgd::errc::placement_mismatch),
                                                        "placement mismatch: worker:1 computed another plan"}));
  add(1, protocol::encode_control(protocol::error_reply{}));
  add(2, protocol::encode_control(protocol::shard_layout{3, 0, "dense/kernel", {784, 256}, 0, 784}));
  add(2, protocol::encode_control(protocol::shard_layout{}));
  add(3, protocol::encode_control(protocol::checkpoint_request{"ckpt/run-1"}));
  add(3, protocol::encode_control(protocol::checkpoint_request{"ckpt/run-1", true, 1200}));  // incremental
  namespace emb = dsgd::embedding;
  add(4, protocol::encode_control(emb::table_spec{.name = "user_id",
                                                  .dim = 16,
                                                  .rule = emb::table_rule::bounded_staleness(3),
                                                  .optimizer = emb::row_optimizer_spec::ftrl(0.1f, 0.01f, 0.001f),
                                                  .initializer = emb::initializer_spec::truncated_normal(0.25f, 7),
                                                  .admission = emb::admission_spec::by_probability(0.5, 9),
                                                  .eviction = emb::eviction_spec::by_age(1000),
                                                  .max_rows = 1000000}));
  add(4, protocol::encode_control(emb::table_spec{}));
  return out;
}
