#pragma once
/// @file kernel/lowering.hpp
/// Distances and cosines as dot products, so that the tiled kernels' dot-product
/// micro-kernels compute them. With q' = q - mu and k' = k - mu, mu the mean of the
/// queries and keys (distances do not change under a common shift, and the shift keeps
/// the terms below as small as the data allows):
///
///     scale |q - k|^2 = < [-2 scale q', scale |q'|^2, 1], [k', 1, |k'|^2] >     (d + 2 features)
///     scale <q, k> / (|q| |k|) = < scale q / |q|, k / |k| >                       (0 for a zero vector)
///     activation(a + b) = activation(< [a, 1], [1, b] >)                            (separable, one feature)
///
/// The distance form cancels: its terms are of the size of |q'|^2 + |k'|^2 while the
/// distance may be far smaller. The rounding error of the logit, in the dot product of
/// d + 2 terms, is then typically at most
///
///     cancellation_bound = 2 sqrt(d + 2) eps |scale| (max_i |q'_i| + max_j |k'_j|)^2
///
/// (eps the value type's), which is also the relative error of an exponential weight.
/// Where that exceeds `cancellation_tolerance` and the weights are exponentials, the
/// dispatch computes the distance from the differences of the features instead
/// (kernel/logit.hpp's `tile_scorer`), exactly as the reference does.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "nonlocal/buffer.hpp"
#include "nonlocal/concepts.hpp"
#include "nonlocal/row_matrix.hpp"
#include "nonlocal/simd/vector_ops.hpp"
#include "nonlocal/similarity/dot_product.hpp"

namespace nonlocal {

namespace kernel {

/// The largest `cancellation_bound` at which exponential weights use the lowered distance:
/// 2^-12, a relative error of the weights of 2.4e-4.
inline constexpr double cancellation_tolerance = 1.0 / 4096;

/// A similarity that the tiled kernels compute as the dot product of lowered features.
template <class S>
concept lowered_similarity = detail::has_logit_form<S, distance_form> || detail::has_logit_form<S, cosine_form> ||
                             detail::has_logit_form<S, separable_form>;

/// What lowering makes of a similarity: a dot product with S's kappa, and S's activation applied
/// to each score for a separable one (the tiled kernels' `tile_scorer` applies it per tile).
template <class S>
struct lowered_dot : detail::scaled_dot<weight_function_t<S>> {
    S original;
};
template <class S>
    requires detail::has_logit_form<S, separable_form>
struct lowered_dot<S> : detail::scaled_dot<weight_function_t<S>> {
    S original;
    template <class V>
    V activation(V score) const { return original.activation(score); }
};

/// Queries and keys whose dot product is a distance or cosine similarity's logit, computed
/// with the instructions of `Arch`.
template <class Arch, class T>
class lowered_features {
public:
    /// Lowers the [n, d] queries `q` and [m, d] keys `k` of a similarity of the distance form,
    /// the cosine form (whose scale is `scale`) or the separable form (d = 1).
    template <class Form>
    lowered_features(row_matrix<const T> q, row_matrix<const T> k, double scale, Form)
        : dim_(std::is_same_v<Form, cosine_form> ? q.cols : q.cols + (std::is_same_v<Form, distance_form> ? 2 : 1)),
          rows_(q.rows), keys_(k.rows), q_(q.rows * dim_), k_(k.rows * dim_) {
        if constexpr (std::is_same_v<Form, distance_form>) lower_distance(q, k, scale);
        else if constexpr (std::is_same_v<Form, cosine_form>) lower_cosine(q, k, scale);
        else lower_sum(q, k);
    }

    row_matrix<const T> queries() const noexcept { return {q_.data(), rows_, dim_}; }
    row_matrix<const T> keys() const noexcept { return {k_.data(), keys_, dim_}; }

