#pragma once

// SortedBlocks: an ordered set of distinct values held as a list of sorted blocks, for the node
// indexes (cluster_index.h, Index::keys). It answers what the placement walks ask of a std::set
// (lower_bound, stepping forwards and backwards, begin and end) and moves a value as the
// allocation changes, but keeps the values in contiguous blocks of at most kMaxBlock values: a
// search is a binary search over the blocks' last values (one small array) and then inside one
// block, instead of a descent through a tree node per level, each a likely cache miss on a cluster
// of thousands of nodes (a std::set over 10,000 keys is 14 levels deep). An insertion or erasure
// moves at most one block's tail (kMaxBlock values).
//
// Contract: values are totally ordered by operator<; inserting a value already present leaves
// the set unchanged. Any insertion or erasure invalidates every iterator (unlike std::set);
// the placement walks never change an index while they walk it. Not thread-safe.

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace drover::sched::internal {

template <typename T>
class SortedBlocks {
 public:
  // A block splits in two past this many values (64 NodeKeys: 2 KiB, a short move per change).
  static constexpr std::size_t kMaxBlock = 64;

  class const_iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    const_iterator() = default;
    reference operator*() const { return (*blocks_)[block_][offset_]; }
    pointer operator->() const { return &(*blocks_)[block_][offset_]; }
    const_iterator& operator++() {
      if (++offset_ == (*blocks_)[block_].size()) {
        ++block_;
        offset_ = 0;
      }
      return *this;
    }
    const_iterator& operator--() {
      if (offset_ == 0) {
        --block_;
        offset_ = (*blocks_)[block_].size();
      }
      --offset_;
      return *this;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.block_ == b.block_ && a.offset_ == b.offset_;
    }

   private:
    friend class SortedBlocks;
    const_iterator(const std::vector<std::vector<T>>* blocks, std::size_t block, std::size_t offset)
        : blocks_(blocks), block_(block), offset_(offset) {}

    const std::vector<std::vector<T>>* blocks_ = nullptr;
    std::size_t block_ = 0;   // blocks_->size() at the end
    std::size_t offset_ = 0;  // 0 at the end
  };

  const_iterator begin() const { return const_iterator(&blocks_, 0, 0); }
  const_iterator end() const { return const_iterator(&blocks_, blocks_.size(), 0); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    blocks_.clear();
    lasts_.clear();
    size_ = 0;
  }

  // The first value not less than `value`, or end().
  const_iterator lower_bound(const T& value) const {
    const std::size_t block = BlockFor(value);
    if (block == blocks_.size()) return end();
    const std::vector<T>& values = blocks_[block];
    const auto at = std::lower_bound(values.begin(), values.end(), value);
    return const_iterator(&blocks_, block, static_cast<std::size_t>(at - values.begin()));
  }

  // Adds `value`; false (and no change) if an equal value is present.
  bool insert(const T& value) {
    std::size_t block = BlockFor(value);
    if (block == blocks_.size()) {  // past every value: the last block (or a first one)
      if (blocks_.empty()) {
        blocks_.emplace_back();
        lasts_.emplace_back(value);
      }
      block = blocks_.size() - 1;
    }
    std::vector<T>& values = blocks_[block];
    const auto at = std::lower_bound(values.begin(), values.end(), value);
    if (at != values.end() && !(value < *at)) return false;
    values.insert(at, value);
    lasts_[block] = values.back();
    ++size_;
    if (values.size() > kMaxBlock) Split(block);
    return true;
  }

  // Removes the value equal to `value`; the number removed (0 or 1).
  std::size_t erase(const T& value) {
    const std::size_t block = BlockFor(value);
    if (block == blocks_.size()) return 0;
    std::vector<T>& values = blocks_[block];
    const auto at = std::lower_bound(values.begin(), values.end(), value);
    if (at == values.end() || value < *at) return 0;
    values.erase(at);
    --size_;
    if (values.empty()) {
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(block));
      lasts_.erase(lasts_.begin() + static_cast<std::ptrdiff_t>(block));
    } else {
      lasts_[block] = values.back();
    }
    return 1;
  }

 private:
  // The first block whose last value is not less than `value` (blocks_.size() if none).
  std::size_t BlockFor(const T& value) const {
    return static_cast<std::size_t>(std::lower_bound(lasts_.begin(), lasts_.end(), value) -
                                    lasts_.begin());
  }

  void Split(std::size_t block) {
    std::vector<T>& values = blocks_[block];
    const auto half = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::vector<T> upper(half, values.end());
    values.erase(half, values.end());
    lasts_[block] = values.back();
    const auto next = static_cast<std::ptrdiff_t>(block) + 1;
    lasts_.insert(lasts_.begin() + next, upper.back());
    blocks_.insert(blocks_.begin() + next, std::move(upper));
  }

  std::vector<std::vector<T>> blocks_;  // sorted, each non-empty, in ascending order
  std::vector<T> lasts_;                // by block: its last (greatest) value
  std::size_t size_ = 0;
};

}  // namespace drover::sched::internal
