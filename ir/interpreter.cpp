#include "ir/interpreter.h"

#include <fmt/format.h>

#include <stdexcept>

#include "ir/dtype.h"

namespace sparsegen {

float round_to(DType t, float v) {
  switch (t) {
    case DType::F32: return v;
    case DType::F16: return half_bits_to_float(float_to_half_bits(v));
    case DType::BF16: return bf16_bits_to_float(float_to_bf16_bits(v));
    case DType::I8: return static_cast<float>(float_to_int8(v));
    case DType::F8E4M3: return e4m3_bits_to_float(float_to_e4m3_bits(v));
  }
  return v;
}

void reference_spmm(const Problem& p, const CsrMatrix& a, std::span<const float> b,
                    std::span<float> c, float alpha, float beta) {
  if (static_cast<int64_t>(b.size()) < p.k * p.n || static_cast<int64_t>(c.size()) < p.m * p.n)
    throw std::invalid_argument("reference_spmm: B or C smaller than the problem");
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t col = 0; col < p.n; ++col) {
      float acc = 0.0f;
      for (int64_t e = a.row_ptr[static_cast<size_t>(r)]; e < a.row_ptr[static_cast<size_t>(r + 1)];
           ++e)
        acc += round_to(p.dtype, a.values[static_cast<size_t>(e)]) *
               round_to(p.dtype, b[static_cast<size_t>(p.b_index(a.col_idx[static_cast<size_t>(e)], col))]);
      float& out = c[static_cast<size_t>(p.c_index(r, col))];
      const float old = beta == 0.0f ? 0.0f : beta * round_to(p.dtype, out);
      out = round_to(p.dtype, alpha * acc + old);
    }
}

namespace {

// A partial result for one packed row over the current pass's columns; npos counts the packed
// positions summed into it (the coverage check).
struct Seg {
  int64_t row = 0;
  int64_t npos = 0;
  std::vector<float> v;
};

[[noreturn]] void broken(const std::string& msg) {
  throw std::logic_error("interpreter: plan invariant broken: " + msg);
}

class Interp {
 public:
  Interp(const Problem& p, const GeneralSchedule& s, const PackedFormat& f,
         std::span<const float> b, std::span<float> c, float alpha, float beta)
      : p_(p), s_(s), f_(f), c_(c), alpha_(alpha), beta_(beta) {
    bq_.resize(static_cast<size_t>(p.k * p.n));
    for (size_t i = 0; i < bq_.size(); ++i) bq_[i] = round_to(p.dtype, b[i]);
    const int64_t rows = f.stats.rows;
    written_.assign(static_cast<size_t>(rows), 0);
    covered_.assign(static_cast<size_t>(rows), 0);
  }

  void run() {
    const int64_t wc = s_.warp_cols();
    const bool atomic = f_.output == OutputMode::Atomic;
    if (atomic) {  // prologue: ws = beta·C in fp32 for every element (C unread when beta == 0)
      ws_.resize(static_cast<size_t>(p_.m * p_.n));
      for (size_t i = 0; i < ws_.size(); ++i)
        ws_[i] = beta_ == 0.0f ? 0.0f : beta_ * round_to(p_.dtype, c_[i]);
    }
    for (int64_t tile = 0; tile < f_.stats.col_tiles; ++tile)
      for (int64_t pass = 0; pass * wc < s_.block_cols; ++pass) {
        col_base_ = tile * s_.block_cols + pass * wc;
        if (col_base_ >= p_.n) continue;
        track_ = tile == 0 && pass == 0;
        for (int64_t t = 0; t < f_.at(Level::Block).tasks; ++t) {
          std::vector<Seg> up = run_level(Level::Block, t);
          for (Seg& sg : up) {
            if (f_.output == OutputMode::Store && s_.reduction(Level::Block) != ReductionKind::Total)
              broken(fmt::format("block task {} hands up a partial but nothing above reduces it",
                                 t));
            write(sg, "block", t);
          }
        }
      }
    if (atomic)  // epilogue: the one rounding to dtype
      for (size_t i = 0; i < ws_.size(); ++i) c_[i] = round_to(p_.dtype, ws_[i]);
    check_coverage();
  }

 private:
  const LevelArrays& lv(Level l) const { return f_.at(l); }
  int64_t row_len(int64_t r) const {
    return f_.row_ptr.values[static_cast<size_t>(r + 1)] - f_.row_ptr.values[static_cast<size_t>(r)];
  }

  Seg empty_seg(int64_t row) const {
    return Seg{row, 0, std::vector<float>(static_cast<size_t>(s_.warp_cols()), 0.0f)};
  }

  void accumulate(Seg& sg, int64_t pos) const {
    const size_t sp = static_cast<size_t>(storage_pos(s_, f_, pos));
    const float a = round_to(p_.dtype, f_.values[sp]);
    const int64_t col_a = f_.col_idx[sp];
    if (col_a < 0 || col_a >= p_.k) broken(fmt::format("column {} out of range at {}", col_a, pos));
    const int64_t ncols = std::min<int64_t>(s_.warp_cols(), p_.n - col_base_);
    for (int64_t j = 0; j < ncols; ++j)
      sg.v[static_cast<size_t>(j)] += a * bq_[static_cast<size_t>(p_.b_index(col_a, col_base_ + j))];
    ++sg.npos;
  }

