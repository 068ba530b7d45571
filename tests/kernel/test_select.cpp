// kernel/select.hpp: each row of the dispatch table selects the kernel it names, for the
// policies the row lists, and the compositions just outside a row fall to the next.
#include <nonlocal/nonlocal.hpp>

#include "support/support.hpp"

using namespace nonlocal;
using kernel::kernel_kind;

BOOST_AUTO_TEST_SUITE(test_select)

namespace {
template <class S, class Nb, class Nm>
constexpr kernel_kind selected = kernel_for<S, Nb, Nm>;

}  // namespace

BOOST_AUTO_TEST_CASE(each_row_selects_its_kernel) {
    using biased = with_position_bias<scaled_dot_product>;
    const std::vector<std::tuple<const char*, kernel_kind, kernel_kind>> rows = {
        // Row 1: patch distances over a 2-D window with sum.
        {"patch_distance, window2d, sum", selected<patch_distance, window2d, sum>, kernel_kind::patch_window},
        // Row 2: dot products (biased or not) over windows.
        {"scaled_dot_product, window2d, softmax", selected<scaled_dot_product, window2d, softmax>, kernel_kind::tiled_window},
        {"scaled_dot_product, window1d, softmax", selected<scaled_dot_product, window1d, softmax>, kernel_kind::tiled_window},
        {"with_position_bias, window2d, softmax", selected<biased, window2d, softmax>, kernel_kind::tiled_window},
        {"gaussian, window1d, sum", selected<gaussian, window1d, sum>, kernel_kind::tiled_window},
        {"dot_product, window2d, count", selected<dot_product, window2d, count>, kernel_kind::tiled_window},
        {"dot_product, window2d, none", selected<dot_product, window2d, none>, kernel_kind::tiled_window},
        // Row 3: dot products over dense groups.
        {"scaled_dot_product, patch_group, softmax", selected<scaled_dot_product, patch_group, softmax>, kernel_kind::tiled_groups},
        // Row 4: dot products over tiles.
        {"scaled_dot_product, dense, softmax", selected<scaled_dot_product, dense, softmax>, kernel_kind::tiled},
        {"scaled_dot_product, causal, softmax", selected<scaled_dot_product, causal, softmax>, kernel_kind::tiled},
        {"gaussian, block_mask, sum", selected<gaussian, block_mask, sum>, kernel_kind::tiled},
        {"embedded_gaussian, dense, sum", selected<embedded_gaussian, dense, sum>, kernel_kind::tiled},
        {"dot_product, causal, count", selected<dot_product, causal, count>, kernel_kind::tiled},
        // Rows 2 to 4 for the other forms: distances, cosines (lowered), channel sums.
        {"gaussian_distance, window2d, sum", selected<gaussian_distance, window2d, sum>, kernel_kind::tiled_window},
        {"squared_euclidean, dense, none", selected<squared_euclidean, dense, none>, kernel_kind::tiled},
        {"cosine, causal, softmax", selected<cosine, causal, softmax>, kernel_kind::tiled},
        {"laplacian_distance, patch_group, sum", selected<laplacian_distance, patch_group, sum>, kernel_kind::tiled_groups},
        // Row 5: precomputed edge weights over their stencil.
        {"edge_weights, grid_stencil, sum", selected<edge_weights<float>, grid_stencil, sum>, kernel_kind::stencil},
        {"edge_weights, grid_stencil, sum_with_data", selected<edge_weights<double>, grid_stencil, sum_with_data<>>, kernel_kind::stencil},
        {"edge_weights, grid_stencil, one item's data term", selected<edge_weights<float>, grid_stencil, data_term_slice<float, float>>, kernel_kind::stencil},
        {"edge_weights, grid_stencil, none", selected<edge_weights<float>, grid_stencil, none>, kernel_kind::stencil},
        {"gaussian_distance, grid_stencil, sum", selected<gaussian_distance, grid_stencil, sum>, kernel_kind::stencil},
        {"laplacian_distance, grid_stencil, sum_with_data", selected<laplacian_distance, grid_stencil, sum_with_data<>>, kernel_kind::stencil},
        // Row 6: everything else.
        {"edge_weights, grid_stencil, softmax (exp of the weights)", selected<edge_weights<float>, grid_stencil, softmax>, kernel_kind::gather},
        {"edge_weights, window2d, sum", selected<edge_weights<float>, window2d, sum>, kernel_kind::gather},
        {"patch_distance, window2d, softmax", selected<patch_distance, window2d, softmax>, kernel_kind::gather},
        // Row 6: tiled similarities over key ranges.
        {"scaled_dot_product, grid_stencil, softmax", selected<scaled_dot_product, grid_stencil, softmax>, kernel_kind::tiled_ranges},
        {"scaled_dot_product, csr_graph, softmax", selected<scaled_dot_product, csr_graph, softmax>, kernel_kind::tiled_ranges},
        {"cosine, csr_graph, count", selected<cosine, csr_graph, count>, kernel_kind::tiled_ranges},
        {"gaussian, dense, count (absolute exp weights)", selected<gaussian, dense, count>, kernel_kind::gather},
        {"gaussian, window2d, count (absolute exp weights)", selected<gaussian, window2d, count>, kernel_kind::gather},
        {"gaussian_distance, dense, count (absolute exp weights)", selected<gaussian_distance, dense, count>, kernel_kind::gather},
        {"patch_distance, grid_stencil, sum (patches: not a sum over the features)", selected<patch_distance, grid_stencil, sum>, kernel_kind::gather},
        {"dot_product, window2d, sum_with_data (a data term)", selected<dot_product, window2d, sum_with_data<>>, kernel_kind::gather},
        {"biased, dense, softmax", selected<biased, dense, softmax>, kernel_kind::gather},
    };
    for (const auto& [what, got, expected] : rows)
        BOOST_TEST((got == expected), what << ": selects " << kernel::name(got) << ", the table says " << kernel::name(expected));
}

BOOST_AUTO_TEST_SUITE_END()
