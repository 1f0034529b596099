// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Must NOT compile: a transport that listens but cannot connect (no async_connect), given to the
// trainer. The test conformance_near_miss_transport passes when the compiler refuses it naming
// the concept.
#include <dsgd/trainer.hpp>
#include <dsgd/transport/inproc.hpp>

#include <memory>

struct listen_only {
  using connection_type = dsgd::transport::inproc_connection;
  using listener_type = dsgd::transport::inproc_listener;
  using options_type = dsgd::transport::tcp_options;
  std::shared_ptr<listener_type> listen(boost::asio::any_io_executor, const dsgd::cluster::task_address&,
                                        options_type) const;
  static dsgd::cluster::task_address local_address(const listener_type&);
};

dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::optim::sgd,
              listen_only>* refused = nullptr;
