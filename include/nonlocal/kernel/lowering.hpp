#pragma once
/// @file kernel/lowering.hpp
/// Distances and cosines as dot products, so that the tiled kernels' dot-product
/// micro-kernels compute them. With q' = q - mu and k' = k - mu, mu the mean of the
/// queries and keys (distances do not change under a common shift, and the shift keeps
/// the terms below as small as the data allows):
///
///     scale |q - k|^2 = < [-2 scale q', scale |q'|^2, 1], [k', 1, |k'|^2] >     (d + 2 features)
///     scale <q, k> / (|q| |k|) = < scale q / |q|, k / |k| >                       (0 for a zero vector)
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

namespace nonlocal {
namespace detail {
/// logit = <q, k>, kappa = `Kernel`: the similarity the lowered operands are aggregated with.
template <class Kernel>
struct unit_dot {
    using kernel = Kernel;
    using traits = similarity_traits<dot_product_form>;
    static double scale(std::size_t) noexcept { return 1.0; }
    template <class T>
    T logit(std::span<const T> q, std::span<const T> k) const {
        return simd::dot(q.data(), k.data(), q.size());
    }
};
}  // namespace detail

namespace kernel {

/// The largest `cancellation_bound` at which exponential weights use the lowered distance:
/// 2^-12, a relative error of the weights of 2.4e-4.
inline constexpr double cancellation_tolerance = 1.0 / 4096;

/// A similarity that the tiled kernels compute as the dot product of lowered features.
template <class S>
concept lowered_similarity = detail::has_logit_form<S, distance_form> || detail::has_logit_form<S, cosine_form>;

/// Queries and keys whose dot product is a distance or cosine similarity's logit.
template <class T>
class lowered_features {
public:
    /// Lowers the [n, d] queries `q` and [m, d] keys `k` of a similarity of the distance form
    /// (`distance` true) or of the cosine form, whose scale is `scale`.
    lowered_features(row_matrix<const T> q, row_matrix<const T> k, double scale, bool distance)
        : dim_(distance ? q.cols + 2 : q.cols), rows_(q.rows), keys_(k.rows), q_(q.rows * dim_), k_(k.rows * dim_) {
        if (distance) lower_distance(q, k, scale);
        else lower_cosine(q, k, scale);
    }

    row_matrix<const T> queries() const noexcept { return {q_.data(), rows_, dim_}; }
    row_matrix<const T> keys() const noexcept { return {k_.data(), keys_, dim_}; }

    /// The typical bound of the logit's rounding error (the file's comment); 0 for cosines.
    double cancellation_bound() const noexcept { return bound_; }

private:
    /// The mean of the rows of q and k together, in double.
    static std::vector<double> mean(row_matrix<const T> q, row_matrix<const T> k) {
        std::vector<double> mu(q.cols, 0.0);
        for (const auto& x : {q, k})
            for (std::size_t i = 0; i < x.rows; ++i)
                for (std::size_t c = 0; c < x.cols; ++c) mu[c] += double(x(i, c));
        const double rows = double(q.rows + k.rows);
        if (rows > 0)
            for (double& m : mu) m /= rows;
        return mu;
    }

    /// Writes x - mu into `to` (rows of dim_ values) and returns each row's |x - mu|^2.
    std::vector<double> centre(row_matrix<const T> x, const std::vector<double>& mu, T* to, double factor) const {
        std::vector<double> squares(x.rows);
        for (std::size_t i = 0; i < x.rows; ++i) {
            double square = 0;
            for (std::size_t c = 0; c < x.cols; ++c) {
                const double centred = double(x(i, c)) - mu[c];
                square += centred * centred;
                to[i * dim_ + c] = T(factor * centred);
            }
            squares[i] = square;
        }
        return squares;
    }

    void lower_distance(row_matrix<const T> q, row_matrix<const T> k, double scale) {
        const std::size_t d = q.cols;
        const std::vector<double> mu = mean(q, k);
        const std::vector<double> qq = centre(q, mu, q_.data(), -2 * scale), kk = centre(k, mu, k_.data(), 1.0);
        for (std::size_t i = 0; i < q.rows; ++i) q_[i * dim_ + d] = T(scale * qq[i]), q_[i * dim_ + d + 1] = T(1);
        for (std::size_t j = 0; j < k.rows; ++j) k_[j * dim_ + d] = T(1), k_[j * dim_ + d + 1] = T(scale * kk[j]);
        const auto largest = [](const std::vector<double>& s) {
            return std::sqrt(s.empty() ? 0.0 : *std::max_element(s.begin(), s.end()));
        };
        const double reach = largest(qq) + largest(kk);
        bound_ = 2 * std::sqrt(double(d + 2)) * double(std::numeric_limits<T>::epsilon()) * std::abs(scale) * reach * reach;
    }

    void lower_cosine(row_matrix<const T> q, row_matrix<const T> k, double scale) {
        const auto normalise = [&](row_matrix<const T> x, T* to, double factor) {
            for (std::size_t i = 0; i < x.rows; ++i) {
                double square = 0;
                for (std::size_t c = 0; c < x.cols; ++c) square += double(x(i, c)) * double(x(i, c));
                const double inverse = square > 0 ? factor / std::sqrt(square) : 0.0;
                for (std::size_t c = 0; c < x.cols; ++c) to[i * dim_ + c] = T(inverse * double(x(i, c)));
            }
        };
        normalise(q, q_.data(), scale);
        normalise(k, k_.data(), 1.0);
    }

    std::size_t dim_, rows_, keys_;
    buffer<T> q_, k_;
    double bound_ = 0;
};

}  // namespace kernel
}  // namespace nonlocal
