// nonlocal-pairwise: the dissimilarity (or similarity) matrix of the rows of a CSV file.
//
//   nonlocal-pairwise data.csv [--metric squared_euclidean|euclidean|cosine|dot] [--columns 4]
//                    [--skip-lines 1] [--output matrix.csv] [--png heat_map.png] [--cell N]
//
// Each line holds one sample; the first `--columns` numeric fields are its
// features (all of them by default). Writes the n x n matrix as CSV, and as a heat map
// with --png. Every option: docs/tools/nonlocal-pairwise.md. Exit status: 0 done, 1 bad input.
#include "image_io.hpp"

#include <nonlocal/pairwise.hpp>
#include <nonlocal/similarity/distance.hpp>
#include <nonlocal/similarity/dot_product.hpp>

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

/// A field as a number: surrounding blanks are allowed, anything else that is not part of the
/// number is an error naming the place ("data.csv: line 3, field 2: 'a' is not a number"),
/// which `where()` gives, called only then.
template <class Where>
double parse_field(const std::string& cell, const Where& where) {
    const std::size_t first = cell.find_first_not_of(" \t\r"), last = cell.find_last_not_of(" \t\r");
    const char* begin = cell.data() + (first == std::string::npos ? cell.size() : first);
    const char* end = cell.data() + (last == std::string::npos ? cell.size() : last + 1);
    double value = 0;
    const auto [stop, error] = std::from_chars(begin, end, value);
    if (error == std::errc::result_out_of_range)
        throw std::runtime_error(where() + ": '" + std::string(begin, end) + "' is beyond double's range");
    if (error != std::errc() || stop != end || begin == end)
        throw std::runtime_error(where() + ": '" + std::string(begin, end) +
                                 "' is not a number (--columns N takes the first N fields of each line)");
    return value;
}

/// The samples of a CSV file: comma-separated numbers, one sample per line, after `skip`
/// header lines; blank lines are skipped. Every line needs `columns` fields (0: as many as the
/// first line has), of which the first `columns` are read.
xt::xtensor<double, 2> read_csv(const std::string& path, std::size_t skip, std::size_t columns) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::string line;
    std::size_t number = 0;
    for (; number < skip && std::getline(in, line); ++number) {}
    std::vector<double> values;
    std::size_t rows = 0, width = columns;
    while (std::getline(in, line)) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        std::stringstream fields(line);
        std::string cell;
        std::size_t count = 0;
        const auto where = [&] { return path + ": line " + std::to_string(number); };
        while ((columns == 0 || count < columns) && std::getline(fields, cell, ',')) {
            values.push_back(parse_field(cell, [&] { return where() + ", field " + std::to_string(count + 1); }));
            ++count;
        }
        if (width == 0) width = count;
        if (count != width)
            throw std::runtime_error(where() + " has " + std::to_string(count) + (count == 1 ? " field" : " fields") +
                                     ", expected " + std::to_string(width));
        ++rows;
    }
    xt::xtensor<double, 2> x = xt::empty<double>({rows, width});
    std::copy(values.begin(), values.end(), x.begin());
    return x;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"The pairwise (dis)similarity matrix of the rows of a CSV file"};
    std::string input, output, metric = "squared_euclidean";
    std::size_t skip = 0, columns = 0;
    app.add_option("input", input, "CSV file, one sample per line")->required();
    app.add_option("--metric", metric, "squared_euclidean, euclidean, cosine or dot")
        ->check(CLI::IsMember({"squared_euclidean", "euclidean", "cosine", "dot"}));
    app.add_option("--columns", columns, "features per line (default: all fields)")->check(nonlocal::tools::at_least(0));
    app.add_option("--skip-lines", skip, "header lines to skip")->check(nonlocal::tools::at_least(0));
    app.add_option("--output,-o", output, "output CSV (default: standard output)");
    std::string png;
    std::size_t cell = 0;
    app.add_option("--png", png, "also write the matrix as a heat map (turbo: smallest blue, largest red), row i at the top")
        ->check(nonlocal::tools::path_ending_in({".png"}));
    app.add_option("--cell", cell, "--png: pixels per matrix entry (default: enough for about 600 pixels)")
        ->check(nonlocal::tools::at_least(1));
    nonlocal::tools::describe_tool(app, "nonlocal-pairwise",
                                   {"points.csv --skip-lines 1",
                                    "iris.csv --skip-lines 1 --columns 4 --metric euclidean -o d.csv --png d.png"},
                                   "0 done, 1 bad input.");
    if (const auto status = nonlocal::tools::parse(app, argc, argv)) return *status;

    try {
        const auto x = read_csv(input, skip, columns);
        xt::xtensor<double, 2> m;
        if (metric == "cosine") m = nonlocal::pairwise(x, x, nonlocal::cosine{});
        else if (metric == "dot") m = nonlocal::pairwise(x, x, nonlocal::dot_product{});
        else m = nonlocal::pairwise(x, x, nonlocal::squared_euclidean{});
        if (metric == "euclidean") m = xt::sqrt(m);

        std::ofstream file;
        if (!output.empty()) file.open(output);
        if (!output.empty() && !file) throw std::runtime_error("cannot write " + output);
        std::ostream& os = output.empty() ? std::cout : file;
        os.precision(10);
        for (std::size_t i = 0; i < m.shape(0); ++i)
            for (std::size_t j = 0; j < m.shape(1); ++j) os << m(i, j) << (j + 1 < m.shape(1) ? ',' : '\n');
        if (!os.flush()) throw std::runtime_error("cannot write " + (output.empty() ? "the output" : output));
        if (!png.empty()) {
            const std::size_t n = m.shape(0), k = cell ? cell : std::max<std::size_t>(1, 600 / std::max<std::size_t>(n, 1));
            xt::xtensor<float, 2> pixels = xt::empty<float>({n * k, n * k});
            for (std::size_t r = 0; r < n * k; ++r)
                for (std::size_t c = 0; c < n * k; ++c) pixels(r, c) = float(m(r / k, c / k));
            const auto all = [](float) { return true; };
            const nonlocal::tools::value_range range = nonlocal::tools::finite_range(pixels, all);
            nonlocal::tools::write_whole(png, [&](const std::string& partial) {
                const xt::xtensor<float, 3> rgb = xt::cast<float>(nonlocal::tools::color_mapped(pixels, range.lo, range.hi, all));
                nonlocal::tools::write_png(partial, rgb, 8);
            });
            std::cerr << "heat map: " << range.lo << " (blue) to " << range.hi << " (red), " << k << " pixels per entry -> " << png
                      << '\n';
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "nonlocal-pairwise: " << e.what() << '\n';
        return 1;
    }
}
