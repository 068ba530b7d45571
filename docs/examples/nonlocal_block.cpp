// docs/tutorials/transformer-layers.md, "The non-local block": the block on feature maps
// [B, C, H, W] built from weights of one's own, in its embedded Gaussian form, run on one and
// on two threads; and the same block with W_z zero, which leaves its input as it is.
#include <nonlocal/nn.hpp>

#include <cstdio>
#include <xtensor/xrandom.hpp>

int main() {
    namespace nn = nonlocal::nn;
    const std::size_t C = 8, e = 4;   // channels, inter channels
    xt::random::seed(3);
    const auto weights = [](std::size_t out, std::size_t in) {   // a 1 x 1 convolution's [out, in, 1, 1]
        return xt::xtensor<float, 4>(0.3f * xt::random::randn<float>({out, in, std::size_t(1), std::size_t(1)}));
    };
    const auto bias = [](std::size_t out) { return xt::xtensor<float, 1>(0.1f * xt::random::randn<float>({out})); };

    // theta, phi and g map C to e channels, W_z e back to C (a batch norm after it folded in).
    const nn::nonlocal_feature_block block(nn::nonlocal_form::embedded_gaussian,
                                           nn::conv2d<float>(weights(e, C), bias(e)),   // g
                                           nn::conv2d<float>(weights(e, C), bias(e)),   // theta
                                           nn::conv2d<float>(weights(e, C), bias(e)),   // phi
                                           nn::conv2d<float>(weights(C, e), bias(C)),   // W_z
                                           /*sub_sample=*/true);
    const xt::xtensor<float, 4> x = xt::random::randn<float>({std::size_t(2), C, std::size_t(10), std::size_t(12)});
    const xt::xtensor<float, 4> z = block(x);                                            // [2, 8, 10, 12]
    const xt::xtensor<float, 4> z2 = block(nonlocal::execution::parallel_policy{2}, x);  // the same, on two threads

    const nn::nonlocal_feature_block identity(nn::nonlocal_form::embedded_gaussian, nn::conv2d<float>(weights(e, C)),
                                              nn::conv2d<float>(weights(e, C)), nn::conv2d<float>(weights(e, C)),
                                              nn::conv2d<float>(xt::xtensor<float, 4>(xt::zeros<float>({C, e, std::size_t(1), std::size_t(1)}))),
                                              /*sub_sample=*/false);
    const bool residual = identity(x) == x;
    std::printf("z [%zu, %zu, %zu, %zu], two threads give the same: %s, W_z = 0 gives x: %s\n", z.shape(0),
                z.shape(1), z.shape(2), z.shape(3), z == z2 ? "yes" : "no", residual ? "yes" : "no");
    return z == z2 && residual ? 0 : 1;
}
