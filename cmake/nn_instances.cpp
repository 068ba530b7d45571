// The source that target nonlocal::nn_instances adds to the targets that link it: the layers'
// heavy parts compiled once for the program (nonlocal/nn/instances.hpp).
#include <nonlocal/nn/instances.hpp>
