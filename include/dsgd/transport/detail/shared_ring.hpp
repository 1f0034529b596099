// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A one-way ring of payload bytes in shared memory, between two tasks on one host: the sender
/// copies a frame's payload into the ring and sends only the header over the socket; the
/// receiver copies the payload out of the ring when that header arrives. The socket stays the
/// only thing either side waits on, so deadlines, peer loss and ordering are the socket's.
/// The memory is anonymous (memfd_create): it has no name in /dev/shm, the peer opens it
/// through the creator's descriptor (/proc/PID/fd/FD), and the kernel frees it with its last
/// holder, so a process killed at any point leaves nothing behind.
/// docs/transport.md, "Shared memory between tasks on one host".
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/transport/frame.hpp>

#include <boost/asio/buffer.hpp>

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace dsgd::transport::detail {

/// @returns whether @p in starts with @p magic.
inline bool starts_with(std::span<const std::byte> in, const std::array<std::byte, 4>& magic) noexcept {
  return in.size() >= magic.size() && std::equal(magic.begin(), magic.end(), in.begin());
}

/// What a sender tells its peer about the ring it made for it, in the handshake: 64 bytes,
/// little-endian: magic `DSGM` (0..3), the ring's capacity (8..15; 0 offers nothing), the path
/// the peer opens it by, `/proc/PID/fd/FD` of the creator's descriptor (16..45, NUL padded),
/// and a random cookie (48..63) that the segment also holds.
struct ring_offer {
  static constexpr std::size_t size = 64;
  static constexpr std::size_t name_size = 30;  // room for "/proc/" 10 digits "/fd/" 10 digits
  static constexpr std::string_view name_prefix = "/proc/";
  static constexpr std::array<std::byte, 4> magic{std::byte{'D'}, std::byte{'S'}, std::byte{'G'}, std::byte{'M'}};
  using bytes_type = std::array<std::byte, size>;

  std::uint64_t bytes = 0;             ///< ring capacity; 0: no ring offered
  std::string name;                    ///< /proc/PID/fd/FD of the creator
  std::array<std::byte, 16> cookie{};  ///< also at the start of the segment: proves it is this one

  bytes_type encode() const noexcept {
    bytes_type b{};
    for (std::size_t i = 0; i < 4; ++i) b[i] = magic[i];
    store_le(b.data() + 8, bytes);
    for (std::size_t i = 0; i < name.size() && i < name_size; ++i) b[16 + i] = static_cast<std::byte>(name[i]);
    std::memcpy(b.data() + 48, cookie.data(), cookie.size());
    return b;
  }

  /// @returns the offer, or nothing with @p reason when @p in is not a well-formed one
  static std::optional<ring_offer> decode(std::span<const std::byte, size> in, std::string& reason) {
    if (!starts_with(in, magic)) {
      reason = "bad shared-memory offer magic";
      return std::nullopt;
    }
    ring_offer o;
    o.bytes = load_le<std::uint64_t>(in.data() + 8);
    for (std::size_t i = 0; i < name_size && in[16 + i] != std::byte{0}; ++i) o.name += static_cast<char>(in[16 + i]);
    std::memcpy(o.cookie.data(), in.data() + 48, o.cookie.size());
    if (o.bytes == 0) return o;
    // Only names of the form this side makes: nothing else on the host can be opened by it.
    if (!well_formed_name(o.name)) {
      reason = "shared-memory offer names no dsgd segment";
      return std::nullopt;
    }
    return o;
  }

  /// @returns whether @p name has the form of every path shared_ring::create() offers,
  /// `/proc/PID/fd/FD` with PID and FD of 1 to 10 decimal digits: nothing else on the host is
  /// opened on a peer's word.
  static bool well_formed_name(std::string_view name) noexcept {
    const auto digits = [](std::string_view d) {
      return !d.empty() && d.size() <= 10 &&
             std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (name.size() > name_size || !name.starts_with(name_prefix)) return false;
    const auto rest = name.substr(name_prefix.size());
    const auto slash = rest.find("/fd/");
    return slash != std::string_view::npos && digits(rest.substr(0, slash)) && digits(rest.substr(slash + 4));
  }
};

/// The answer to an offer, 8 bytes: magic, then 1 when the peer mapped the ring, 0 when not.
struct ring_answer {
  static constexpr std::size_t size = 8;
  static constexpr std::array<std::byte, 4> magic{std::byte{'D'}, std::byte{'S'}, std::byte{'G'}, std::byte{'A'}};
  using bytes_type = std::array<std::byte, size>;

  static bytes_type encode(bool mapped) noexcept {
    bytes_type b{};
    for (std::size_t i = 0; i < 4; ++i) b[i] = magic[i];
    store_le(b.data() + 4, std::uint32_t{mapped ? 1u : 0u});
    return b;
  }
  /// @returns whether the peer mapped the ring, or nothing with @p reason for a malformed answer
  static std::optional<bool> decode(std::span<const std::byte, size> in, std::string& reason) {
    if (!starts_with(in, magic)) {
      reason = "bad shared-memory answer magic";
      return std::nullopt;
    }
    const auto v = load_le<std::uint32_t>(in.data() + 4);
    if (v > 1) {
      reason = "shared-memory answer " + std::to_string(v) + " is neither 0 nor 1";
      return std::nullopt;
    }
    return v == 1;
  }
};

/// One direction of a ring: the sender's side (create(), try_write()) or the receiver's
/// (open(), read()). Positions count bytes since the start and only grow; a payload never
/// wraps: one that does not fit before the end starts at the beginning, and both sides apply
/// the same rule, so the receiver needs no offsets. The segment is unmapped on destruction;
/// the sender's descriptor, through which the peer opens it, is closed by withdraw() once the
/// peer has mapped it (or declined), or on destruction.
class shared_ring {
 public:
  /// Bytes before the data: the cookie and capacity, then the two positions on their own lines.
  static constexpr std::size_t header_bytes = 256;
  /// Payloads shorter than this go inline on the socket, where they cost nothing extra.
  static constexpr std::size_t min_payload = 1024;

  shared_ring(const shared_ring&) = delete;
  shared_ring& operator=(const shared_ring&) = delete;
  shared_ring(shared_ring&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)),
        capacity_(o.capacity_),
        fd_(std::exchange(o.fd_, -1)),
        name_(std::exchange(o.name_, {})),
        cookie_(o.cookie_),
        position_(o.position_) {}
  shared_ring& operator=(shared_ring&& o) noexcept {
    if (this != &o) {
      release();
      base_ = std::exchange(o.base_, nullptr);
      capacity_ = o.capacity_;
      fd_ = std::exchange(o.fd_, -1);
      name_ = std::move(o.name_);
      o.name_.clear();
      cookie_ = o.cookie_;
      position_ = o.position_;
    }
    return *this;
  }
  ~shared_ring() { release(); }

  /// Sender: makes a fresh anonymous segment of @p capacity data bytes (memfd_create, close
  /// on exec), its memory reserved now (no room fails here, not later with SIGBUS), and keeps
  /// the descriptor the peer opens it through until withdraw().
  /// @returns the ring, or nothing with @p reason
  static std::optional<shared_ring> create(std::size_t capacity, std::string& reason) {
#if defined(__linux__)
    std::array<unsigned char, 16> random{};
    if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
      reason = "RAND_bytes failed";
      return std::nullopt;
    }
    const int fd = ::memfd_create("dsgd-ring", MFD_CLOEXEC);
    if (fd < 0) {
      reason = std::string("memfd_create: ") + std::strerror(errno);
      return std::nullopt;
    }
    const std::size_t total = header_bytes + capacity;
    const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(total));
    void* base = err == 0 ? ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    const int map_errno = errno;
    if (base == MAP_FAILED) {
      ::close(fd);
      reason = "reserving " + std::to_string(total) +
               " bytes of shared memory: " + std::strerror(err != 0 ? err : map_errno);
      return std::nullopt;
    }
    shared_ring r(static_cast<std::byte*>(base), capacity,
                  "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd));
    r.fd_ = fd;
    std::memcpy(r.cookie_.data(), random.data(), r.cookie_.size());
    std::memcpy(r.base_, r.cookie_.data(), r.cookie_.size());
    store_le(r.base_ + 16, std::uint64_t{capacity});
    r.head().store(0, std::memory_order_relaxed);
    r.tail().store(0, std::memory_order_release);
    return r;
#else
    (void)capacity;
    reason = "shared memory is implemented for Linux only";
    return std::nullopt;
#endif
  }

  /// Receiver: maps the segment @p offer names, after checking that it is an anonymous segment
  /// of this user (a regular file without a link), the one offered (its cookie and size), and
  /// that its capacity is at most @p max_capacity.
  /// @returns the ring, or nothing with @p reason (another host, another user, a creator gone)
  static std::optional<shared_ring> open(const ring_offer& offer, std::size_t max_capacity, std::string& reason) {
#if defined(__linux__)
    if (offer.bytes == 0 || offer.bytes > max_capacity) {
      reason = "ring of " + std::to_string(offer.bytes) + " bytes is outside 1.." + std::to_string(max_capacity);
      return std::nullopt;
    }
    // Only a descriptor of a ring is opened: the link is read first (reading it opens nothing),
    // so a peer's offer never makes this task open a device or a file another process holds.
    std::array<char, 64> target{};
    const auto n = ::readlink(offer.name.c_str(), target.data(), target.size() - 1);
    if (n < 0 || !std::string_view(target.data(), static_cast<std::size_t>(n)).starts_with("/memfd:dsgd-ring")) {
      reason = "open " + offer.name + ": " + (n < 0 ? std::strerror(errno) : "not a dsgd ring");
      return std::nullopt;
    }
    // And opening it neither waits (a FIFO) nor takes a terminal, whatever it became meanwhile.
    const int fd = ::open(offer.name.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
      reason = "open " + offer.name + ": " + std::strerror(errno);
      return std::nullopt;
    }
    const std::size_t total = header_bytes + static_cast<std::size_t>(offer.bytes);
    struct stat st {};
    void* base = MAP_FAILED;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0 && st.st_uid == ::geteuid() &&
        static_cast<std::size_t>(st.st_size) == total)
      base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (base == MAP_FAILED) {
      reason = "segment " + offer.name + " is not the " + std::to_string(total) + "-byte one offered";
      return std::nullopt;
    }
    shared_ring r(static_cast<std::byte*>(base), static_cast<std::size_t>(offer.bytes), {});
    if (std::memcmp(r.base_, offer.cookie.data(), offer.cookie.size()) != 0 ||
        load_le<std::uint64_t>(r.base_ + 16) != offer.bytes) {
      reason = "segment " + offer.name + " does not carry the offered cookie";
      return std::nullopt;
    }
    r.position_ = r.tail().load(std::memory_order_acquire);
    return r;
#else
    (void)offer, (void)max_capacity;
    reason = "shared memory is implemented for Linux only";
    return std::nullopt;
#endif
  }

  /// @returns what to send the peer about this (sender's) ring.
  ring_offer offer() const { return {capacity_, name_, cookie_}; }
  /// @returns the ring's data capacity in bytes.
  std::size_t capacity() const noexcept { return capacity_; }

  /// Sender: closes the descriptor the peer opened the segment through (the mapping stays);
  /// once the peer has mapped it or declined, nothing else may open it.
  void withdraw() noexcept {
#if defined(__linux__)
    if (fd_ >= 0) ::close(fd_);
#endif
    fd_ = -1;
    name_.clear();
  }

  /// Sender: copies @p n bytes, gathered from @p slices, into the ring when it has room.
  /// @returns false, having written nothing, when it has not (the payload then goes inline)
  template <class Slices>
  bool try_write(const Slices& slices, std::size_t n) noexcept {
    if (n < min_payload || n > capacity_) return false;
    const std::uint64_t consumed = tail().load(std::memory_order_acquire);
    const std::uint64_t start = placed(position_, n);
    // A receiver reporting more than was written is broken: never write past what it freed.
    if (consumed > position_ || start + n - consumed > capacity_) return false;
    std::byte* at = data() + start % capacity_;
    for (const auto& s : slices) {
      std::memcpy(at, s.data(), s.size());
      at += s.size();
    }
    position_ = start + n;
    head().store(position_, std::memory_order_release);
    return true;
  }

  /// Receiver: copies the next payload, of @p into.size() bytes, out of the ring and frees it.
  /// @returns false with @p reason when the sender has not written that much (a broken peer)
  bool read(boost::asio::mutable_buffer into, std::string& reason) {
    const std::size_t n = into.size();
    const std::uint64_t written = head().load(std::memory_order_acquire);
    const std::uint64_t start = placed(position_, n);
    if (n > capacity_ || written < start || written - start < n || written - position_ > capacity_) {
      reason = "payload of " + std::to_string(n) + " bytes is not in the shared-memory ring";
      return false;
    }
    std::memcpy(into.data(), data() + start % capacity_, n);
    position_ = start + n;
    tail().store(position_, std::memory_order_release);
    return true;
  }

 private:
  static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free,
                "the ring's positions must be lock-free atomics to be shared between processes");

  shared_ring(std::byte* base, std::size_t capacity, std::string name) noexcept
      : base_(base), capacity_(capacity), name_(std::move(name)) {}

  void release() noexcept {
    withdraw();
#if defined(__linux__)
    if (base_) ::munmap(base_, header_bytes + capacity_);
#endif
    base_ = nullptr;
  }

  // Where a payload of n bytes starts when the ring is at `at`: here, or at the next lap's start
  // when it would not fit before the end.
  std::uint64_t placed(std::uint64_t at, std::size_t n) const noexcept {
    const std::uint64_t offset = at % capacity_;
    return n > capacity_ - offset ? at + (capacity_ - offset) : at;
  }

  std::atomic_ref<std::uint64_t> head() const noexcept {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base_ + 64));
  }
  std::atomic_ref<std::uint64_t> tail() const noexcept {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base_ + 128));
  }
  std::byte* data() const noexcept { return base_ + header_bytes; }

  std::byte* base_ = nullptr;
  std::size_t capacity_ = 0;
  int fd_ = -1;                         // the sender's descriptor of the segment, until withdraw()
  std::string name_;                    // its /proc path, until withdraw(); the sender's only
  std::array<std::byte, 16> cookie_{};  // the sender's
  std::uint64_t position_ = 0;          // sender: bytes written; receiver: bytes read
};

}  // namespace dsgd::transport::detail
