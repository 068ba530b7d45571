// neighborhood/*.hpp: the key sets each policy enumerates, by hand on small
// grids and by property on many, and the errors of policies that do not fit.
#include <nonlocal/nonlocal.hpp>

#include <set>

#include "support/support.hpp"

using namespace nonlocal;
using keys = std::vector<std::size_t>;

BOOST_AUTO_TEST_SUITE(test_neighborhood)

namespace {
template <class Nb>
keys keys_of(const Nb& nb, std::size_t i, extents e) {
    keys out;
    nb.for_each_range(i, e, [&](key_range r) {
        for (std::size_t t = 0; t < r.count; ++t) out.push_back(r.first + t * r.stride);
    });
    return out;
}
template <class Nb>
keys keys_of(const Nb& nb, std::size_t i, std::size_t n) { return keys_of(nb, i, extents{n, n}); }
/// Pixel index of (row, col) on a grid of the given width.
std::size_t px(std::size_t r, std::size_t c, std::size_t width) { return r * width + c; }
}  // namespace

BOOST_AUTO_TEST_CASE(dense_and_causal) {
    BOOST_TEST(keys_of(dense{}, 2, extents{3, 4}) == (keys{0, 1, 2, 3}));
    BOOST_TEST(keys_of(causal{}, 0, extents{3, 4}) == (keys{0}));
    BOOST_TEST(keys_of(causal{}, 2, extents{3, 4}) == (keys{0, 1, 2}));
    BOOST_TEST(keys_of(causal{}, 5, extents{6, 3}) == (keys{0, 1, 2}));
    BOOST_TEST(keys_of(dense{}, 0, extents{1, 0}).empty());
}

BOOST_AUTO_TEST_CASE(window1d_by_hand) {
    const window1d w{1};
    BOOST_TEST(keys_of(w, 0, 5) == (keys{0, 1, 2}));   // shifted inward
    BOOST_TEST(keys_of(w, 2, 5) == (keys{1, 2, 3}));
    BOOST_TEST(keys_of(w, 4, 5) == (keys{2, 3, 4}));
    // Dilation 2 on 7 positions: groups {0, 2, 4, 6} and {1, 3, 5}.
    const window1d d{1, 2};
    BOOST_TEST(keys_of(d, 0, 7) == (keys{0, 2, 4}));
    BOOST_TEST(keys_of(d, 4, 7) == (keys{2, 4, 6}));
    BOOST_TEST(keys_of(d, 6, 7) == (keys{2, 4, 6}));
    BOOST_TEST(keys_of(d, 1, 7) == (keys{1, 3, 5}));
    BOOST_TEST(keys_of(d, 5, 7) == (keys{1, 3, 5}));
    // A window larger than the extent is the whole group.
    BOOST_TEST(keys_of(window1d{5}, 1, 4) == (keys{0, 1, 2, 3}));
    BOOST_TEST(keys_of(window1d{2, 3}, 4, 5) == (keys{1, 4}));
    // Causal: the query and up to `radius` keys before it in its group.
    const window1d c{2, 1, true};
    BOOST_TEST(keys_of(c, 0, 6) == (keys{0}));
    BOOST_TEST(keys_of(c, 1, 6) == (keys{0, 1}));
    BOOST_TEST(keys_of(c, 5, 6) == (keys{3, 4, 5}));
}

BOOST_AUTO_TEST_CASE(window2d_by_hand) {
    const window2d w{4, 5, 3};   // 4 rows, 5 columns
    BOOST_TEST(keys_of(w, px(0, 0, 5), 20) ==
               (keys{px(0, 0, 5), px(0, 1, 5), px(0, 2, 5), px(1, 0, 5), px(1, 1, 5), px(1, 2, 5), px(2, 0, 5),
                     px(2, 1, 5), px(2, 2, 5)}));
    BOOST_TEST(keys_of(w, px(3, 2, 5), 20) ==
               (keys{px(1, 1, 5), px(1, 2, 5), px(1, 3, 5), px(2, 1, 5), px(2, 2, 5), px(2, 3, 5), px(3, 1, 5),
                     px(3, 2, 5), px(3, 3, 5)}));
    const window2d causal2d{4, 5, 3, 1, true};
    BOOST_TEST(keys_of(causal2d, px(1, 1, 5), 20) == (keys{px(0, 0, 5), px(0, 1, 5), px(1, 0, 5), px(1, 1, 5)}));
}

