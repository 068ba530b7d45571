// docs/tutorials/attention.md: attention over batches and heads, causal masks, padding and
// element-wise masks, grouped-query attention, threads, the log-sum-exp of each query, and
// PyTorch's masks and attention weights in nn::multi_head_attention.
#include <nonlocal/nonlocal.hpp>

#include <cstdio>
#include <xtensor/xrandom.hpp>
#include <xtensor/xview.hpp>

int main() {
    xt::random::seed(3);
    // [batch, heads, tokens, features]: 2 images, 8 query heads, 196 tokens of 32 features
    xt::xtensor<float, 4> q = xt::random::randn<float>({2, 8, 196, 32});
    xt::xtensor<float, 4> k = xt::random::randn<float>({2, 8, 196, 32});
    xt::xtensor<float, 4> v = xt::random::randn<float>({2, 8, 196, 32});

    auto y = nonlocal::attention(q, k, v);                              // [2, 8, 196, 32]
    auto c = nonlocal::attention(q, k, v, nonlocal::causal{});          // token i sees tokens 0..i
    auto p = nonlocal::attention(nonlocal::execution::par, q, k, v);    // OpenMP threads, same bits

    // Masks: image 0 has 196 tokens, image 1 only 150 (the rest is padding); a mask per pair
    // [196, 196] for every slice; and a bias per pair added to the logits.
    xt::xtensor<bool, 2> keep = xt::ones<bool>({2, 196});
    xt::view(keep, 1, xt::range(150, 196)) = false;
    nonlocal::key_mask padding(keep);                                   // one mask per batch item
    xt::xtensor<bool, 2> pairs = xt::random::rand<double>({196, 196}) < 0.9;
    auto m = nonlocal::attention(q, k, v, nonlocal::intersect(padding, nonlocal::element_mask(pairs)));
    xt::xtensor<float, 2> bias = xt::random::randn<float>({196, 196});
    auto b = nonlocal::attention(q, k, v, padding, nonlocal::with_pair_bias(nonlocal::scaled_dot_product{}, bias));

    // Grouped-query attention: 2 key/value heads shared by 4 query heads each.
    xt::xtensor<float, 4> k2 = xt::random::randn<float>({2, 2, 196, 32});
    xt::xtensor<float, 4> v2 = xt::random::randn<float>({2, 2, 196, 32});
    auto g = nonlocal::attention(q, k2, v2);

    // The log-sum-exp of each query's logits, to merge attention over disjoint key sets.
    auto [out, lse] = nonlocal::attention_lse(q, k, v);

    // The double-precision reference: literal sums, the oracle of the test suite.
    auto r = nonlocal::reference::weighted_aggregate(q, k, v, nonlocal::scaled_dot_product{}, nonlocal::dense{},
                                                     nonlocal::softmax{});
    const double error = xt::amax(xt::abs(xt::cast<double>(y) - r))();
    std::printf("attention [2, 8, 196, 32]: max |fast - reference| = %.2g\n", error);
    const bool same_threads = p == y, same_lse = xt::allclose(out, y, 1e-6, 1e-6);
    std::printf("threads give the same bits: %s; grouped-query output %zu heads; causal row 0 = v row 0: %s\n",
                same_threads ? "yes" : "no", g.shape(1), std::abs(c(0, 0, 0, 0) - v(0, 0, 0, 0)) < 1e-6f ? "yes" : "no");

    // PyTorch's nn.MultiheadAttention (batch first): E = 64, 4 heads, random weights here.
    const std::size_t E = 64;
    nonlocal::nn::multi_head_attention mha(4, xt::random::randn<float>({3 * E, E}) * 0.1f, xt::zeros<float>({3 * E}),
                                           xt::random::randn<float>({E, E}) * 0.1f, xt::zeros<float>({E}));
    xt::xtensor<float, 3> tokens = xt::random::randn<float>({std::size_t(2), std::size_t(50), E});
    auto attended = mha(tokens, tokens, tokens);                        // [2, 50, 64]

    // PyTorch's masks (true: not attended) and the attention weights, averaged over the heads.
    nonlocal::nn::attention_options options;
    options.key_padding_mask = xt::view(!keep, xt::all(), xt::range(0, 50));   // [B, S]
    options.attn_mask = xt::xtensor<bool, 2>(xt::random::rand<double>({50, 50}) < 0.1);   // [L, S]
    options.need_weights = true;
    auto [masked, weights] = mha.forward(tokens, tokens, tokens, options);  // weights [2, 50, 50]
    std::printf("multi-head attention: [%zu, %zu, %zu], weights [%zu, %zu, %zu]\n", attended.shape(0),
                attended.shape(1), attended.shape(2), weights->shape(0), weights->shape(1), weights->shape(2));

    // Grouped-query attention: 8 query heads of 8 features over 2 key and value heads.
    using projection = nonlocal::nn::linear_layer<float>;
    const auto weight = [](std::size_t out, std::size_t in) {
        return xt::xtensor<float, 2>(xt::random::randn<float>({out, in}) * 0.1f);
    };
    const nonlocal::nn::multi_head_attention gqa(8, projection(weight(E, E)), projection(weight(16, E)),
                                                 projection(weight(16, E)), projection(weight(E, E)));
    auto grouped = gqa(tokens, tokens, tokens, nonlocal::causal{});    // [2, 50, 64]
    std::printf("grouped-query attention: %zu key and value heads for %zu query heads\n", gqa.kv_heads(),
                gqa.num_heads);
    const bool masks_apply = m.shape() == y.shape() && b.shape() == y.shape() && masked.shape() == attended.shape() &&
                             std::abs(xt::sum(xt::view(*weights, 0, 0))() - 1.0f) < 1e-5f &&
                             grouped.shape() == attended.shape() && gqa.kv_heads() == 2;
    return error < 1e-4 && same_threads && same_lse && lse.shape(2) == 196 && attended.shape(2) == E && masks_apply
               ? 0
               : 1;
}
