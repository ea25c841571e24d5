#include "interp/core/machine.h"

#include "interp/dist/procs.h"

#include "interp/core/host_pool.h"
#include "interp/core/mapped_inputs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "isa/limits.h"

namespace nisa::interp {

HostBuffer::HostBuffer(size_t bytes, size_t shift) : n_(bytes), shift_(shift) {
  if (bytes == 0) return;
  if (shift % 64 != 0 || shift >= 4096)
    throw std::logic_error("HostBuffer: shift must be a multiple of 64 below 4096");
  constexpr size_t kHuge = size_t(2) << 20;
  // Huge pages need 2 MiB alignment: map a little more and trim both ends.
  const size_t len = (bytes + shift + 4095) & ~size_t(4095); // whole pages
  const size_t map = len >= kHuge ? len + kHuge : len;
  void* p = mmap(nullptr, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw OutOfMemory("a memory buffer", bytes);
  uint8_t* base = static_cast<uint8_t*>(p);
  if (map != len) {
    uint8_t* aligned =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~(kHuge - 1));
    if (aligned > base) munmap(base, aligned - base);
    size_t tail = (base + map) - (aligned + len);
    if (tail) munmap(aligned + len, tail);
    base = aligned;
    madvise(base, len, MADV_HUGEPAGE);
  }
  p_ = base + shift;
}
namespace {

// One memfd of poison bytes per process, kPoisonChunk long (or less), mapped repeatedly over a
// lazy buffer: filling it costs 512 pages once, not the whole buffer's size. (512 KiB chunks
// tripled the page faults of fg_allgather's 128 lazy SBUFs and doubled its system time.)
constexpr size_t kPoisonChunk = size_t(2) << 20;
size_t poison_size = 0; // what the file holds so far
std::mutex poison_mu;   // Machines may be made on several threads (the Python module)
int poison_file(size_t bytes) {
  std::lock_guard<std::mutex> lock(poison_mu);
  static int fd = -1;
  size_t& size = poison_size;
  if (fd < 0) {
    fd = memfd_create("nisa-poison", MFD_CLOEXEC);
    if (fd < 0) throw HostError("cannot create the poison file (memfd_create)");
  }
  if (bytes > size) {
    if (ftruncate(fd, off_t(bytes)) != 0)
      throw HostError(fmt::format("cannot size the poison file to {} bytes", bytes));
    // One page of poison written over and over (pwritev): a staging buffer of the whole size
    // would cost its own first touch (~1.5 ms for 2 MiB here), more than the write.
    static const auto page = [] {
      std::array<uint8_t, 4096> p;
      p.fill(kPoisonByte);
      return p;
    }();
    std::array<iovec, 64> iov;
    for (iovec& v : iov) v = {const_cast<uint8_t*>(page.data()), page.size()};
    for (size_t at = size; at < bytes;) {
      const size_t left = bytes - at, n = std::min(iov.size(), (left + 4095) / 4096);
      iov[n - 1].iov_len = std::min<size_t>(4096, left - (n - 1) * 4096);
      ssize_t w = pwritev(fd, iov.data(), int(n), off_t(at));
      iov[n - 1].iov_len = 4096;
      if (w <= 0) throw HostError("cannot fill the poison file");
      at += size_t(w);
    }
    size = bytes;
  }
  return fd;
}

} // namespace

HostBuffer HostBuffer::lazy_poison(size_t bytes) {
  HostBuffer b;
  if (bytes == 0) return b;
  const size_t len = (bytes + 4095) & ~size_t(4095);
  const int fd = poison_file(std::min(len, kPoisonChunk));
  // The range reserved at once, then the poison file mapped over it chunk by chunk (private:
  // a write copies the page, a read shares the file's).
  void* p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw OutOfMemory("a lazy memory buffer", bytes);
  uint8_t* base = static_cast<uint8_t*>(p);
  for (size_t at = 0; at < len; at += kPoisonChunk) {
    const size_t n = std::min(kPoisonChunk, len - at);
    if (mmap(base + at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
      munmap(base, len);
      throw HostError(fmt::format("cannot map {} bytes", bytes));
    }
  }
  b.p_ = base;
  b.n_ = bytes;
  b.pages_ = std::make_unique<LazyPages>(base, bytes);
  return b;
}

HostBuffer HostBuffer::file_backed(size_t bytes, const std::string& dir) {
  HostBuffer b;
  if (bytes == 0) return b;
  const size_t len = (bytes + 4095) & ~size_t(4095);
  // An unnamed file (O_TMPFILE): nothing is left behind, whatever ends the process.
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    throw HostError(
        fmt::format("--hbm-spill: cannot create a file in '{}': {}", dir, std::strerror(errno)));
  // Reserve the blocks now, so that a full disk is an error here and not a SIGBUS later.
  if (int e = posix_fallocate(fd, 0, off_t(len)); e != 0) {
    close(fd);
    throw HostError(fmt::format("--hbm-spill: cannot reserve {} bytes in '{}': {}", len, dir,
                                std::strerror(e)));
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd); // the mapping keeps the file
  if (p == MAP_FAILED && err == ENOMEM) throw OutOfMemory("a spilled buffer's mapping", bytes);
  if (p == MAP_FAILED)
    throw HostError(fmt::format("--hbm-spill: cannot map {} bytes: {}", bytes, std::strerror(err)));
  b.p_ = static_cast<uint8_t*>(p);
  b.n_ = bytes;
  return b;
}

HostBuffer HostBuffer::zeros(size_t bytes) {
  HostBuffer b;
  if (bytes == 0) return b;
  const size_t len = (bytes + 4095) & ~size_t(4095);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) throw OutOfMemory("a zeroed buffer", bytes);
  b.p_ = static_cast<uint8_t*>(p);
  b.n_ = bytes;
  b.anon_zeros_ = true;
  return b;
}

void HostBuffer::zero() {
  if (!p_) return;
  if (anon_zeros_ && madvise(p_, (n_ + 4095) & ~size_t(4095), MADV_DONTNEED) == 0) return;
  std::memset(p_, 0, n_);
}

void HostBuffer::repoison() {
  if (!p_) return;
  if (pages_) { // lazy: the pages written are poisoned in place, the rest show the file again
    pages_->repoison(kPoisonByte);
    return;
  }
  std::memset(p_, kPoisonByte, n_);
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : p_(o.p_), n_(o.n_), shift_(o.shift_), anon_zeros_(o.anon_zeros_),
      pages_(std::move(o.pages_)) {
  o.p_ = nullptr;
  o.n_ = 0;
}
HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  std::swap(shift_, o.shift_);
  std::swap(anon_zeros_, o.anon_zeros_);
  std::swap(pages_, o.pages_);
  return *this;
}
HostBuffer::~HostBuffer() {
  if (!p_) return;
  forget_mapped_inputs(p_ - shift_, n_ + shift_); // input files mapped into it (npy.h)
  munmap(p_ - shift_, n_ + shift_);
}

uint64_t Machine::tensor_bytes(const TensorDecl& t) {
  uint64_t n = dtype_bytes(t.dtype);
  for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t Machine::hbm_size(const Module& m, const MachineOptions& o) {
  const TargetParams& tp = target_params(o.target);
  uint64_t hbm = 4096;
  for (const TensorDecl& t : m.tensors) {
    // Objects are checked on loading and the assembler places nothing past these limits, but
    // a Module may come from anywhere: check again, without overflow.
    if (auto err = tensor_extent_error(t)) throw InputError(*err);
    if (t.space == MemSpace::hbm) {
      hbm = std::max(hbm, t.address + *checked_tensor_bytes(t));
    } else if (t.space == MemSpace::sbuf || t.space == MemSpace::psum) {
      const uint64_t cap = t.space == MemSpace::sbuf ? tp.sbuf_part_bytes : tp.psum_part_bytes;
      const uint64_t per_part = *checked_row_bytes(t); // < kMaxOnChipExtent - address
      if (t.part_start + uint64_t(t.shape[0]) > tp.partitions || t.address + per_part > cap)
        throw InputError(fmt::format("tensor '{}' does not fit the {} of {}", t.name,
                                     name_of(t.space), tp.name));
    }
    if (t.role != Role::scratch && t.space != MemSpace::hbm)
      throw InputError(fmt::format("kernel {} '{}' must be an hbm tensor, not {}", name_of(t.role),
                                   t.name, name_of(t.space)));
  }
  hbm = (hbm + 4095) & ~uint64_t(4095); // < 2^48 + 4096: no wrap
  if (hbm > o.max_hbm) {
    const TensorDecl* last = nullptr; // the tensor that ends highest
    for (const TensorDecl& t : m.tensors)
      if (t.space == MemSpace::hbm && (!last || t.address + *checked_tensor_bytes(t) >
                                                    last->address + *checked_tensor_bytes(*last)))
        last = &t;
    throw InputError(fmt::format(
        "the kernel needs {} bytes of HBM per rank (tensor '{}' ends at byte {}), more than "
        "the limit of {} bytes (--max-hbm)",
        hbm, last ? last->name : "?", last ? last->address + *checked_tensor_bytes(*last) : 0,
        o.max_hbm));
  }
  return hbm;
}

bool Machine::spill_hbm(uint64_t hbm, const MachineOptions& o) {
  if (o.hbm_spill != HbmSpill::automatic) return o.hbm_spill == HbmSpill::on;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return false;
  // Under MPI the ranks of the job's processes on this host (the largest block each).
  const int here =
      o.procs ? (o.ranks + o.procs->size() - 1) / o.procs->size() * mpi_local_size() : o.ranks;
  // --check-uninit: each rank's shadow (a byte per HBM byte) spills with its HBM.
  const unsigned __int128 total =
      (unsigned __int128)hbm * unsigned(here) * (o.check_uninit ? 2u : 1u);
  return total > (unsigned __int128)uint64_t(pages) * uint64_t(page) / 2;
}

namespace {

// A machine memory allocated by f(), named in the error when the host has no room for it.
template <class F> HostBuffer allocate(const std::string& what, uint64_t bytes, F&& f) {
  try {
    return f();
  } catch (const OutOfMemory&) {
    throw OutOfMemory(what, bytes);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(what, bytes);
  }
}

// SBUF or PSUM of one core: a lazy poison mapping (HostBuffer::lazy_poison: each page the
// kernel writes costs a fault and a 4 KiB copy, ~4-5 us here) when there are many cores or
// when the module's declarations of that memory span at most 1/8 of its pages; else an eager
// huge-page buffer that reset() poisons whole (~0.5 us per 4 KiB: a zeroing first touch and
// the memset). Undeclared bytes read as poison either way (raw ap(...) may reach them).
// stride: the host bytes from a partition to the next (interp/core/target.h host_stride()).
HostBuffer onchip_buffer(const Module& m, MemSpace space, uint64_t parts, uint64_t stride,
                         bool many) {
  const size_t bytes = parts * stride;
  if (many) return HostBuffer::lazy_poison(bytes);
  // The pages the declarations span (their union: small tensors share pages), partition by
  // partition; views alias their tensor and are not in the module.
  const size_t total = (bytes + 4095) / 4096;
  std::vector<bool> used(total, false);
  uint64_t pages = 0, n = 0;
  for (const TensorDecl& t : m.tensors) {
    if (t.space != space) continue;
    if (++n > 4096 || pages * 8 > total) return HostBuffer(bytes);     // (bounded work)
    const uint64_t row = std::max<uint64_t>(*checked_row_bytes(t), 1); // checked by hbm_size
    for (uint64_t p = t.part_start;
         p < std::min<uint64_t>(parts, t.part_start + uint64_t(t.shape[0])); ++p) {
      const uint64_t at = p * stride + t.address;
      for (uint64_t g = at / 4096; g <= (at + row - 1) / 4096 && g < total; ++g)
        if (!used[g]) used[g] = true, ++pages;
    }
  }
  if (pages * 8 > total) return HostBuffer(bytes);
  // A buffer of about one chunk or less (PSUM: 2 MiB + the partition pads) alone would pay the
  // poison file's fill, more than its eager memset: lazy only when the file is there already
  // (the SBUF went lazy).
  if (bytes < 2 * kPoisonChunk) {
    std::lock_guard<std::mutex> lock(poison_mu);
    if (poison_size < std::min(bytes, kPoisonChunk)) return HostBuffer(bytes);
  }
  // The poison file counts against a file-size limit (ulimit -f): under a small one, eager.
  rlimit fs{};
  if (getrlimit(RLIMIT_FSIZE, &fs) == 0 && fs.rlim_cur != RLIM_INFINITY &&
      fs.rlim_cur < std::min<rlim_t>(bytes, kPoisonChunk))
    return HostBuffer(bytes);
  try {
    return HostBuffer::lazy_poison(bytes);
  } catch (const HostError&) {
    return HostBuffer(bytes);
  }
}

} // namespace

Machine::Machine(const Module& m, const MachineOptions& o, InputFill fill) : mod(&m), opt(o) {
  tp = &target_params(o.target);
  if (o.lnc != 1 && o.lnc != 2)
    throw InputError(fmt::format("--lnc must be 1 or 2, not {}", o.lnc));
  if (o.lnc == 2 && !tp->lnc2)
    throw InputError(fmt::format("--lnc 2 is not available on {} (gen{})", tp->name, tp->gen));
  if (o.ranks < 1 || o.ranks > kMaxRanks)
    throw InputError(fmt::format("--ranks must be in 1..{}, not {}", kMaxRanks, o.ranks));
  for (int u = 0; u < kNumCostUnits; ++u)
    if (auto err = cost_scale_error(o.cost_scale[u]))
      throw InputError(
          fmt::format("--cost-scale {}={}: {}", kCostUnitNames[u], o.cost_scale[u], *err));

  const uint64_t hbm = hbm_size(m, o);
  const bool spilled = spill_hbm(hbm, o);
  hbm_spilled = spilled;
  std::string dir = o.spill_dir;
  if (dir.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir = t && *t ? t : "/tmp";
  }
  rank_lo = 0, rank_hi = o.ranks;
  if (o.procs) {
    rank_lo = Procs::lo(o.procs->rank(), o.procs->size(), o.ranks);
    rank_hi = Procs::lo(o.procs->rank() + 1, o.procs->size(), o.ranks);
  }
  ranks.resize(o.ranks);
  for (int i = 0; i < o.ranks; ++i) {
    RankSlot& r = ranks[size_t(i)];
    r.hbm_bytes = hbm;
    if (!local_rank(i)) continue;
    const size_t shift = size_t(i) < o.hbm_shift.size() ? o.hbm_shift[size_t(i)] : 0;
    r.hbm = allocate(fmt::format("rank {}'s HBM{}", i, spilled ? " (spilled)" : ""), hbm, [&] {
      return spilled ? HostBuffer::file_backed(hbm, dir) : HostBuffer(hbm, shift);
    });
    if (o.check_uninit)
      r.hbm_written =
          allocate(fmt::format("the --check-uninit shadow of rank {}'s HBM{}", i,
                               spilled ? " (spilled)" : ""),
                   hbm, [&] {
                     return spilled ? HostBuffer::file_backed(hbm, dir) : HostBuffer::zeros(hbm);
                   });
  }
  cores.resize(size_t(o.ranks) * o.lnc);
  const size_t local_cores = size_t(rank_hi - rank_lo) * size_t(o.lnc);
  for (size_t i = 0; i < cores.size(); ++i) {
    CoreSlot& c = cores[i];
    c.rank = static_cast<int>(i) / o.lnc;
    c.core = static_cast<int>(i) % o.lnc;
    c.st.sems.assign(m.sems.size(), 0);
    if (!local_rank(c.rank)) continue;
    // Many cores: SBUF and PSUM cost only the pages a kernel touches (docs/machine.md).
    const bool many = local_cores > kEagerCores;
    const uint64_t sbuf_bytes = uint64_t(tp->partitions) * tp->sbuf_stride,
                   psum_bytes = uint64_t(tp->partitions) * tp->psum_stride;
    c.sbuf = allocate(fmt::format("the SBUF of rank {} core {}", c.rank, c.core), sbuf_bytes, [&] {
      return onchip_buffer(m, MemSpace::sbuf, tp->partitions, tp->sbuf_stride, many);
    });
    c.psum = allocate(fmt::format("the PSUM of rank {} core {}", c.rank, c.core), psum_bytes, [&] {
      return onchip_buffer(m, MemSpace::psum, tp->partitions, tp->psum_stride, many);
    });
    c.st.sbuf = c.sbuf.data();
    c.st.sbuf_part_bytes = tp->sbuf_part_bytes;
    c.st.sbuf_stride = tp->sbuf_stride;
    c.st.sbuf_lazy = c.sbuf.lazy_pages();
    c.st.psum = c.psum.data();
    c.st.psum_lazy = c.psum.lazy_pages();
    c.st.psum_part_bytes = tp->psum_part_bytes;
    c.st.psum_stride = tp->psum_stride;
    c.st.psum_written.assign(tp->partitions * tp->psum_stride / 4, 0);
    if (o.check_uninit) {
      c.sbuf_written = allocate(
          fmt::format("the --check-uninit shadow of the SBUF of rank {} core {}", c.rank, c.core),
          c.sbuf.size(), [&] { return HostBuffer::zeros(c.sbuf.size()); });
      c.psum_written_bytes = allocate(
          fmt::format("the --check-uninit shadow of the PSUM of rank {} core {}", c.rank, c.core),
          c.psum.size(), [&] { return HostBuffer::zeros(c.psum.size()); });
    }
  }
  reset(fill);
}

std::vector<std::pair<uint64_t, uint64_t>> Machine::input_ranges() const {
  std::vector<std::pair<uint64_t, uint64_t>> in, out;
  for (const TensorDecl& t : mod->tensors)
    if (t.role == Role::input && t.space == MemSpace::hbm)
      in.push_back({t.address, t.address + tensor_bytes(t)}); // checked by hbm_size
  std::sort(in.begin(), in.end());
  for (const auto& r : in)
    if (!out.empty() && r.first <= out.back().second)
      out.back().second = std::max(out.back().second, r.second);
    else
      out.push_back(r);
  return out;
}

void Machine::reset(InputFill fill) {
  // Poison all of a rank's HBM, or all but the inputs' bytes (gaps between tensors, the parts
  // of other tensors no input overlaps and the 4 KiB rounding are still poisoned).
  std::vector<std::pair<uint64_t, uint64_t>> keep;
  if (fill == InputFill::caller_writes) keep = input_ranges();
  // The HBM bytes to poison, in slices of at most kByteSlice when there are host threads to
  // share them (one rank's 9 MB of scratch and outputs was a one-thread memset beside an idle
  // core), every rank's in one hand-off.
  std::vector<std::pair<uint8_t*, size_t>> spans;
  auto add_span = [&](uint8_t* p, size_t n, bool slice) {
    const size_t step = slice ? kByteSlice : n;
    for (size_t at = 0; at < n; at += step) spans.push_back({p + at, std::min(n - at, step)});
  };
  auto reset_core = [&](CoreSlot& c) {
    // (A fresh lazy buffer reads as poison already: no pagemap read for each of 128 cores.)
    if (!fresh_ || !c.sbuf.lazy()) c.sbuf.repoison();
    if (!fresh_ || !c.psum.lazy()) c.psum.repoison();
    std::fill(c.st.psum_written.begin(), c.st.psum_written.end(), 0);
    if (!fresh_) {
      c.sbuf_written.zero();
      c.psum_written_bytes.zero();
    }
    std::fill(std::begin(c.st.act_acc), std::end(c.st.act_acc), 0.0f);
    std::fill(std::begin(c.st.dve_acc), std::end(c.st.dve_acc), 0.0f);
    std::memset(c.st.regs, 0, sizeof c.st.regs);
    for (size_t s = 0; s < mod->sems.size(); ++s) c.st.sems[s] = mod->sems[s].init;
  };
  // Ranks and cores on the host threads: the first touch of fresh pages (the kernel zeroing
  // them) and the poison fill are most of a small run's set-up.
  const bool one = std::max(ranks.size(), cores.size()) < 2;
  HostPool* pool = one ? nullptr : host_pool(opt.threads);
  auto each = [&](auto* v, size_t n, auto&& f) {
    run_each(pool, int(n), [&](int i) { f(v[size_t(i)]); });
  };
  const size_t lnc = size_t(opt.lnc), lo = size_t(rank_lo), n = size_t(rank_hi - rank_lo);
  for (size_t i = lo; i < lo + n; ++i) {
    RankSlot& r = ranks[i];
    uint64_t at = 0;
    for (const auto& [b, e] : keep) {
      add_span(r.hbm.data() + at, b - at, pool != nullptr);
      at = e;
    }
    add_span(r.hbm.data() + at, r.hbm.size() - at, pool != nullptr);
    if (!fresh_) r.hbm_written.zero();
  }
  each(spans.data(), spans.size(), [](const std::pair<uint8_t*, size_t>& sp) {
    std::memset(sp.first, kPoisonByte, sp.second);
  });
  each(cores.data() + lo * lnc, n * lnc, reset_core);
  fresh_ = false;
}

HostPool* Machine::host_pool(int threads) {
  if (threads <= 1) return nullptr;
  if (!pool_ || pool_->threads() != threads) pool_ = std::make_unique<HostPool>(threads);
  return pool_.get();
}

const TensorDecl* Machine::find_tensor(std::string_view name) const {
  for (const TensorDecl& t : mod->tensors)
    if (t.name == name) return &t;
  return nullptr;
}

uint8_t* Machine::hbm_tensor(int rank, const TensorDecl& t) const {
  if (!local_rank(rank)) return nullptr;
  return ranks[rank].hbm.data() + t.address;
}

void Machine::write_tensor(const TensorDecl& t, const uint8_t* bytes, int rank) {
  uint64_t n = tensor_bytes(t);
  for (int r = rank_lo; r < rank_hi; ++r) {
    if (rank >= 0 && r != rank) continue;
    std::memcpy(hbm_tensor(r, t), bytes, n);
    if (opt.check_uninit) std::memset(ranks[r].hbm_written.data() + t.address, 1, n);
  }
}

void Machine::mark_written(const TensorDecl& t, int rank) {
  if (opt.check_uninit && local_rank(rank))
    std::memset(ranks[rank].hbm_written.data() + t.address, 1, tensor_bytes(t));
}

uint8_t* Machine::shadow_of(const uint8_t* p) {
  auto in = [p](const HostBuffer& b) { return p >= b.data() && p < b.data() + b.size(); };
  for (RankSlot& r : ranks)
    if (in(r.hbm)) return r.hbm_written.data() + (p - r.hbm.data());
  for (CoreSlot& c : cores) {
    if (in(c.sbuf)) return c.sbuf_written.data() + (p - c.sbuf.data());
    if (in(c.psum)) return c.psum_written_bytes.data() + (p - c.psum.data());
  }
  return nullptr;
}

} // namespace nisa::interp