BOOST_AUTO_TEST_CASE(window_properties_on_many_shapes) {
    // Every query sees min(k, group length) keys per axis, all in its group,
    // itself included, in increasing order.
    for (std::size_t length : {1, 2, 3, 5, 8, 13})
        for (std::size_t radius : {0, 1, 2, 4})
            for (std::size_t dilation : {1, 2, 3})
                for (bool is_causal : {false, true})
                    for (std::size_t i = 0; i < length; ++i) {
                        const keys k = keys_of(window1d{radius, dilation, is_causal}, i, length);
                        const std::size_t group_length = (length - i % dilation + dilation - 1) / dilation;
                        const std::size_t expected =
                            is_causal ? std::min(radius, i / dilation) + 1 : std::min(2 * radius + 1, group_length);
                        BOOST_TEST_CONTEXT("length " << length << " radius " << radius << " dilation " << dilation
                                                     << " causal " << is_causal << " i " << i) {
                            BOOST_TEST(k.size() == expected);
                            BOOST_TEST(std::is_sorted(k.begin(), k.end()));
                            BOOST_TEST((std::find(k.begin(), k.end(), i) != k.end()));
                            for (std::size_t j : k) BOOST_TEST((j % dilation == i % dilation && j < length));
                        }
                    }
}

BOOST_AUTO_TEST_CASE(grid_stencil_by_hand) {
    const grid_stencil four{3, 4, 4}, eight{3, 4, 8};
    BOOST_TEST(keys_of(four, px(0, 0, 4), 12) == (keys{px(0, 1, 4), px(1, 0, 4)}));
    BOOST_TEST(keys_of(four, px(1, 1, 4), 12) == (keys{px(0, 1, 4), px(1, 0, 4), px(1, 2, 4), px(2, 1, 4)}));
    BOOST_TEST(keys_of(four, px(2, 3, 4), 12) == (keys{px(1, 3, 4), px(2, 2, 4)}));
    BOOST_TEST(keys_of(eight, px(0, 0, 4), 12) == (keys{px(0, 1, 4), px(1, 0, 4), px(1, 1, 4)}));
    BOOST_TEST(keys_of(eight, px(1, 1, 4), 12) == (keys{px(0, 0, 4), px(0, 1, 4), px(0, 2, 4), px(1, 0, 4),
                                                       px(1, 2, 4), px(2, 0, 4), px(2, 1, 4), px(2, 2, 4)}));
    BOOST_TEST(keys_of(grid_stencil{1, 1, 8}, 0, 1).empty());
    BOOST_TEST(keys_of(grid_stencil{3, 1, 4}, 1, 3) == (keys{0, 2}));
}

BOOST_AUTO_TEST_CASE(stencil_is_symmetric) {
    // j in N(i) iff i in N(j): the AR model's Laplacian needs it.
    for (int connectivity : {4, 8}) {
        const grid_stencil g{5, 6, connectivity};
        std::set<std::pair<std::size_t, std::size_t>> edges;
        for (std::size_t i = 0; i < 30; ++i)
            for (std::size_t j : keys_of(g, i, 30)) edges.insert({i, j});
        for (auto [i, j] : edges) BOOST_TEST(edges.count({j, i}) == 1u);
        BOOST_TEST(edges.size() == (connectivity == 4 ? 2u * (5 * 5 + 4 * 6) : 2u * (5 * 5 + 4 * 6 + 2 * 4 * 5)));
    }
}

BOOST_AUTO_TEST_CASE(wide_stencils_match_their_definition) {
    // N(i) = { j != i : max(|dy|, |dx|) <= radius } (8) or |dy| + |dx| <= radius (4), on grids
    // narrower and shorter than the stencil too; the forward offsets hold each edge once.
    for (int connectivity : {4, 8})
        for (std::size_t radius : {1, 2, 3})
            for (auto [H, W] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 5}, {4, 1}, {2, 3}, {6, 7}}) {
                const grid_stencil g{H, W, connectivity, radius};
                std::set<std::pair<std::size_t, std::size_t>> edges;
                for (std::size_t i = 0; i < H * W; ++i) {
                    keys expected;
                    for (std::size_t j = 0; j < H * W; ++j) {
                        const auto dy = std::size_t(std::abs(std::ptrdiff_t(i / W) - std::ptrdiff_t(j / W)));
                        const auto dx = std::size_t(std::abs(std::ptrdiff_t(i % W) - std::ptrdiff_t(j % W)));
                        if (j != i && (connectivity == 8 ? std::max(dy, dx) : dy + dx) <= radius) expected.push_back(j);
                    }
                    BOOST_TEST(keys_of(g, i, H * W) == expected);
                    for (std::size_t j : expected) edges.insert({std::min(i, j), std::max(i, j)});
                }
                std::size_t forward_edges = 0;
                for (const auto& o : g.forward_offsets()) {
                    BOOST_TEST((o.dy > 0 || (o.dy == 0 && o.dx > 0)));
                    for (std::size_t r = 0; r + std::size_t(o.dy) < H; ++r)
                        for (std::size_t c = 0; c < W; ++c)
                            if (std::ptrdiff_t(c) + o.dx >= 0 && std::ptrdiff_t(c) + o.dx < std::ptrdiff_t(W)) {
                                const std::size_t i = r * W + c, j = (r + std::size_t(o.dy)) * W + std::size_t(std::ptrdiff_t(c) + o.dx);
                                BOOST_TEST(edges.count({i, j}) == 1u);
                                ++forward_edges;
                            }
                }
                BOOST_TEST(forward_edges == edges.size());
            }
    test::check_invalid([] { grid_stencil{3, 3, 8, 0}.check(extents{9, 9}); }, "grid_stencil", "radius = 0");
}

