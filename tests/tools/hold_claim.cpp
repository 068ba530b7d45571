// hold_claim OUT COMMAND...: claims OUT as nonlocal-refine does (tools/shard.hpp), runs
// COMMAND while holding the claim, and exits with its status: the tool test of a claim that a
// running process holds.
#include "shard.hpp"

#include <cstdio>
#include <string>
#include <sys/wait.h>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: hold_claim OUT COMMAND...\n");
        return 2;
    }
    const nonlocal::tools::output_claim claim(argv[1]);
    if (!claim.held()) {
        std::fprintf(stderr, "hold_claim: %s is claimed by %s\n", argv[1], claim.owner().c_str());
        return 2;
    }
    std::string command;
    for (int a = 2; a < argc; ++a) command += std::string(a > 2 ? " '" : "'") + argv[a] + "'";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