    /// The typical bound of the logit's rounding error (the file's comment); 0 for cosines.
    double cancellation_bound() const noexcept { return bound_; }

private:
    /// The mean of the rows of q and k together, accumulated in double (the mean of features of
    /// magnitude 1e3 must be exact to their differences), rounded to T.
    static std::vector<T> mean(row_matrix<const T> q, row_matrix<const T> k) {
        std::vector<double> sum(q.cols, 0.0);
        std::vector<T> block(q.cols);
        for (const auto& x : {q, k})
            for (std::size_t i0 = 0; i0 < x.rows; i0 += 16) {   // 16 rows summed in T, then in double
                std::fill(block.begin(), block.end(), T(0));
                for (std::size_t i = i0; i < std::min(x.rows, i0 + 16); ++i)
                    simd::axpy<Arch>(T(1), x.row(i).data(), block.data(), x.cols);
                for (std::size_t c = 0; c < x.cols; ++c) sum[c] += double(block[c]);
            }
        const double rows = double(std::max<std::size_t>(q.rows + k.rows, 1));
        std::vector<T> mu(q.cols);
        for (std::size_t c = 0; c < q.cols; ++c) mu[c] = T(sum[c] / rows);
        return mu;
    }

    /// Writes factor (x - mu) into `to` (rows of dim_ values) and returns each row's |x - mu|^2.
    /// For features close to mu, x - mu is exact (Sterbenz), whatever their magnitude.
    std::vector<T> center(row_matrix<const T> x, const std::vector<T>& mu, T* to, T factor) const {
        std::vector<T> squares(x.rows);
        for (std::size_t i = 0; i < x.rows; ++i) {
            T* row = to + i * dim_;
            simd::copy<Arch>(x.row(i).data(), x.cols, row);
            simd::axpy<Arch>(T(-1), mu.data(), row, x.cols);
            squares[i] = simd::dot<Arch>(row, row, x.cols);
            if (factor != T(1)) simd::scale<Arch>(factor, row, x.cols);
        }
        return squares;
    }

    void lower_distance(row_matrix<const T> q, row_matrix<const T> k, double scale) {
        const std::size_t d = q.cols;
        const T s = T(scale);
        const std::vector<T> mu = mean(q, k);
        const std::vector<T> qq = center(q, mu, q_.data(), T(-2) * s), kk = center(k, mu, k_.data(), T(1));
        for (std::size_t i = 0; i < q.rows; ++i) q_[i * dim_ + d] = s * qq[i], q_[i * dim_ + d + 1] = T(1);
        for (std::size_t j = 0; j < k.rows; ++j) k_[j * dim_ + d] = T(1), k_[j * dim_ + d + 1] = s * kk[j];
        const auto largest = [](const std::vector<T>& squares) {
            return std::sqrt(squares.empty() ? 0.0 : double(*std::max_element(squares.begin(), squares.end())));
        };
        const double reach = largest(qq) + largest(kk);
        bound_ = 2 * std::sqrt(double(d + 2)) * double(std::numeric_limits<T>::epsilon()) * std::abs(scale) * reach * reach;
    }

    /// [a_i, 1] and [1, b_j] (dim_ = d + 1 = 2).
    void lower_sum(row_matrix<const T> q, row_matrix<const T> k) {
        for (std::size_t i = 0; i < q.rows; ++i) simd::copy<Arch>(q.row(i).data(), q.cols, &q_[i * dim_]), q_[i * dim_ + q.cols] = T(1);
        for (std::size_t j = 0; j < k.rows; ++j) k_[j * dim_] = T(1), simd::copy<Arch>(k.row(j).data(), k.cols, &k_[j * dim_ + 1]);
    }

    void lower_cosine(row_matrix<const T> q, row_matrix<const T> k, double scale) {
        const auto normalize = [&](row_matrix<const T> x, T* to, T factor) {
            for (std::size_t i = 0; i < x.rows; ++i) {
                const T square = simd::dot<Arch>(x.row(i).data(), x.row(i).data(), x.cols);
                const T inverse = square == T(0) ? T(0) : factor / std::sqrt(square);   // NaN stays NaN
                simd::scale<Arch>(inverse, x.row(i).data(), to + i * dim_, x.cols);
            }
        };
        normalize(q, q_.data(), T(scale));
        normalize(k, k_.data(), T(1));
    }

    std::size_t dim_, rows_, keys_;
    buffer<T> q_, k_;
    double bound_ = 0;
};

}  // namespace kernel
}  // namespace nonlocal