BOOST_AUTO_TEST_CASE(patch_group_by_hand) {
    const patch_group p{4, 6, 2, 3};
    BOOST_TEST(keys_of(p, px(0, 0, 6), 24) == (keys{px(0, 0, 6), px(0, 3, 6), px(2, 0, 6), px(2, 3, 6)}));
    BOOST_TEST(keys_of(p, px(3, 4, 6), 24) == (keys{px(1, 1, 6), px(1, 4, 6), px(3, 1, 6), px(3, 4, 6)}));
    // Its groups: offset (g / 3, g % 3) of the 2 x 2 patches; group 4 is offset (1, 1), the
    // keys of pixel (3, 4) above, in row-major order; every pixel is in the group of its keys.
    BOOST_TEST(p.groups() == 6u);
    BOOST_TEST(p.group_size() == 4u);
    const keys group4{p.member(4, 0), p.member(4, 1), p.member(4, 2), p.member(4, 3)};
    BOOST_TEST(group4 == (keys{px(1, 1, 6), px(1, 4, 6), px(3, 1, 6), px(3, 4, 6)}));
    for (std::size_t g = 0; g < p.groups(); ++g)
        for (std::size_t t = 0; t < p.group_size(); ++t) {
            const keys expected = keys_of(p, p.member(g, t), 24);
            keys group;
            for (std::size_t u = 0; u < p.group_size(); ++u) group.push_back(p.member(g, u));
            BOOST_TEST(group == expected);
        }
}

BOOST_AUTO_TEST_CASE(csr_runs_and_validation) {
    const csr_graph g({0, 4, 4, 6}, {1, 2, 3, 7, 0, 5});
    BOOST_TEST(keys_of(g, 0, extents{3, 8}) == (keys{1, 2, 3, 7}));
    BOOST_TEST(keys_of(g, 1, extents{3, 8}).empty());
    std::vector<key_range> ranges;
    g.for_each_range(0, extents{3, 8}, [&](key_range r) { ranges.push_back(r); });
    BOOST_TEST(ranges.size() == 2u);   // {1, 2, 3} coalesced, then {7}
    BOOST_TEST(ranges[0].count == 3u);

    test::check_invalid([] { csr_graph({1, 2}, {0, 1}); }, "csr_graph", "start at 0");
    test::check_invalid([] { csr_graph({0, 3}, {0, 1}); }, "csr_graph", "columns.size() = 2");
    test::check_invalid([] { csr_graph({0, 2, 1, 2}, {0, 1}); }, "row_offsets decrease at row 1");
    test::check_invalid([] { csr_graph({0, 2}, {1, 0}); }, "row 0", "not strictly increasing");
    test::check_invalid([] { csr_graph({0, 2}, {1, 1}); }, "not strictly increasing");
    test::check_invalid([] { csr_graph({}, {}); }, "row_offsets (0 entries)");
    test::check_invalid([&] { g.check(extents{3, 7}); }, "column 7 is out of range for 7 keys");
    test::check_invalid([&] { g.check(extents{4, 8}); }, "3 rows", "4 queries");
}

BOOST_AUTO_TEST_CASE(parameters_that_do_not_fit) {
    test::check_invalid([] { window1d{1, 0}.check(extents{4, 4}); }, "window1d", "dilation");
    test::check_invalid([] { window1d{1}.check(extents{4, 5}); }, "window1d", "4 queries and 5 keys");
    test::check_invalid([] { window2d{4, 4, 2}.check(extents{16, 16}); }, "window2d", "kernel = 2");
    test::check_invalid([] { window2d{4, 4, 3, 0}.check(extents{16, 16}); }, "dilation = 0");
    test::check_invalid([] { window2d{0, 4, 3}.check(extents{0, 0}); }, "height = 0");
    test::check_invalid([] { window2d{4, 4, 3}.check(extents{15, 16}); }, "4 x 4 grid needs 16", "15 queries");
    test::check_invalid([] { grid_stencil{3, 3, 6}.check(extents{9, 9}); }, "grid_stencil", "connectivity = 6");
    test::check_invalid([] { patch_group{5, 4, 2, 2}.check(extents{20, 20}); }, "patch_group",
                        "2 x 2 patch must divide the 5 x 4 grid");
}

BOOST_AUTO_TEST_SUITE_END()
