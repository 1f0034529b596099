// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// <dsgd/cluster/slurm.hpp>'s host lists against a live `scontrol show hostnames`: random lists,
// expanded by both. Reported skipped (not passed) where scontrol is not installed.
#include <dsgd/cluster/slurm.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

BOOST_AUTO_TEST_SUITE(slurm_live_test)

using namespace dsgd::cluster;

BOOST_AUTO_TEST_CASE(random_host_lists_match_a_live_scontrol) {
  if (std::system("command -v scontrol >/dev/null 2>&1") != 0) {
    // test/cluster/CMakeLists.txt makes CTest report this line as skipped.
    std::printf("skipped: scontrol (Debian's slurm-client, which scripts/setup.sh installs) is not installed\n");
    return;
  }
  // scontrol needs a configuration to start; a one-node one names nothing it would contact.
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd-slurm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "slurm.conf") << "ClusterName=dsgdtest\nSlurmctldHost=localhost\n"
                                       "NodeName=localhost CPUs=1 State=UNKNOWN\nPartitionName=p Nodes=localhost\n";
  std::mt19937 rng(7);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (int k = 0; k < 40; ++k) {
    std::string list;
    for (int item = 0, items = 1 + pick(3); item < items; ++item) {
      if (item) list += ",";
      list += std::string(1, char('a' + pick(3))) + (pick(2) ? "n" : "");
      for (int b = 0, brackets = pick(3); b < brackets; ++b) {
        if (b) list += "-";
        list += "[";
        for (int r = 0, ranges = 1 + pick(2); r < ranges; ++r) {
          const int lo = pick(12), width = 1 + pick(3);
          std::string los = std::to_string(lo);
          if (static_cast<int>(los.size()) < width) los.insert(0, static_cast<std::size_t>(width) - los.size(), '0');
          list += (r ? "," : "") + los + (pick(2) ? "-" + std::to_string(lo + pick(4)) : "");
        }
        list += "]";
      }
    }
    const std::string cmd =
        "SLURM_CONF=" + (dir / "slurm.conf").string() + " scontrol show hostnames '" + list + "' 2>&1";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      while (std::fgets(buf, sizeof buf, p)) out += buf;
      ::pclose(p);
    }
    std::vector<std::string> theirs;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) theirs.push_back(line);
    BOOST_TEST_CONTEXT("list " << list) {
      BOOST_TEST(expand_hostlist(list) == theirs, boost::test_tools::per_element());
    }
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
