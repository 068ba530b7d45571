#pragma once
/// @file normalization.hpp
/// The normalizations C_i. A row whose normalizer is zero (no admissible
/// neighbour, or weights that sum to zero) yields zeros, never NaN.

#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <xtensor/xarray.hpp>

#include <xtensor/xtensor.hpp>

#include "nonlocal/concepts.hpp"
#include "nonlocal/detail/errors.hpp"

namespace nonlocal {

/// C_i = sum_j exp(logit_ij) and s_ij = exp(logit_ij), whatever the similarity's
/// kappa: Transformer attention. Computed with the running row maximum subtracted.
struct softmax {
    static constexpr normalizer kind = normalizer::softmax;
};

/// C_i = sum_j s_ij.
struct sum {
    static constexpr normalizer kind = normalizer::sum;
};

/// C_i = |N(i)| (the non-local block's dot product and concatenation forms).
struct count {
    static constexpr normalizer kind = normalizer::count;
};

/// C_i = 1: the unnormalized sum.
struct none {
    static constexpr normalizer kind = normalizer::none;
};

namespace detail {

/// The values of an array the data term reads, in row-major order: the caller's own buffer
/// when it passes a row-major container of T by reference (no copy; it must outlive the
/// policy, as a span's must), an evaluated copy of anything else (an expression, a
/// temporary, another value type), so that nothing dangles.
template <class T>
class data_array {
public:
    template <class E>
    explicit data_array(E&& e) {
        using D = std::decay_t<E>;
        if constexpr (std::is_lvalue_reference_v<E> && borrowable<D>) {
            data_ = e.data() + e.data_offset();
            borrowed_ = true;
        } else {
            owned_ = xt::cast<T>(e);
            data_ = owned_.data();
        }
        shape_.assign(e.shape().begin(), e.shape().end());
    }
    data_array(const data_array& other)
        : owned_(other.owned_), data_(other.borrowed_ ? other.data_ : owned_.data()), shape_(other.shape_),
          borrowed_(other.borrowed_) {}
    data_array& operator=(const data_array&) = delete;

    const T* data() const noexcept { return data_; }
    const std::vector<std::size_t>& shape() const noexcept { return shape_; }
    std::size_t size() const noexcept {
        std::size_t count = 1;
        for (std::size_t e : shape_) count *= e;
        return count;
    }

private:
    template <class D>
    static constexpr bool borrowable = [] {
        if constexpr (xt::has_data_interface<D>::value) {
            return std::is_same_v<typename D::value_type, T> && D::static_layout == xt::layout_type::row_major;
        } else {
            return false;
        }
    }();

    xt::xarray<T> owned_;
    const T* data_ = nullptr;
    std::vector<std::size_t> shape_;
    bool borrowed_ = false;
};

/// The value type a data term stores an array of value type V in: V if floating-point, double otherwise.
template <class E>
using data_value_t = std::conditional_t<std::is_floating_point_v<typename std::decay_t<E>::value_type>,
                                        typename std::decay_t<E>::value_type, double>;

}  // namespace detail

/// The data term of one item of a batch: alpha [n] and target [n, dv] of `sum_with_data`.
template <class A, class Tg>
struct data_term_slice {
    static constexpr normalizer kind = normalizer::sum;

    const A* alpha;
    const Tg* target;
    std::size_t dv;

    double data_weight(std::size_t i) const noexcept { return double(alpha[i]); }
    double data_value(std::size_t i, std::size_t c) const noexcept { return double(target[i * dv + c]); }
};

/// C_i = sum_j s_ij + alpha_i, and alpha_i * target_i is added to the weighted sum:
///
///     y_i = (sum_j s_ij v_j + alpha_i t_i) / (sum_j s_ij + alpha_i)
///
/// This is one Jacobi sweep of the linear AR model (alpha_i > 0 on observed
/// pixels, target = the observations). alpha is [n] and target [n, dv] for [n, d]
/// inputs; for a batch [B, n, d] (or [B, H, n, d], the heads of an item sharing its data
/// term) they are [B, n] and [B, n, dv], or [n] and [n, dv] for every item. Both are read
/// where they lie when they are row-major containers of float or double passed by
/// reference (they must outlive the policy), evaluated once otherwise.
template <class A = double, class Tg = double>
class sum_with_data {
public:
    static constexpr normalizer kind = normalizer::sum;

    /// Throws `std::invalid_argument` unless alpha is [n] or [B, n] of finite values >= 0 and
    /// target [n, dv] or [B, n, dv] of the same B and n.
    template <class EA, class ET>
    sum_with_data(EA&& alpha, ET&& target) : alpha_(std::forward<EA>(alpha)), target_(std::forward<ET>(target)) {
        const auto& a = alpha_.shape();
        const auto& t = target_.shape();
        detail::require((a.size() == 1 && t.size() == 2 && t[0] == a[0]) ||
                            (a.size() == 2 && t.size() == 3 && t[0] == a[0] && t[1] == a[1]),
                        "sum_with_data", [&] {
                            return "alpha " + detail::shape_string(a) + " and target " + detail::shape_string(t) +
                                   " must be [n] and [n, dv], or [B, n] and [B, n, dv]";
                        });
        const A* values = alpha_.data();
        for (std::size_t i = 0; i < alpha_.size(); ++i)
            detail::require(std::isfinite(values[i]) && values[i] >= 0, "sum_with_data", [&] {
                return "alpha must be finite and >= 0, got " + std::to_string(double(values[i])) + " at " +
                       std::to_string(i);
            });
    }

    /// Batch items the data term holds (1 for [n] and [n, dv]: every item shares it).
    std::size_t items() const noexcept { return alpha_.shape().size() == 2 ? alpha_.shape()[0] : 1; }
    std::size_t rows() const noexcept { return alpha_.shape().back(); }
    std::size_t channels() const noexcept { return target_.shape().back(); }

    /// The data term of batch item b.
    data_term_slice<A, Tg> for_item(std::size_t b) const noexcept {
        const std::size_t item = items() == 1 ? 0 : b;
        return {alpha_.data() + item * rows(), target_.data() + item * rows() * channels(), channels()};
    }

    double data_weight(std::size_t i) const noexcept { return for_item(0).data_weight(i); }
    double data_value(std::size_t i, std::size_t c) const noexcept { return for_item(0).data_value(i, c); }

    /// Throws unless the data term fits `batch` items of n queries with dv value channels.
    void check(std::size_t batch, std::size_t n, std::size_t dv) const {
        detail::require((items() == 1 || items() == batch) && rows() == n && channels() == dv, "sum_with_data", [&] {
            return "alpha " + detail::shape_string(alpha_.shape()) + " and target " +
                   detail::shape_string(target_.shape()) + " do not fit " + std::to_string(batch) +
                   " batch item(s) of " + std::to_string(n) + " queries with " + std::to_string(dv) +
                   " value channels";
        });
    }

private:
    detail::data_array<A> alpha_;
    detail::data_array<Tg> target_;
};

template <class EA, class ET>
sum_with_data(EA&&, ET&&) -> sum_with_data<detail::data_value_t<EA>, detail::data_value_t<ET>>;

static_assert(normalization<softmax>);
static_assert(normalization<sum>);
static_assert(normalization<count>);
static_assert(normalization<none>);
static_assert(normalization<sum_with_data<>>);
static_assert(detail::has_data_term<sum_with_data<>>);
static_assert(detail::has_data_term<data_term_slice<float, double>>);

}  // namespace nonlocal