  void add_into(Seg& dst, const Seg& src) const {
    for (size_t j = 0; j < dst.v.size(); ++j) dst.v[j] += src.v[j];
    dst.npos += src.npos;
  }

  // Stores (Store) a result, or adds it to the fp32 workspace (Atomic); Store requires a complete
  // row.
  void write(const Seg& sg, const char* who, int64_t task) {
    if (sg.row < 0 || sg.row >= f_.stats.rows)
      broken(fmt::format("{} task {} writes packed row {} of {}", who, task, sg.row, f_.stats.rows));
    if (track_) {
      covered_[static_cast<size_t>(sg.row)] += sg.npos;
      ++written_[static_cast<size_t>(sg.row)];
      if (f_.output == OutputMode::Store && sg.npos != row_len(sg.row))
        broken(fmt::format("{} task {} stores row {} with {} of its {} entries", who, task, sg.row,
                           sg.npos, row_len(sg.row)));
    }
    const int64_t orig = f_.perm.values[static_cast<size_t>(sg.row)];
    const int64_t ncols = std::min<int64_t>(s_.warp_cols(), p_.n - col_base_);
    for (int64_t j = 0; j < ncols; ++j) {
      const size_t i = static_cast<size_t>(p_.c_index(orig, col_base_ + j));
      const float val = alpha_ * sg.v[static_cast<size_t>(j)];
      if (f_.output == OutputMode::Store) {
        const float old = beta_ == 0.0f ? 0.0f : beta_ * round_to(p_.dtype, c_[i]);
        c_[i] = round_to(p_.dtype, val + old);
      } else {
        ws_[i] += val;
      }
    }
  }

  // True when the level above `l` combines what `l` hands up (else `l` writes its results).
  bool parent_reduces(Level l) const {
    if (l == Level::Block) return false;
    const Level parent = l == Level::Thread ? Level::Warp : Level::Block;
    return s_.reduction(parent) != ReductionKind::None;
  }

  // A thread-group task: sums its entries per the thread reduction; returns what it hands up.
  std::vector<Seg> run_thread(int64_t u) {
    const LevelArrays& L = lv(Level::Thread);
    const int64_t nzb = L.nz_begin.values[static_cast<size_t>(u)];
    const int64_t nze = L.nz_begin.values[static_cast<size_t>(u + 1)];
    const int64_t r0 = L.row_begin.values[static_cast<size_t>(u)];
    const LevelSplit& sp = s_.at(Level::Thread);
    std::vector<Seg> out;
    if (s_.reduction(Level::Thread) == ReductionKind::Total) {
      if (sp.kind == WorkSplit::Nnz) {
        Seg sg = empty_seg(r0);
        const int64_t rb = f_.row_ptr.values[static_cast<size_t>(r0)];
        const int64_t re = f_.row_ptr.values[static_cast<size_t>(r0 + 1)];
        if (nzb < rb || nze > re)
          broken(fmt::format("thread task {} [{}, {}) is Total but leaves row {} [{}, {})", u, nzb,
                             nze, r0, rb, re));
        for (int64_t pos = nzb; pos < nze; ++pos) accumulate(sg, pos);
        out.push_back(std::move(sg));
      } else {  // whole rows, summed one by one
        const int64_t r1 = L.row_begin.values[static_cast<size_t>(u + 1)];
        for (int64_t r = r0; r < r1; ++r) {
          Seg sg = empty_seg(r);
          for (int64_t pos = f_.row_ptr.values[static_cast<size_t>(r)];
               pos < f_.row_ptr.values[static_cast<size_t>(r + 1)]; ++pos)
            accumulate(sg, pos);
          out.push_back(std::move(sg));
        }
      }
    } else {  // Bitmap: a new row wherever the row-start bit is set
      int64_t row = r0;
      Seg cur = empty_seg(row);
      for (int64_t pos = nzb; pos < nze; ++pos) {
        const bool start = (f_.row_start_bits[static_cast<size_t>(pos / 32)] >> (pos % 32)) & 1u;
        if (start && pos > nzb) {
          out.push_back(std::move(cur));
          ++row;
          cur = empty_seg(row);
        }
        if (f_.row_ptr.values[static_cast<size_t>(row)] > pos ||
            f_.row_ptr.values[static_cast<size_t>(row + 1)] <= pos)
          broken(fmt::format("thread task {}: row-start bits put position {} in row {}", u, pos,
                             row));
        accumulate(cur, pos);
      }
      out.push_back(std::move(cur));
      // Interior segments are whole rows: the thread writes them; head and tail go up.
      if (out.size() > 2) {
        for (size_t i = 1; i + 1 < out.size(); ++i) write(out[i], "thread", u);
        std::vector<Seg> ends;
        ends.push_back(std::move(out.front()));
        ends.push_back(std::move(out.back()));
        out = std::move(ends);
      }
    }
    if (!parent_reduces(Level::Thread)) {
      for (const Seg& sg : out) write(sg, "thread", u);
      out.clear();
    }
    return out;
  }

