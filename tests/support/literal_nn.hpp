#pragma once
// Literal double-precision forms of the nn layers, the oracles of test_multi_head_attention,
// test_layer_norm, test_transformer, test_conv and test_mobilevit: loops as plain as the formulas.

#include <nonlocal/nn.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

namespace nonlocal::test {

/// Rows x [n, in] times weight^T [out, in] plus bias [out] (or none), in double.
template <class T>
xt::xtensor<double, 2> literal_linear(const xt::xtensor<double, 2>& x, const xt::xtensor<T, 2>& w,
                                      const xt::xtensor<T, 1>& b) {
    xt::xtensor<double, 2> y = xt::empty<double>({x.shape(0), w.shape(0)});
    for (std::size_t i = 0; i < x.shape(0); ++i)
        for (std::size_t o = 0; o < w.shape(0); ++o) {
            double s = b.size() ? b(o) : 0.0;
            for (std::size_t c = 0; c < w.shape(1); ++c) s += x(i, c) * w(o, c);
            y(i, o) = s;
        }
    return y;
}

/// LayerNorm of each row of x [n, E].
template <class T, class U>
xt::xtensor<double, 2> literal_layer_norm(const xt::xtensor<T, 2>& x, const nn::basic_layer_norm<U>& n) {
    xt::xtensor<double, 2> y = xt::cast<double>(x);
    const std::size_t E = x.shape(1);
    for (std::size_t t = 0; t < x.shape(0); ++t) {
        double mean = 0, variance = 0;
        for (std::size_t c = 0; c < E; ++c) mean += x(t, c) / double(E);
        for (std::size_t c = 0; c < E; ++c) variance += (x(t, c) - mean) * (x(t, c) - mean) / double(E);
        for (std::size_t c = 0; c < E; ++c) y(t, c) = (x(t, c) - mean) / std::sqrt(variance + n.eps) * n.weight(c) + n.bias(c);
    }
    return y;
}

/// A projection of the layer applied to x, in double.
template <class T>
xt::xtensor<double, 2> literal_projection(const xt::xtensor<double, 2>& x, const nn::linear_layer<T>& p) {
    return literal_linear(x, p.weight(), p.bias());
}

/// PyTorch's in_proj_weight and in_proj_bias of a layer: the rows of q_proj, k_proj and v_proj.
template <class T>
xt::xtensor<T, 2> in_proj_weight(const nn::basic_multi_head_attention<T>& m) {
    return xt::concatenate(xt::xtuple(m.q_proj.weight(), m.k_proj.weight(), m.v_proj.weight()));
}
template <class T>
xt::xtensor<T, 1> in_proj_bias(const nn::basic_multi_head_attention<T>& m) {
    return xt::concatenate(xt::xtuple(m.q_proj.bias(), m.k_proj.bias(), m.v_proj.bias()));
}

/// Multi-head self-attention of one sequence x [L, E], key j admissible for query i when allowed(i, j).
template <class T>
xt::xtensor<double, 2> literal_self_attention(const xt::xtensor<double, 2>& x, const nn::basic_multi_head_attention<T>& m,
                                              const std::function<bool(std::size_t, std::size_t)>& allowed) {
    const std::size_t L = x.shape(0), E = m.embed_dim, hd = E / m.num_heads;
    const auto q = literal_projection(x, m.q_proj), k = literal_projection(x, m.k_proj);
    const auto v = literal_projection(x, m.v_proj);
    xt::xtensor<double, 2> merged = xt::zeros<double>({L, E});
    for (std::size_t head = 0; head < m.num_heads; ++head)
        for (std::size_t i = 0; i < L; ++i) {
            std::vector<double> w(L, 0.0);
            double top = -INFINITY, total = 0;
            for (std::size_t j = 0; j < L; ++j) {
                if (!allowed(i, j)) continue;
                double l = 0;
                for (std::size_t c = 0; c < hd; ++c) l += q(i, head * hd + c) * k(j, head * hd + c);
                w[j] = l / std::sqrt(double(hd));
                top = std::max(top, w[j]);
            }
            for (std::size_t j = 0; j < L; ++j) total += w[j] = allowed(i, j) ? std::exp(w[j] - top) : 0;
            for (std::size_t j = 0; j < L; ++j)
                for (std::size_t c = 0; c < hd; ++c) merged(i, head * hd + c) += w[j] / total * v(j, head * hd + c);
        }
    return literal_projection(merged, m.out_proj);
}

/// nn.MultiheadAttention over queries xq [B, L, E], keys xk [B, S, kdim] and values
/// xv [B, S, vdim], literally, with bias(b, head, i, j) added to each scaled logit (-inf: not
/// attended): the output [B, L, E] and the weights of every head [B, H, L, S]. Query head i
/// reads key and value head i / (H / kv_heads). A query left with no key gets weights 0 and
/// attention 0 (the output projection's bias alone).
struct literal_attention {
    xt::xtensor<double, 3> output;
    xt::xtensor<double, 4> weights;
};
template <class T>
literal_attention literal_masked_attention(
    const xt::xtensor<T, 3>& xq, const xt::xtensor<T, 3>& xk, const xt::xtensor<T, 3>& xv,
    const nn::basic_multi_head_attention<T>& m,
    const std::function<double(std::size_t, std::size_t, std::size_t, std::size_t)>& bias) {
    const std::size_t B = xq.shape(0), L = xq.shape(1), S = xk.shape(1), E = m.embed_dim, H = m.num_heads;
    const std::size_t hd = E / H, group = H / m.kv_heads();
    literal_attention r{xt::zeros<double>({B, L, E}), xt::zeros<double>({B, H, L, S})};
    for (std::size_t b = 0; b < B; ++b) {
        const auto q = literal_projection(xt::xtensor<double, 2>(xt::cast<double>(xt::view(xq, b))), m.q_proj);
        const auto k = literal_projection(xt::xtensor<double, 2>(xt::cast<double>(xt::view(xk, b))), m.k_proj);
        const auto v = literal_projection(xt::xtensor<double, 2>(xt::cast<double>(xt::view(xv, b))), m.v_proj);
        xt::xtensor<double, 2> merged = xt::zeros<double>({L, E});
        for (std::size_t head = 0; head < H; ++head)
            for (std::size_t i = 0; i < L; ++i) {
                std::vector<double> logit(S);
                double top = -INFINITY, total = 0;
                for (std::size_t j = 0; j < S; ++j) {
                    double l = 0;
                    for (std::size_t c = 0; c < hd; ++c) l += q(i, head * hd + c) * k(j, head / group * hd + c);
                    logit[j] = l / std::sqrt(double(hd)) + bias(b, head, i, j);
                    top = std::max(top, logit[j]);
                }
                if (std::isinf(top)) continue;
                for (std::size_t j = 0; j < S; ++j) total += std::exp(logit[j] - top);
                for (std::size_t j = 0; j < S; ++j) {
                    const double w = std::exp(logit[j] - top) / total;
                    r.weights(b, head, i, j) = w;
                    for (std::size_t c = 0; c < hd; ++c) merged(i, head * hd + c) += w * v(j, head / group * hd + c);
                }
            }
        xt::view(r.output, b) = literal_projection(merged, m.out_proj);
    }
    return r;
}
/// The same with keys and values from one tensor xkv [B, S, E].
template <class T, class F>
literal_attention literal_masked_attention(const xt::xtensor<T, 3>& xq, const xt::xtensor<T, 3>& xkv,
                                           const nn::basic_multi_head_attention<T>& m, const F& bias) {
    return literal_masked_attention<T>(xq, xkv, xkv, m, bias);
}

/// nn.Conv2d's forward pass as written in the documentation, in double (the bias may be [0]).
template <class T>
xt::xtensor<double, 4> literal_conv2d(const xt::xtensor<T, 4>& x, const xt::xtensor<T, 4>& w,
                                      const xt::xtensor<T, 1>& bias, const nn::conv2d_options& o) {
    const std::size_t B = x.shape(0), H = x.shape(2), W = x.shape(3), Cout = w.shape(0), cpg = w.shape(1);
    const std::size_t kh = w.shape(2), kw = w.shape(3), per_group = Cout / o.groups;
    const auto count = [](std::size_t n, std::size_t k, std::size_t s, std::size_t p, std::size_t d) {
        return (n + 2 * p - d * (k - 1) - 1) / s + 1;
    };
    const std::size_t Ho = count(H, kh, o.stride.h, o.padding.h, o.dilation.h);
    const std::size_t Wo = count(W, kw, o.stride.w, o.padding.w, o.dilation.w);
    xt::xtensor<double, 4> y = xt::zeros<double>({B, Cout, Ho, Wo});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t co = 0; co < Cout; ++co)
            for (std::size_t oy = 0; oy < Ho; ++oy)
                for (std::size_t ox = 0; ox < Wo; ++ox) {
                    double sum = bias.size() ? double(bias(co)) : 0.0;
                    for (std::size_t ci = 0; ci < cpg; ++ci)
                        for (std::size_t ky = 0; ky < kh; ++ky)
                            for (std::size_t kx = 0; kx < kw; ++kx) {
                                const long iy = long(oy * o.stride.h + ky * o.dilation.h) - long(o.padding.h);
                                const long ix = long(ox * o.stride.w + kx * o.dilation.w) - long(o.padding.w);
                                if (iy < 0 || ix < 0 || iy >= long(H) || ix >= long(W)) continue;
                                sum += double(x(b, co / per_group * cpg + ci, iy, ix)) * double(w(co, ci, ky, kx));
                            }
                    y(b, co, oy, ox) = sum;
                }
    return y;
}

/// SiLU, v / (1 + e^-v), of each value.
inline xt::xtensor<double, 4> literal_silu(xt::xtensor<double, 4> v) {
    for (double& e : v) e = e / (1 + std::exp(-e));
    return v;
}

}  // namespace nonlocal::test
