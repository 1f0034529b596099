// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// dsgd's error codes and exception type. Every failure a user can cause (bad input, a missing
/// file, an unreachable peer) is reported as a dsgd::error carrying an errc and a message that
/// names what was wrong and where.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <type_traits>

namespace dsgd {

/// The error code type of the whole library (the one Asio hands out too).
using error_code = boost::system::error_code;

/// Conditions that dsgd reports.
enum class errc {
  ok = 0,
  invalid_argument = 1,  ///< a value outside its documented domain
  bad_device_string,     ///< a device string that does not parse ("cuda:x", "/job:ps/task:")
  device_unavailable,    ///< a well-formed device this build or machine does not have
  shape_mismatch,        ///< tensors whose shapes do not agree
  dataset_missing,       ///< a dataset file that is not there (package not installed?)
  dataset_corrupt,       ///< a dataset file that is truncated, has a wrong magic or digest
  bad_cluster_spec,      ///< a cluster spec that is malformed or inconsistent
  bad_frame,             ///< a wire frame that fails validation
  handshake_failed,      ///< a peer that does not prove knowledge of the cluster token
  peer_unreachable,      ///< a peer that could not be reached before its deadline
  peer_lost,             ///< a connection that broke while in use
  timed_out,             ///< a wait that passed its deadline
  placement_mismatch,    ///< workers that computed different placements
  checkpoint_corrupt,    ///< a checkpoint that is truncated or fails its checksum
  not_found,             ///< a variable, key or file that does not exist
  cancelled,             ///< an operation stopped by shutdown
  aborted,               ///< the session was re-created (a ps restored a checkpoint): start over from it
};

namespace detail {

class dsgd_category final : public boost::system::error_category {
 public:
  using boost::system::error_category::message;  // keep the (int, char*, size_t) overload
  const char* name() const noexcept override { return "dsgd"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok:
        return "success";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::bad_device_string:
        return "bad device string";
      case errc::device_unavailable:
        return "device unavailable";
      case errc::shape_mismatch:
        return "shape mismatch";
      case errc::dataset_missing:
        return "dataset missing";
      case errc::dataset_corrupt:
        return "dataset corrupt";
      case errc::bad_cluster_spec:
        return "bad cluster spec";
      case errc::bad_frame:
        return "bad frame";
      case errc::handshake_failed:
        return "handshake failed";
      case errc::peer_unreachable:
        return "peer unreachable";
      case errc::peer_lost:
        return "peer lost";
      case errc::timed_out:
        return "timed out";
      case errc::placement_mismatch:
        return "placement mismatch";
      case errc::checkpoint_corrupt:
        return "checkpoint corrupt";
      case errc::not_found:
        return "not found";
      case errc::cancelled:
        return "cancelled";
      case errc::aborted:
        return "session aborted";
    }
    return "unknown dsgd error";
  }
};

}  // namespace detail

/// @returns the category of dsgd::errc values (a function-local static keeps it header-only).
inline const boost::system::error_category& category() noexcept {
  static const detail::dsgd_category instance;
  return instance;
}

/// Makes errc usable wherever an error_code is expected.
inline error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), category()}; }

/// The exception dsgd throws: an error_code plus a message naming what and where.
///
/// what() is the message exactly as given (system_error would append ": " and the code's
/// message, which breaks multi-line messages such as a caret under a bad character); code()
/// says which errc it is.
class error : public boost::system::system_error {
 public:
  error(errc e, const std::string& what) : boost::system::system_error(make_error_code(e), what), what_(what) {}
  error(error_code ec, const std::string& what) : boost::system::system_error(ec, what), what_(what) {}

  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

}  // namespace dsgd

template <>
struct boost::system::is_error_code_enum<dsgd::errc> : std::true_type {};