  std::vector<Seg> run_child(Level child, int64_t t) {
    return child == Level::Thread ? run_thread(t) : run_level(Level::Warp, t);
  }

  // A block or warp task: deals child tasks round-robin to C workers, then reduces.
  std::vector<Seg> run_level(Level l, int64_t t) {
    const LevelArrays& L = lv(l);
    const Level child = l == Level::Block ? Level::Warp : Level::Thread;
    const int64_t c0 = L.child_begin.values[static_cast<size_t>(t)];
    const int64_t c1 = L.child_begin.values[static_cast<size_t>(t + 1)];
    const int64_t C = s_.children(l);
    const ReductionKind red = s_.reduction(l);
    const std::string who = fmt::format("{} task {}", to_string(l), t);
    std::vector<Seg> out;

    if (red == ReductionKind::None) {
      for (int64_t w = 0; w < C; ++w)
        for (int64_t k = c0 + w; k < c1; k += C)
          if (!run_child(child, k).empty()) broken(who + ": reduction none but a child hands up");
    } else if (red == ReductionKind::Total) {
      // Each worker accumulates its rounds in registers, then the workers are summed.
      const int64_t row = L.row_begin.values[static_cast<size_t>(t)];
      Seg total = empty_seg(row);
      for (int64_t w = 0; w < C; ++w) {
        Seg acc = empty_seg(row);
        for (int64_t k = c0 + w; k < c1; k += C)
          for (const Seg& sg : run_child(child, k)) {
            if (sg.row != row)
              broken(fmt::format("{}: Total reduction over rows {} and {}", who, row, sg.row));
            add_into(acc, sg);
          }
        add_into(total, acc);
      }
      out.push_back(std::move(total));
    } else {
      if (c1 - c0 > C) broken(fmt::format("{}: {} children for {} workers in a {} reduction", who,
                                          c1 - c0, C, to_string(red)));
      std::vector<Seg> runs;  // merged segments in position order
      for (int64_t k = c0; k < c1; ++k) {
        std::vector<Seg> got = run_child(child, k);
        if (red == ReductionKind::Bitmap) {
          if (got.size() != 1) broken(who + ": Bitmap child hands up other than one partial");
          const bool new_row = (L.bitmap[static_cast<size_t>(t)] >> (k - c0)) & 1u;
          if (new_row != (runs.empty() || runs.back().row != got[0].row))
            broken(fmt::format("{}: bitmap bit {} disagrees with rows", who, k - c0));
          if (new_row) runs.push_back(std::move(got[0]));
          else add_into(runs.back(), got[0]);
        } else {  // Segment: merge neighbours of the same row
          for (Seg& sg : got) {
            if (!runs.empty() && runs.back().row == sg.row) add_into(runs.back(), sg);
            else runs.push_back(std::move(sg));
          }
        }
      }
      if (runs.size() > 2) {
        for (size_t i = 1; i + 1 < runs.size(); ++i) write(runs[i], to_string(l).data(), t);
        out.push_back(std::move(runs.front()));
        out.push_back(std::move(runs.back()));
      } else {
        out = std::move(runs);
      }
    }
    if (l == Level::Warp && !parent_reduces(Level::Warp)) {
      for (const Seg& sg : out) write(sg, "warp", t);
      out.clear();
    }
    return out;
  }

  void check_coverage() const {
    if (p_.n == 0) return;
    for (int64_t r = 0; r < f_.stats.rows; ++r) {
      const size_t i = static_cast<size_t>(r);
      if (covered_[i] != row_len(r))
        broken(fmt::format("packed row {} covered {} of its {} entries", r, covered_[i], row_len(r)));
      if (f_.output == OutputMode::Store && written_[i] != 1)
        broken(fmt::format("packed row {} stored {} times", r, written_[i]));
    }
  }

  const Problem& p_;
  const GeneralSchedule& s_;
  const PackedFormat& f_;
  std::span<float> c_;
  float alpha_, beta_;
  std::vector<float> bq_;
  std::vector<float> ws_;  // Atomic: fp32 accumulation, C's layout (the kernels' workspace)
  int64_t col_base_ = 0;
  bool track_ = false;
  std::vector<int64_t> written_, covered_;
};

}  // namespace

void interpret(const Problem& p, const Schedule& s, const PackedFormat& f,
               std::span<const float> b, std::span<float> c, float alpha, float beta) {
  if (static_cast<int64_t>(b.size()) < p.k * p.n || static_cast<int64_t>(c.size()) < p.m * p.n)
    throw std::invalid_argument("interpret: B or C smaller than the problem");
  if (p.m == 0 || p.n == 0) return;
  Interp(p, s.as<GeneralSchedule>(), f, b, c, alpha, beta).run();
}

}  // namespace sparsegen
